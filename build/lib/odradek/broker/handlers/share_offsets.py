"""The share-group offsets admin APIs, as Kafka 4.3's KafkaApis and GroupCoordinatorService
serve them: DescribeShareGroupOffsets (each share-partition's start offset and lag, from
the share coordinator's ReadShareGroupStateSummary), AlterShareGroupOffsets (an empty
group's share-partitions initialized again at new start offsets, at the group's epoch) and
DeleteShareGroupOffsets (a topic's share-partition state deleted, DeleteShareGroupState,
and the group's record of it). The group coordinator's part is group/share_offsets.py; the
share coordinator is reached through the share-partition leaders' persister."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from odradek.broker.access import GROUP, TOPIC, Op
from odradek.broker.coordinator_runtime import CoordinatorUnavailable
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.partition_ends import PartitionEnds
from odradek.broker.share_persister import PersisterError, StateSummary
from odradek.group.classic import Output
from odradek.group.share_offsets import UNKNOWN_PARTITION, ShareOffsetsError

TOPIC_AUTHORIZATION_FAILED = "Topic authorization failed."
INVALID_GROUP_ID = "The group id is invalid."
UNINITIALIZED = -1
KAFKA_MESSAGES = {
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.topic_authorization_failed: TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.unknown_topic_or_partition: UNKNOWN_PARTITION,
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.invalid_group_id: INVALID_GROUP_ID,
}
"""Errors.message() of the errors these APIs answer with."""
T = TypeVar("T")


def kafka_message(code: ErrorCode) -> str:
    return KAFKA_MESSAGES.get(code, code.name.upper())


def refuse_with_message(request: Any, code: ErrorCode) -> dict[str, Any]:
    """Alter/DeleteShareGroupOffsets refused: the top-level error with Kafka's message."""
    return {"error_code": code, "error_message": kafka_message(code), "responses": []}


def has_lag(summary: StateSummary) -> bool:
    """Kafka's shouldComputeSharePartitionLag: the state was read, with its start offset and
    delivery-complete count initialized."""
    return (summary.error == ErrorCode.none and summary.start_offset != UNINITIALIZED
            and summary.delivery_complete_count != UNINITIALIZED)


def lag(end_offset: int | None, summary: StateSummary) -> int:
    """GroupCoordinatorService's share-partition lag: the partition's end offset less the
    start offset and the records delivered beyond it; -1 without one (or no end offset)."""
    if end_offset is None or not has_lag(summary):
        return UNINITIALIZED
    return end_offset - summary.start_offset - summary.delivery_complete_count


def described_partition(index: int, summary: StateSummary, end_offset: int | None
                        ) -> dict[str, Any]:
    """A partition of a DescribeShareGroupOffsets answer: a share coordinator's error reads
    as no state (start offset -1, leader epoch 0), as Kafka treats it."""
    ok = summary.error == ErrorCode.none
    return {"partition_index": index, "start_offset": summary.start_offset if ok else -1,
            "leader_epoch": summary.leader_epoch if ok else 0,
            "lag": lag(end_offset, summary), "error_code": ErrorCode.none,
            "error_message": None}


async def _coordinator(context: RequestContext, group_id: str,
                       handler: Callable[[Any, int], tuple[T, Any]]) -> T:
    groups = context.services.groups
    await groups.ensure_loaded()
    return await groups.run(group_id, handler)


async def _gather(work: Iterable[Awaitable[T]]) -> list[T]:
    return list(await asyncio.gather(*work))


# DescribeShareGroupOffsets


async def handle_describe_share_group_offsets(context: RequestContext, request: Any) -> Result:
    ends = PartitionEnds(context.services.broker, context.services.replicas)
    try:
        return {"groups": await _gather(_describe_group(context, ends, g)
                                        for g in request.groups)}
    finally:
        ends.close()


