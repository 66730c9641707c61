"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import CLUSTER, TOPIC, Op
from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.configs import created_topic_configs
from odradek.broker.throttling import MutationCharge
from odradek.broker.topic_creation import DEFAULT, create_topic, or_default
from odradek.metadata.image import MetadataError

STRICT_CREATE_TOPICS, STRICT_DELETE_TOPICS, STRICT_CREATE_PARTITIONS = 6, 5, 3
"""The versions from which controller_mutation_rate refuses requests over it (KIP-599)."""
THROTTLED = {"error_code": ErrorCode.throttling_quota_exceeded,
             "error_message": "The throttling quota has been exceeded."}


async def handle_create_topics(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    quota = MutationCharge(context, STRICT_CREATE_TOPICS)
    results = []
    seen: set[str] = set()
    names = [topic.name for topic in request.topics]
    creatable = (set(names) if context.allowed(Op.CREATE, CLUSTER)
                 else context.allowed_names(Op.CREATE, TOPIC, names))
    for topic in request.topics:
        # a refused topic has an empty (not null) list of configs, as in Kafka
        result: dict[str, Any] = {"name": topic.name, "error_code": ErrorCode.none,
                                  "configs": []}
        if topic.name in seen:
            results.append({**result, "error_code": ErrorCode.invalid_request,
                            "error_message": f"Duplicate topic name {topic.name} in request"})
            continue
        seen.add(topic.name)
        if topic.name not in creatable:
            results.append({**result, "error_code": ErrorCode.topic_authorization_failed,
                            "error_message": "Authorization failed."})
            continue
        assignments = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
        if assignments and (topic.num_partitions != DEFAULT or topic.replication_factor != DEFAULT):
            results.append({**result, "error_code": ErrorCode.invalid_request,
                            "error_message": "Both partition assignments and "
                            "numPartitions/replicationFactor were set"})
            continue
        configs = {c.name: c.value for c in topic.configs}
        partitions = len(assignments) or or_default(broker, topic.num_partitions,
                                                    "num.partitions")
        if not request.validate_only and not quota.accepts(partitions):
            results.append({**result, **THROTTLED})
            continue
        try:
            topic_id = await create_topic(
                broker, context.services.writer, topic.name, topic.num_partitions,
                topic.replication_factor, configs, assignments or None, request.validate_only,
            )
        except MetadataError as error:
            results.append({**result, "error_code": error.error_code,
                            "error_message": error.message})
            continue
        created = _created(broker, topic, topic_id, configs, assignments, partitions)
        if not context.allowed(Op.DESCRIBE_CONFIGS, TOPIC, topic.name):
            created.update(configs=[], topic_config_error_code=ErrorCode.topic_authorization_failed)
        results.append({**result, **created})
    return quota.answer({"topics": results})


def _created(
    broker: Broker, topic: Any, topic_id: str, configs: Mapping[str, str | None],
    assignments: Mapping[int, list[int]], partitions: int,
) -> dict[str, Any]:
    """CreateTopics v5+ echoes the created topic's shape and effective configs."""
    replication = (
        len(next(iter(assignments.values())))
        if assignments
        else or_default(broker, topic.replication_factor, "default.replication.factor")
    )
    effective = broker.topic_config_preview(configs)
    return {
        "topic_id": uuid.UUID(topic_id),
        "num_partitions": partitions,
        "replication_factor": replication,
        "configs": created_topic_configs(broker.config, effective, configs),
    }


async def handle_delete_topics(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    quota = MutationCharge(context, STRICT_DELETE_TOPICS)
    names_by_id = broker.metadata.topic_names_by_id
    if context.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    responses = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            name = names_by_id.get(str(topic_id))
            if name is None:
                responses.append({"name": None, "topic_id": topic_id,
                                  "error_code": ErrorCode.unknown_topic_id})
                continue
        result = {"name": name, "topic_id": topic_id, "error_code": ErrorCode.none}
        refused = ((topic_id is not None and not context.allowed(Op.DESCRIBE, TOPIC, name))
                   or not context.allowed(Op.DELETE, TOPIC, name))
        if refused:
            responses.append({**result, "error_code": ErrorCode.topic_authorization_failed})
            continue
        if not broker.config["delete.topic.enable"]:
            responses.append({**result, "error_code": ErrorCode.topic_deletion_disabled})
            continue
        state = broker.metadata.topics.get(name)
        if state is not None and not quota.accepts(len(state.partitions)):
            responses.append({**result, **THROTTLED})
            continue
        try:
            result["topic_id"] = uuid.UUID(await context.services.writer.delete_topic(name))
        except MetadataError as error:
            result.update(error_code=error.error_code, error_message=error.message)
        responses.append(result)
    return quota.answer({"responses": responses})


async def handle_create_partitions(context: RequestContext, request: Any) -> Result:
    topics = context.broker.metadata.topics
    quota = MutationCharge(context, STRICT_CREATE_PARTITIONS)
    results = []
    for topic in request.topics:
        # a refused topic has an empty (not null) list of configs, as in Kafka
        result: dict[str, Any] = {"name": topic.name, "error_code": ErrorCode.none,
                                  "configs": []}
        if not context.allowed(Op.ALTER, TOPIC, topic.name):
            results.append({**result, "error_code": ErrorCode.topic_authorization_failed,
                            "error_message": "The topic authorization is failed."})
            continue
        assignments = (
            [list(a.broker_ids) for a in topic.assignments]
            if topic.assignments is not None
            else None
        )
        state = topics.get(topic.name)
        added = topic.count - len(state.partitions) if state is not None else 0
        if not request.validate_only and added > 0 and not quota.accepts(added):
            results.append({**result, **THROTTLED})
            continue
        try:
            await context.services.writer.create_partitions(
                topic.name, topic.count, assignments, request.validate_only
            )
        except MetadataError as error:
            result.update(error_code=error.error_code, error_message=error.message)
        results.append(result)
    return quota.answer({"results": results})
