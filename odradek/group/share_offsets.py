"""The group coordinator's part of the share-group offsets admin APIs, without IO, after
Kafka 4.3's GroupMetadataManager (alterShareGroupOffsets, sharePartitionsEligibleForOffset
Deletion, completeDeleteShareGroupOffsets): which share-partitions the request may touch,
and the ShareGroupStatePartitionMetadata records that keep the group's view of them.

The share-partitions' state itself lives with the share coordinator: the broker's handler
(broker/handlers/share_offsets.py) initializes it there at the new start offsets
(AlterShareGroupOffsets) or deletes it (DeleteShareGroupOffsets) between the steps here.
Odradek records altered partitions as initialized once the share coordinator has their new
state (Kafka records them as initializing first)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group.model import TopicsView
from odradek.group.records import (
    Record,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareTopicInfo,
)
from odradek.group.share_group import (
    EMPTY_STATE_PARTITIONS,
    ShareGroup,
    TopicPartitionSet,
    with_partitions,
    without_partitions,
)

NON_EMPTY = "The group is not empty."
UNKNOWN_PARTITION = "This server does not host this topic-partition."
NOTHING_TO_DELETE = "There is no offset information to delete."


class ShareOffsetsError(Exception):
    """A request-level refusal (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def share_group(group: object, group_id: str, create: bool) -> ShareGroup:
    """The share group `group_id` (found as `group`), empty, or a new one when `create`;
    Kafka's getOrMaybeCreateShareGroup/shareGroup then throwIfShareGroupIsNotEmpty."""
    if group is None and create:
        return ShareGroup(group_id)
    if group is None:
        raise ShareOffsetsError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    if not isinstance(group, ShareGroup):
        raise ShareOffsetsError(ErrorCode.group_id_not_found,
                                f"Group {group_id} is not a share group.")
    if not group.is_empty():
        raise ShareOffsetsError(ErrorCode.non_empty_group, NON_EMPTY)
    return group


@dataclass(slots=True)
class AlterPlan:
    """What an AlterShareGroupOffsets may do: the response's topics as the coordinator
    answers them, and the start offsets to initialize (topic id -> partition -> offset) at
    `state_epoch` (the group's epoch, as Kafka's)."""

    topics: list[dict[str, Any]] = field(default_factory=list)
    initialize: dict[str, dict[int, int]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    """Topic id -> name of the topics to initialize."""
    state_epoch: int = 0


def plan_alter(group: ShareGroup, topics: TopicsView,
               requested: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> AlterPlan:
    """Per topic and partition: UNKNOWN_TOPIC_OR_PARTITION where the metadata image has no
    such topic or partition, else the partition's new start offset."""
    plan = AlterPlan(state_epoch=group.group_epoch)
    for name, partitions in requested:
        info = topics.by_name(name)
        answers: list[dict[str, Any]] = []
        for index, offset in partitions:
            if info is not None and 0 <= index < info.partitions:
                answers.append({"partition_index": index, "error_code": ErrorCode.none,
                                "error_message": None})
                plan.initialize.setdefault(info.topic_id, {})[index] = offset
                plan.names[info.topic_id] = name
            else:
                answers.append({"partition_index": index,
                                "error_code": ErrorCode.unknown_topic_or_partition,
                                "error_message": UNKNOWN_PARTITION})
        plan.topics.append({"topic_name": name,
                            "topic_id": None if info is None else info.topic_id,
                            "partitions": answers})
    return plan


def initialized_records(group: ShareGroup, initialized: TopicPartitionSet,
                        failed: Iterable[tuple[str, int]] = ()) -> list[Record]:
    """The group's state-partition record once the share coordinator answered: the
    `initialized` partitions move from initializing (if there) to initialized and their
    topics off the deleting ones; the `failed` ones (topic id, partition) leave initializing,
    so that a later heartbeat asks again."""
    done = {(t, p) for t, (_, partitions) in initialized.items() for p in partitions}
    settled = done | set(failed)
    if not settled:
        return []
    current = group.state_partitions
    value = ShareGroupStatePartitionMetadataValue(
        without_partitions(current.initializing_topics, settled),
        with_partitions(current.initialized_topics, initialized),
        tuple(t for t in current.deleting_topics if t.topic_id not in {t for t, _ in done}))
    return [(ShareGroupStatePartitionMetadataKey(group.group_id), value)]


@dataclass(slots=True)
class DeletePlan:
    """What a DeleteShareGroupOffsets may do: the share-partitions whose state to delete
    (topic id -> partitions), the topics refused, and the record moving the deleted topics
    from initialized to deleting."""

    delete: dict[str, list[int]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)


def plan_delete(group: ShareGroup, topics: TopicsView, names: Iterable[str]) -> DeletePlan:
    """Kafka's sharePartitionsEligibleForOffsetDeletion: a topic's initialized partitions,
    or all its partitions if an earlier deletion left it deleting; a topic the group has no
    state of is refused. A group that never had share-partition state answers none."""
    plan = DeletePlan()
    current = group.state_partitions
    if current is EMPTY_STATE_PARTITIONS:
        return plan
    initialized = {t.topic_id: t for t in current.initialized_topics}
    deleting = {t.topic_id: t for t in current.deleting_topics}
    for name in names:
        info = topics.by_name(name)
        if info is None:
            plan.errors.append(_topic_error(name, ErrorCode.unknown_topic_or_partition,
                                            UNKNOWN_PARTITION))
        elif info.topic_id in initialized:
            plan.delete[info.topic_id] = list(initialized.pop(info.topic_id).partitions)
            plan.names[info.topic_id] = name
            deleting[info.topic_id] = ShareTopicInfo(info.topic_id, name)
        elif info.topic_id in deleting:
            plan.delete[info.topic_id] = list(range(info.partitions))
            plan.names[info.topic_id] = name
        else:
            plan.errors.append(_topic_error(name, ErrorCode.unknown_topic_or_partition,
                                            NOTHING_TO_DELETE))
    plan.records.append((ShareGroupStatePartitionMetadataKey(group.group_id),
                         ShareGroupStatePartitionMetadataValue(
                             current.initializing_topics, tuple(initialized.values()),
                             tuple(deleting.values()))))
    return plan


def plan_group_delete(group: ShareGroup, topics: TopicsView) -> DeletePlan:
    """Kafka's shareGroupBuildPartitionDeleteRequest, for DeleteGroups: every initializing
    and initialized partition, and every partition of a topic an earlier deletion left
    deleting (one no longer in the metadata image is dropped), to delete at the share
    coordinator; the record moving all of them to deleting. A group that never had
    share-partition state has none to delete."""
    plan = DeletePlan()
    current = group.state_partitions
    if current is EMPTY_STATE_PARTITIONS:
        return plan
    candidates: dict[str, set[int]] = {}
    for t in (*current.initializing_topics, *current.initialized_topics):
        candidates.setdefault(t.topic_id, set()).update(t.partitions)
        plan.names[t.topic_id] = t.topic_name
    plan.delete = {topic_id: sorted(p) for topic_id, p in candidates.items()}
    for deleting in current.deleting_topics:
        info = topics.by_id(deleting.topic_id)
        if info is not None:
            plan.delete[info.topic_id] = list(range(info.partitions))
            plan.names[info.topic_id] = info.name
    plan.records.append((ShareGroupStatePartitionMetadataKey(group.group_id),
                         ShareGroupStatePartitionMetadataValue((), (), tuple(
                             ShareTopicInfo(t, plan.names[t]) for t in plan.delete))))
    return plan


def deleted_records(group: ShareGroup, topic_ids: Iterable[str]) -> list[Record]:
    """Kafka's completeDeleteShareGroupOffsets: the deleted topics off the deleting ones."""
    done = set(topic_ids)
    current = group.state_partitions
    return [(ShareGroupStatePartitionMetadataKey(group.group_id),
             ShareGroupStatePartitionMetadataValue(
                 current.initializing_topics, current.initialized_topics,
                 tuple(t for t in current.deleting_topics if t.topic_id not in done)))]


def _topic_error(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": None, "error_code": code, "error_message": message}