async def _describe_group(context: RequestContext, ends: PartitionEnds,
                          group: Any) -> dict[str, Any]:
    group_id = group.group_id
    refused = {"group_id": group_id, "topics": []}
    if not context.allowed(Op.DESCRIBE, GROUP, group_id):
        return {**refused, "error_code": ErrorCode.group_authorization_failed}
    topics = context.services.groups.topics
    wanted: list[tuple[str, str, list[int]]] = []
    answered: list[dict[str, Any]] = []
    if group.topics is None:
        try:
            initialized = await _coordinator(context, group_id, lambda shard, now: (
                shard.share_initialized_partitions(group_id), Output()))
        except CoordinatorUnavailable as error:
            return {**refused, "error_code": error.error_code,
                    "error_message": kafka_message(error.error_code)}
        for topic_id, partitions in initialized.items():
            info = topics.by_id(topic_id)
            if info is not None and context.allowed(Op.DESCRIBE, TOPIC, info.name):
                wanted.append((info.name, topic_id, sorted(partitions)))
    else:
        for topic in group.topics:
            info = topics.by_name(topic.topic_name)
            if not context.allowed(Op.DESCRIBE, TOPIC, topic.topic_name):
                answered.append(_unauthorized_topic(topic.topic_name, topic.partitions))
            elif info is None:
                answered.append({"topic_name": topic.topic_name, "partitions": [
                    {"partition_index": p, "start_offset": -1, "leader_epoch": 0}
                    for p in topic.partitions]})
            else:
                wanted.append((topic.topic_name, info.topic_id, list(topic.partitions)))
    described = await _gather(_describe_topic(context, ends, group_id, *w) for w in wanted)
    return {"group_id": group_id, "topics": described + answered,
            "error_code": ErrorCode.none}


def _unauthorized_topic(name: str, partitions: Iterable[int]) -> dict[str, Any]:
    return {"topic_name": name, "partitions": [
        {"partition_index": p, "start_offset": -1, "lag": -1,
         "error_code": ErrorCode.topic_authorization_failed,
         "error_message": TOPIC_AUTHORIZATION_FAILED} for p in partitions]}


async def _describe_topic(context: RequestContext, ends: PartitionEnds, group_id: str,
                          name: str, topic_id: str, partitions: list[int]) -> dict[str, Any]:
    persister = context.services.share_partitions.persister

    async def one(index: int) -> dict[str, Any]:
        try:
            summary = await persister.read_summary(group_id, topic_id, index)
        except PersisterError as error:
            summary = StateSummary(error.code, str(error), 0, 0, -1, -1)
        if not has_lag(summary):  # no end offset needed
            return described_partition(index, summary, None)
        code, end = await ends.end_offset(name, index)
        if code != ErrorCode.none:  # Kafka answers the partition with the error alone
            return {"partition_index": index, "error_code": code,
                    "error_message": kafka_message(code)}
        return described_partition(index, summary, end)

    return {"topic_name": name, "topic_id": uuid.UUID(topic_id),
            "partitions": await _gather(one(p) for p in partitions)}


# AlterShareGroupOffsets


async def handle_alter_share_group_offsets(context: RequestContext, request: Any) -> Result:
    group_id = request.group_id
    topics = context.services.groups.topics
    refused: list[dict[str, Any]] = []
    requested: list[tuple[str, list[tuple[int, int]]]] = []
    for topic in request.topics:
        code = (ErrorCode.topic_authorization_failed
                if not context.allowed(Op.READ, TOPIC, topic.topic_name)
                else ErrorCode.unknown_topic_or_partition
                if topics.by_name(topic.topic_name) is None else None)
        if code is None:
            requested.append((topic.topic_name, [(p.partition_index, p.start_offset)
                                                 for p in topic.partitions]))
            continue
        info = topics.by_name(topic.topic_name)
        refused.append({"topic_name": topic.topic_name,
                        "topic_id": uuid.UUID(info.topic_id) if info else uuid.UUID(int=0),
                        "partitions": [{"partition_index": p.partition_index,
                                        "error_code": code, "error_message": kafka_message(code)}
                                       for p in topic.partitions]})
    if not group_id:
        return refuse_with_message(request, ErrorCode.invalid_group_id)
    try:
        plan = await _coordinator(context, group_id, lambda shard, now: (
            shard.alter_share_group_offsets(group_id, requested)))
    except ShareOffsetsError as error:
        return {"error_code": error.code, "error_message": error.message, "responses": []}
    except CoordinatorUnavailable as error:
        return refuse_with_message(request, error.error_code)
    persister = context.services.share_partitions.persister

    async def initialize(topic_id: str, index: int, offset: int) -> PersisterError | None:
        try:
            await persister.initialize(group_id, topic_id, index, plan.state_epoch, offset)
        except PersisterError as error:
            return error
        return None

    work = [(t, i, o) for t, offsets in plan.initialize.items() for i, o in offsets.items()]
    failures = {(t, i): e for (t, i, _), e in zip(
        work, await _gather(initialize(*w) for w in work), strict=True) if e is not None}
    done: dict[str, tuple[str, list[int]]] = {}
    for topic_id, index, _ in work:
        if (topic_id, index) not in failures:
            done.setdefault(topic_id, (plan.names[topic_id], []))[1].append(index)
    if done:
        await _coordinator(context, group_id, lambda shard, now: (
            shard.share_offsets_initialized(group_id, done)))
    context.services.share_partitions.forget_group(group_id)
    return {"error_code": ErrorCode.none, "responses": refused + [
        _alter_topic(t, failures) for t in plan.topics]}


