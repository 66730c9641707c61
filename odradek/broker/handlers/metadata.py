"""Metadata, with auto-creation of topics (auto.create.topics.enable)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.topic_description import describe_topic, missing_topic_error
from odradek.broker.topic_creation import create_topic
from odradek.metadata.image import INTERNAL_TOPICS, MetadataError, TopicState, validate_topic_name

log = logging.getLogger("odradek.broker.metadata")
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
NULLABLE_NAME_VERSION = 12
LISTENER_NOT_FOUND_VERSION = 6
"""From v6 a leader without an endpoint on the request's listener is LISTENER_NOT_FOUND (before,
LEADER_NOT_AVAILABLE), as in Kafka."""
"""Internal topics their coordinators create; Metadata never auto-creates them."""


def handle_metadata(context: RequestContext, request: Any) -> Result | Awaitable[Result]:
    broker = context.broker
    topics = request.topics
    if topics is None or (context.version == 0 and not topics):
        return _response(context, [_describe(context, s)
                                   for s in broker.metadata.topics.values()])
    allow_auto = getattr(request, "allow_auto_topic_creation", True) and bool(
        broker.config["auto.create.topics.enable"]
    )
    missing = [
        t.name for t in topics
        if t.name is not None and t.name not in broker.metadata.topics
    ]
    if allow_auto and missing:
        return _auto_create_then_describe(context, request, missing)
    return _response(context, [_lookup(context, t) for t in topics])


async def _auto_create_then_describe(context: RequestContext, request: Any, names: list[str]
                                     ) -> Result:
    broker, writer = context.broker, context.services.writer
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
    return _response(context, [_lookup(context, t) for t in request.topics])


def _lookup(context: RequestContext, topic: Any) -> dict[str, Any]:
    broker, version = context.broker, context.version
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
        return _describe(context, state)
    return {"error_code": missing_topic_error(name), "name": name, "partitions": []}


def _describe(context: RequestContext, state: TopicState) -> dict[str, Any]:
    unreachable = (ErrorCode.listener_not_found if context.version >= LISTENER_NOT_FOUND_VERSION
                   else ErrorCode.leader_not_available)
    return describe_topic(context.broker, state, sorted(state.partitions),
                          AUTHORIZED_OPERATIONS_OMITTED, context.listener, unreachable)


def _response(context: RequestContext, topics: list[dict[str, Any]]) -> Result:
    """As a KRaft broker: clients cannot reach the controllers, so the controller id is a
    live broker (this one), which forwards what a client sends its "controller". Brokers
    are listed at their endpoints on the request's listener."""
    broker = context.broker
    return {
        "brokers": broker.brokers(context.listener),
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
