"""The pure parts of the share-group offsets admin APIs: the group coordinator's plans
(group/share_offsets.py, after Kafka's GroupMetadataManager) and the lag and partition
answers of DescribeShareGroupOffsets (broker/handlers/share_offsets.py)."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from odradek.broker.handlers.share_offsets import described_partition, lag
from odradek.broker.share_persister import StateSummary
from odradek.group.classic import ClassicGroup
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupConfig, StaticTopics, TopicInfo
from odradek.group.records import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareTopicInfo,
    TopicPartitionsInfo,
)
from odradek.group.share_group import ShareGroup, ShareMember
from odradek.group.share_handlers import ShareHeartbeatRequest
from odradek.group.share_offsets import (
    NOTHING_TO_DELETE,
    ShareOffsetsError,
    deleted_records,
    initialized_records,
    plan_alter,
    plan_delete,
    plan_group_delete,
    share_group,
)

ORDERS, PAYMENTS = "id-orders", "id-payments"
TOPICS = StaticTopics({"orders": TopicInfo(ORDERS, "orders", 2),
                       "payments": TopicInfo(PAYMENTS, "payments", 1)})


def group_with(initialized: dict[str, tuple[str, tuple[int, ...]]],
               deleting: tuple[tuple[str, str], ...] = (), epoch: int = 0) -> ShareGroup:
    group = ShareGroup("g")
    group.group_epoch = epoch
    group.replay(ShareGroupStatePartitionMetadataKey("g"), ShareGroupStatePartitionMetadataValue(
        (), tuple(TopicPartitionsInfo(t, n, p) for t, (n, p) in initialized.items()),
        tuple(ShareTopicInfo(t, n) for t, n in deleting)))
    return group


def test_only_an_empty_share_group_or_a_new_one() -> None:
    assert share_group(None, "g", create=True).group_id == "g"
    with pytest.raises(ShareOffsetsError) as missing:
        share_group(None, "g", create=False)
    assert (missing.value.code, missing.value.message) == (ErrorCode.group_id_not_found,
                                                           "Group g not found.")
    with pytest.raises(ShareOffsetsError) as classic:
        share_group(ClassicGroup("g"), "g", create=True)
    assert classic.value.message == "Group g is not a share group."
    busy = ShareGroup("g")
    busy.members["m"] = ShareMember("m")
    with pytest.raises(ShareOffsetsError) as refused:
        share_group(busy, "g", create=True)
    assert (refused.value.code, refused.value.message) == (ErrorCode.non_empty_group,
                                                           "The group is not empty.")


def test_alter_initializes_known_partitions_at_the_group_epoch() -> None:
    plan = plan_alter(group_with({}, epoch=7), TOPICS,
                      [("orders", [(0, 5), (2, 1)]), ("missing", [(0, 0)])])
    assert plan.state_epoch == 7
    assert plan.initialize == {ORDERS: {0: 5}}
    assert [(t["topic_name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
            for t in plan.topics] == [
        ("orders", [(0, ErrorCode.none), (2, ErrorCode.unknown_topic_or_partition)]),
        ("missing", [(0, ErrorCode.unknown_topic_or_partition)])]


def test_initialized_partitions_are_merged_and_leave_deleting() -> None:
    group = group_with({ORDERS: ("orders", (1,))}, deleting=((PAYMENTS, "payments"),))
    ((key, value),) = initialized_records(group, {ORDERS: ("orders", [0]),
                                                  PAYMENTS: ("payments", [0])})
    assert key == ShareGroupStatePartitionMetadataKey("g")
    assert isinstance(value, ShareGroupStatePartitionMetadataValue)
    assert value.initialized_topics == (TopicPartitionsInfo(ORDERS, "orders", (0, 1)),
                                        TopicPartitionsInfo(PAYMENTS, "payments", (0,)))
    assert value.deleting_topics == ()
    assert initialized_records(group, {}) == []


def test_delete_moves_initialized_topics_to_deleting() -> None:
    group = group_with({ORDERS: ("orders", (0, 1))}, deleting=((PAYMENTS, "payments"),))
    plan = plan_delete(group, TOPICS, ["orders", "payments", "missing"])
    # Initialized partitions, and every partition of a topic left deleting before.
    assert plan.delete == {ORDERS: [0, 1], PAYMENTS: [0]}
    assert [(e["topic_name"], e["error_code"]) for e in plan.errors] == [
        ("missing", ErrorCode.unknown_topic_or_partition)]
    ((_, value),) = plan.records
    assert isinstance(value, ShareGroupStatePartitionMetadataValue)
    assert value.initialized_topics == ()
    assert set(value.deleting_topics) == {ShareTopicInfo(ORDERS, "orders"),
                                          ShareTopicInfo(PAYMENTS, "payments")}
    group.replay(*plan.records[0])
    ((_, done),) = deleted_records(group, [ORDERS])
    assert isinstance(done, ShareGroupStatePartitionMetadataValue)
    assert done.deleting_topics == (ShareTopicInfo(PAYMENTS, "payments"),)


def test_delete_of_a_topic_without_state() -> None:
    plan = plan_delete(group_with({ORDERS: ("orders", (0,))}), TOPICS, ["payments"])
    assert plan.delete == {}
    assert [(e["error_code"], e["error_message"]) for e in plan.errors] == [
        (ErrorCode.unknown_topic_or_partition, NOTHING_TO_DELETE)]
    # A group that never had share-partition state answers nothing, as Kafka's.
    untouched = plan_delete(ShareGroup("g"), TOPICS, ["orders"])
    assert (untouched.delete, untouched.errors, untouched.records) == ({}, [], [])


def test_a_group_delete_deletes_every_partition_with_state() -> None:
    """Kafka's shareGroupBuildPartitionDeleteRequest: initializing and initialized
    partitions, every partition of a topic left deleting, a deleting topic gone from the
    metadata image dropped; all recorded as deleting."""
    group = ShareGroup("g")
    group.replay(ShareGroupStatePartitionMetadataKey("g"), ShareGroupStatePartitionMetadataValue(
        (TopicPartitionsInfo(ORDERS, "orders", (1,)),),
        (TopicPartitionsInfo(ORDERS, "orders", (0,)),),
        (ShareTopicInfo(PAYMENTS, "payments"), ShareTopicInfo("id-gone", "gone"))))
    plan = plan_group_delete(group, TOPICS)
    assert plan.delete == {ORDERS: [0, 1], PAYMENTS: [0]}
    assert plan.records == [(ShareGroupStatePartitionMetadataKey("g"),
                             ShareGroupStatePartitionMetadataValue((), (), (
                                 ShareTopicInfo(ORDERS, "orders"),
                                 ShareTopicInfo(PAYMENTS, "payments"))))]
    untouched = plan_group_delete(ShareGroup("g"), TOPICS)
    assert (untouched.delete, untouched.records) == ({}, [])


def test_delete_groups_asks_for_a_share_groups_state_first() -> None:
    shard = GroupCoordinatorShard(GroupConfig(), TOPICS, random.Random(7))
    assert shard.share_group_delete_plan("nobody")[0] is None
    shard.share_heartbeat(ShareHeartbeatRequest("g", "m1", 0, None, ("orders",), "c", "/h"), 1)
    (code, busy), out = shard.share_group_delete_plan("g")
    assert (code, busy.delete, out.records) == (ErrorCode.non_empty_group, {}, [])
    shard.share_heartbeat(ShareHeartbeatRequest("g", "m1", -1, None, None, "c", "/h"), 2)
    (code, plan), out = shard.share_group_delete_plan("g")
    assert (code, plan.delete) == (ErrorCode.none, {ORDERS: [0, 1]})
    assert out.records == plan.records
    # Recorded as deleting: a failed deletion is retried by the next DeleteGroups.
    assert shard.share_initialized_partitions("g") == {}
    (_, again), _ = shard.share_group_delete_plan("g")
    assert again.delete == {ORDERS: [0, 1]}
    assert shard.delete_group("g", 3)[0] == ErrorCode.none
    assert shard.share_group_delete_plan("g")[0] is None


def summary(start: int, complete: int, error: ErrorCode = ErrorCode.none) -> StateSummary:
    return StateSummary(error, None, 1, 4, start, complete)


def test_lag_is_the_end_offset_less_start_and_delivered_records() -> None:
    assert lag(100, summary(40, 7)) == 53
    assert lag(None, summary(40, 7)) == -1
    assert lag(100, summary(-1, -1)) == -1
    assert lag(100, summary(40, -1)) == -1
    assert lag(100, summary(40, 7, ErrorCode.coordinator_not_available)) == -1


def test_a_coordinator_error_reads_as_no_state() -> None:
    assert described_partition(3, summary(40, 0), 50) == {
        "partition_index": 3, "start_offset": 40, "leader_epoch": 4, "lag": 10,
        "error_code": ErrorCode.none, "error_message": None}
    failed = described_partition(3, summary(40, 0, ErrorCode.unknown_topic_or_partition), 50)
    assert (failed["start_offset"], failed["leader_epoch"], failed["lag"],
            failed["error_code"]) == (-1, 0, -1, ErrorCode.none)


def test_a_subscription_keeps_the_partitions_an_alter_initialized() -> None:
    shard = GroupCoordinatorShard(GroupConfig(), TOPICS, random.Random(7))
    plan, _ = shard.alter_share_group_offsets("g", [("payments", [(0, 3)])])
    assert plan.initialize == {PAYMENTS: {0: 3}}
    shard.share_offsets_initialized("g", {PAYMENTS: ("payments", [0])})
    joined = ShareHeartbeatRequest("g", "m1", 0, None, ("orders",), "c", "/h")
    _, out = shard.share_heartbeat(joined, 1)
    [initialization] = out.share_initializations
    assert initialization.partitions == {ORDERS: ("orders", (0, 1))}
    shard.share_partitions_initialized(initialization, ())
    assert shard.share_initialized_partitions("g") == {PAYMENTS: frozenset({0}),
                                                       ORDERS: frozenset({0, 1})}