def _alter_topic(topic: dict[str, Any], failures: dict[tuple[str, int], PersisterError]
                 ) -> dict[str, Any]:
    topic_id = topic["topic_id"]
    partitions = []
    for p in topic["partitions"]:
        failed = failures.get((topic_id, p["partition_index"]))
        partitions.append(p if failed is None else {
            "partition_index": p["partition_index"], "error_code": failed.code,
            "error_message": str(failed)})
    return {"topic_name": topic["topic_name"],
            "topic_id": uuid.UUID(int=0) if topic_id is None else uuid.UUID(topic_id),
            "partitions": partitions}


# DeleteShareGroupOffsets


async def handle_delete_share_group_offsets(context: RequestContext, request: Any) -> Result:
    group_id = request.group_id
    allowed = context.allowed_names(Op.READ, TOPIC, (t.topic_name for t in request.topics))
    responses = [{"topic_name": t.topic_name, "error_code": ErrorCode.topic_authorization_failed,
                  "error_message": TOPIC_AUTHORIZATION_FAILED}
                 for t in request.topics if t.topic_name not in allowed]
    names = [t.topic_name for t in request.topics if t.topic_name in allowed]
    if not group_id:
        return refuse_with_message(request, ErrorCode.invalid_group_id)
    try:
        plan = await _coordinator(context, group_id, lambda shard, now: (
            shard.initiate_delete_share_group_offsets(group_id, names)))
    except ShareOffsetsError as error:
        return {"error_code": error.code, "error_message": error.message, "responses": []}
    except CoordinatorUnavailable as error:
        return refuse_with_message(request, error.error_code)
    responses += plan.errors
    outcomes = await _delete_state(context, group_id, plan.delete)
    deleted = [t for t, code in outcomes.items() if code == ErrorCode.none]
    if deleted:
        await _coordinator(context, group_id, lambda shard, now: (
            shard.complete_delete_share_group_offsets(group_id, deleted)))
    context.services.share_partitions.forget_group(group_id)
    responses += [{"topic_name": plan.names[t], "topic_id": uuid.UUID(t), "error_code": code,
                   "error_message": None if code == ErrorCode.none else kafka_message(code)}
                  for t, code in outcomes.items()]
    return {"error_code": ErrorCode.none, "responses": responses}


async def _delete_state(context: RequestContext, group_id: str,
                        partitions: dict[str, list[int]]) -> dict[str, ErrorCode]:
    """DeleteShareGroupState of the group's share-partitions (topic id -> partitions) at
    their share coordinators: per topic, the first error of its partitions."""
    persister = context.services.share_partitions.persister

    async def one(topic_id: str, index: int) -> ErrorCode:
        try:
            await persister.delete(group_id, topic_id, index)
        except PersisterError as error:
            return error.code
        return ErrorCode.none

    async def topic(topic_id: str, indexes: list[int]) -> ErrorCode:
        codes = await _gather(one(topic_id, p) for p in indexes)
        return next((c for c in codes if c != ErrorCode.none), ErrorCode.none)

    return dict(zip(partitions, await _gather(topic(t, p) for t, p in partitions.items()),
                    strict=True))


# DeleteGroups of a share group


async def delete_share_group_state(context: RequestContext, group_id: str) -> ErrorCode:
    """DeleteGroups' share step, as Kafka's GroupCoordinatorService.deleteShareGroups: an
    empty share group's share-partition state is deleted at the share coordinators before
    its records are; the first error of a deletion is the group's answer, and the group is
    then kept (its partitions stay recorded as deleting, for a retry). NONE for a group that
    is no share group: its deletion goes on as any group's."""
    found = await context.services.groups.run(group_id, lambda shard, now: (
        shard.share_group_delete_plan(group_id)))
    if found is None:
        return ErrorCode.none
    code, plan = found
    if code != ErrorCode.none:
        return code
    outcomes = await _delete_state(context, group_id, plan.delete)
    context.services.share_partitions.forget_group(group_id)
    return next((c for c in outcomes.values() if c != ErrorCode.none), ErrorCode.none)
