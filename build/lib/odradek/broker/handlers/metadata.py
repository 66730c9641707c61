"""Metadata, with auto-creation of topics (auto.create.topics.enable)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import CLUSTER, TOPIC, Op
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.topic_description import describe_topic, missing_topic_error
from odradek.broker.topic_creation import create_topic
from odradek.metadata.image import INTERNAL_TOPICS, MetadataError, TopicState, validate_topic_name
from odradek.security.acls import CLUSTER_NAME

log = logging.getLogger("odradek.broker.metadata")
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
ZERO_UUID = uuid.UUID(int=0)
NULLABLE_NAME_VERSION = 12
LISTENER_NOT_FOUND_VERSION = 6
"""From v6 a leader without an endpoint on the request's listener is LISTENER_NOT_FOUND (before,
LEADER_NOT_AVAILABLE), as in Kafka."""
"""Internal topics their coordinators create; Metadata never auto-creates them."""


def handle_metadata(context: RequestContext, request: Any) -> Result | Awaitable[Result]:
    """Topics the principal may not DESCRIBE are left out of an all-topics answer and
    answered TOPIC_AUTHORIZATION_FAILED when named, as if unknown; auto-creation needs
    CREATE on the cluster or the topic."""
    broker = context.broker
    topics = request.topics
    if topics is None or (context.version == 0 and not topics):
        states = broker.metadata.topics.values()
        describable = context.allowed_names(Op.DESCRIBE, TOPIC, (s.name for s in states))
        return _response(context, request, [_describe(context, request, s) for s in states
                                            if s.name in describable])
    allow_auto = getattr(request, "allow_auto_topic_creation", True) and bool(
        broker.config["auto.create.topics.enable"]
    )
    named = [t.name for t in topics if t.name is not None and not _by_id(t)]
    describable = context.allowed_names(Op.DESCRIBE, TOPIC, named)
    missing = [name for name in named
               if name in describable and name not in broker.metadata.topics]
    if allow_auto and missing:
        creatable = (set(missing) if context.allowed(Op.CREATE, CLUSTER)
                     else context.allowed_names(Op.CREATE, TOPIC, missing))
        if creatable:
            return _auto_create_then_describe(context, request, describable,
                                              [n for n in missing if n in creatable])
        describable -= set(missing)
    return _response(context, request, [_lookup(context, request, t, describable)
                                        for t in topics])


async def _auto_create_then_describe(context: RequestContext, request: Any,
                                     describable: set[str], names: list[str]) -> Result:
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
    refused = {t.name for t in request.topics if t.name is not None and not _by_id(t)
               and t.name not in broker.metadata.topics and t.name not in names}
    return _response(context, request, [_lookup(context, request, t, describable - refused)
                                        for t in request.topics])


def _by_id(topic: Any) -> bool:
    """A topic asked for by its id (v10+): as in Kafka, a non-zero id wins over the name, which
    Kafka's Java consumer leaves empty ("") when it asks by id (a broker-side regex)."""
    topic_id = getattr(topic, "topic_id", None)
    return topic_id is not None and topic_id != ZERO_UUID


def _lookup(context: RequestContext, request: Any, topic: Any,
            describable: set[str]) -> dict[str, Any]:
    broker, version = context.broker, context.version
    name = topic.name
    if name is None or _by_id(topic):
        topic_id = getattr(topic, "topic_id", None)
        name = broker.metadata.topic_names_by_id.get(str(topic_id))
        if name is None:
            # the name is nullable only from v12 on
            return {"error_code": ErrorCode.unknown_topic_id,
                    "name": None if version >= NULLABLE_NAME_VERSION else "",
                    "topic_id": topic_id, "partitions": []}
        if context.allowed(Op.DESCRIBE, TOPIC, name):
            describable = {*describable, name}
    if name not in describable:
        # Kafka does not disclose whether a topic it refuses to describe exists
        return {"error_code": ErrorCode.topic_authorization_failed, "name": topic.name,
                "topic_id": ZERO_UUID, "partitions": []}
    state = broker.metadata.topics.get(name)
    if state is not None:
        return _describe(context, request, state)
    # Kafka reports the operations of a topic it does not have too
    return {"error_code": missing_topic_error(name), "name": name, "partitions": [],
            "topic_authorized_operations": _topic_operations(context, request, name)}


def _topic_operations(context: RequestContext, request: Any, name: str) -> int:
    return (context.authorized_operations(TOPIC, name)
            if getattr(request, "include_topic_authorized_operations", False)
            else AUTHORIZED_OPERATIONS_OMITTED)


def _describe(context: RequestContext, request: Any, state: TopicState) -> dict[str, Any]:
    unreachable = (ErrorCode.listener_not_found if context.version >= LISTENER_NOT_FOUND_VERSION
                   else ErrorCode.leader_not_available)
    return describe_topic(context.broker, state, sorted(state.partitions),
                          _topic_operations(context, request, state.name), context.listener,
                          unreachable)


def cluster_operations(context: RequestContext) -> int:
    """The cluster's authorized operations as Metadata and DescribeCluster report them: none
    (0) without DESCRIBE on the cluster."""
    operations = context.authorized_operations(CLUSTER, CLUSTER_NAME)
    return operations if operations & (1 << Op.DESCRIBE) else 0


def _response(context: RequestContext, request: Any, topics: list[dict[str, Any]]) -> Result:
    """As a KRaft broker: clients cannot reach the controllers, so the controller id is a
    live broker (this one), which forwards what a client sends its "controller". Brokers
    are listed at their endpoints on the request's listener."""
    broker = context.broker
    return {
        "brokers": broker.brokers(context.listener),
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations(context)
        if getattr(request, "include_cluster_authorized_operations", False)
        else AUTHORIZED_OPERATIONS_OMITTED,
    }
