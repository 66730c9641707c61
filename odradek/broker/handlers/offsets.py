"""OffsetCommit, OffsetFetch (one group before v8, many from v8) and OffsetDelete."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import GROUP, TOPIC, Op
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.group_runtime import CoordinatorUnavailable
from odradek.group.coordinator import (
    CommitPartition,
    FetchedOffset,
    GroupCoordinatorShard,
    OffsetCommitRequest,
    TopicPartition,
)
from odradek.group.model import GroupError

MULTI_GROUP_FETCH_VERSION = 8
NO_LEADER_EPOCH = -1


def refuse_offset_commit(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """Every partition of a commit to a group the principal may not READ."""
    return {"topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code} for p in topic.partitions]}
        for topic in request.topics]}


async def handle_offset_commit(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    version = context.version
    partitions: list[CommitPartition] = []
    refused: dict[tuple[str, int], ErrorCode] = {}
    readable = context.allowed_names(Op.READ, TOPIC, (t.name for t in request.topics))
    for topic in request.topics:
        state = broker.metadata.topics.get(topic.name)
        for p in topic.partitions:
            if topic.name not in readable:
                refused[(topic.name, p.partition_index)] = ErrorCode.topic_authorization_failed
            elif state is None or p.partition_index not in state.partitions:
                refused[(topic.name, p.partition_index)] = ErrorCode.unknown_topic_or_partition
                continue
            partitions.append(CommitPartition(
                topic.name, p.partition_index, p.committed_offset,
                getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH), p.committed_metadata,
            ))
    retention = getattr(request, "retention_time", None)
    commit = OffsetCommitRequest(
        request.group_id, request.generation_id_or_member_epoch, request.member_id,
        getattr(request, "group_instance_id", None), tuple(partitions), version,
        -1 if retention is None else int(retention.total_seconds() * 1000),
    )
    groups = context.services.groups
    await groups.ensure_loaded()
    try:
        errors = await groups.run(commit.group_id,
                                  lambda shard, now: shard.commit_offsets(commit, now))
    except CoordinatorUnavailable as error:
        errors = {(p.topic, p.partition): error.error_code for p in partitions}
    errors.update(refused)
    return {"topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": errors.get((topic.name, p.partition_index), ErrorCode.none)}
            for p in topic.partitions]}
        for topic in request.topics
    ]}


async def _fetch_group(context: RequestContext, group_id: str, topics: Any,
                       member_id: str | None, member_epoch: int, require_stable: bool
                       ) -> tuple[ErrorCode, list[dict[str, Any]]]:
    """A group's committed offsets, answered once the ISR has all its shard wrote (see
    `CoordinatorRuntime.read`); with `require_stable` (KIP-447), a partition an open
    transaction has committed an offset for answers UNSTABLE_OFFSET_COMMIT instead. It takes
    DESCRIBE on the group; topics without DESCRIBE are left out, or, when named, answered
    TOPIC_AUTHORIZATION_FAILED."""
    if not context.allowed(Op.DESCRIBE, GROUP, group_id):
        return ErrorCode.group_authorization_failed, []
    wanted: dict[str, list[int]] | None = None
    hidden: list[dict[str, Any]] = []
    if topics is not None:
        wanted = {}
        describable = context.allowed_names(Op.DESCRIBE, TOPIC, (t.name for t in topics))
        for topic in topics:
            if topic.name in describable:
                wanted.setdefault(topic.name, []).extend(topic.partition_indexes)
            else:
                hidden.append({"name": topic.name, "partitions": [
                    {"partition_index": p, "committed_offset": -1,
                     "error_code": ErrorCode.topic_authorization_failed}
                    for p in topic.partition_indexes]})

    def read(shard: GroupCoordinatorShard) -> tuple[list[FetchedOffset], set[TopicPartition]]:
        fetched = shard.fetch_offsets(group_id, wanted, member_id, member_epoch)
        return fetched, {(o.topic, o.partition) for o in fetched if require_stable
                         and shard.has_pending_offsets(group_id, [(o.topic, o.partition)])}

    try:
        fetched, unstable = await context.services.groups.read(group_id, read)
    except (CoordinatorUnavailable, GroupError) as error:
        return error.error_code, []
    by_topic: dict[str, list[FetchedOffset]] = defaultdict(list)
    if topics is None:
        shown = context.allowed_names(Op.DESCRIBE, TOPIC, (o.topic for o in fetched))
        fetched = [o for o in fetched if o.topic in shown]
    for offset in fetched:
        by_topic[offset.topic].append(offset)
    return ErrorCode.none, [
        {"name": name, "partitions": [
            {"partition_index": o.partition, "metadata": o.metadata,
             "committed_offset": -1 if (name, o.partition) in unstable else o.offset,
             "committed_leader_epoch": o.leader_epoch,
             "error_code": ErrorCode.unstable_offset_commit if (name, o.partition) in unstable
             else ErrorCode.none}
            for o in offsets]}
        for name, offsets in by_topic.items()
    ] + hidden


async def handle_offset_fetch(context: RequestContext, request: Any) -> Result:
    await context.services.groups.ensure_loaded()
    if context.version < MULTI_GROUP_FETCH_VERSION:
        code, topics = await _fetch_group(context, request.group_id, request.topics, None, -1,
                                          getattr(request, "require_stable", False))
        return {"error_code": code, "topics": topics}
    groups = []
    for group in request.groups:
        code, topics = await _fetch_group(context, group.group_id, group.topics,
                                          getattr(group, "member_id", None),
                                          getattr(group, "member_epoch", -1),
                                          request.require_stable)
        groups.append({"group_id": group.group_id, "error_code": code, "topics": topics})
    return {"groups": groups}


async def handle_offset_delete(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    await groups.ensure_loaded()
    readable = context.allowed_names(Op.READ, TOPIC, (t.name for t in request.topics))
    known = context.broker.metadata.topics
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions
              if t.name in readable and t.name in known
              and p.partition_index in known[t.name].partitions]
    try:
        code, errors = await groups.run(
            request.group_id, lambda shard, now: shard.delete_offsets(request.group_id, wanted))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "topics": []}
    if code:
        return {"error_code": code, "topics": []}
    return {"error_code": ErrorCode.none, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": _offset_delete_error(t.name, p.partition_index, readable, known,
                                                errors)}
            for p in t.partitions]}
        for t in request.topics
    ]}


def _offset_delete_error(topic: str, partition: int, readable: set[str],
                         known: Mapping[str, Any], errors: Mapping[Any, ErrorCode]) -> ErrorCode:
    """Authorization first, then the partition's existence (Kafka's group coordinator answers
    UNKNOWN_TOPIC_OR_PARTITION for one it does not know), then the coordinator's say."""
    if topic not in readable:
        return ErrorCode.topic_authorization_failed
    if topic not in known or partition not in known[topic].partitions:
        return ErrorCode.unknown_topic_or_partition
    return errors.get((topic, partition), ErrorCode.none)
