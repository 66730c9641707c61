"""Metadata, with auto-creation of topics (auto.create.topics.enable)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.topic_description import describe_topic, missing_topic_error
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.topic_creation import create_topic
from odradek.metadata.image import INTERNAL_TOPICS, MetadataError, TopicState, validate_topic_name

log = logging.getLogger("odradek.broker.metadata")
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
NULLABLE_NAME_VERSION = 12
"""Internal topics their coordinators create; Metadata never auto-creates them."""


def handle_metadata(context: RequestContext, request: Any) -> Result | Awaitable[Result]:
    broker = context.broker
    topics = request.topics
    if topics is None or (context.version == 0 and not topics):
        return _response(broker, [_describe(broker, s) for s in broker.metadata.topics.values()])
    allow_auto = getattr(request, "allow_auto_topic_creation", True) and bool(
        broker.config["auto.create.topics.enable"]
    )
    missing = [
        t.name for t in topics
        if t.name is not None and t.name not in broker.metadata.topics
    ]
    if allow_auto and missing:
        return _auto_create_then_describe(broker, context.services.writer, request, missing,
                                          context.version)
    return _response(broker, [_lookup(broker, t, context.version) for t in topics])


async def _auto_create_then_describe(
    broker: Broker, writer: MetadataWriter, request: Any, names: list[str], version: int
) -> Result:
    for name in dict.fromkeys(names):
        if name in INTERNAL_TOPICS:
            continue
        try:
            validate_topic_name(name)
        except MetadataError:
            continue
        num_partitions = broker.config.integer("num.partitions")
        replication_factor = broker.config.integer("default.replication.factor")
        try:
            await create_topic(broker, writer, name, num_partitions, replication_factor, {})
            log.info("auto-created topic %s with %d partition(s)", name, num_partitions)
        except MetadataError as error:
            if error.error_code != ErrorCode.topic_already_exists:
                log.warning("auto-creation of %s failed: %s", name, error.message)
    return _response(broker, [_lookup(broker, t, version) for t in request.topics])


def _lookup(broker: Broker, topic: Any, version: int) -> dict[str, Any]:
    name = topic.name
    if name is None:
        topic_id = getattr(topic, "topic_id", None)
        name = broker.metadata.topic_names_by_id.get(str(topic_id))
        if name is None:
            # the name is nullable only from v12 on
            return {"error_code": ErrorCode.unknown_topic_id,
                    "name": None if version >= NULLABLE_NAME_VERSION else "",
                    "topic_id": topic_id, "partitions": []}
    state = broker.metadata.topics.get(name)
    if state is not None:
        return _describe(broker, state)
    return {"error_code": missing_topic_error(name), "name": name, "partitions": []}


def _describe(broker: Broker, state: TopicState) -> dict[str, Any]:
    return describe_topic(broker, state, sorted(state.partitions), AUTHORIZED_OPERATIONS_OMITTED)


def _response(broker: Broker, topics: list[dict[str, Any]]) -> Result:
    """As a KRaft broker: clients cannot reach the controllers, so the controller id is a
    live broker (this one), which forwards what a client sends its "controller"."""
    return {
        "brokers": broker.brokers(),
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
