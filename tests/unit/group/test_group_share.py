"""KIP-932 share group membership in the coordinator shard: partitions assigned once their
share-partition state is initialized (asked again after a failure or a load), joins to
initialized partitions assigned at once, Kafka's member-epoch rules and request checks,
leaving and session fencing (reported as departures), group-type conflicts with classic and
consumer groups, describe, list and delete, and replay: a shard that loads the records a run
wrote holds the same groups.

Also the SimpleAssignor's properties: every subscribed partition is assigned, only to
members subscribing to its topic, balanced, and stable when nothing changes."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.group import share_assignor
from odradek.group.classic import JoinRequest
from odradek.group.consumer_handlers import HeartbeatRequest
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupConfig, StaticTopics, TopicInfo
from odradek.group.records import (
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    TopicPartitions,
)
from odradek.group.share_group import ShareGroup, ShareInitialization
from odradek.group.share_handlers import SESSION_TIMER, ShareHeartbeatRequest

ORDERS = "00000000-0000-0000-0000-00000000000a"
AUDIT = "00000000-0000-0000-0000-00000000000b"
SESSION_MS = GroupConfig().share_session_timeout_ms


class Run:
    """A shard, its clock, and every record it wrote (to load a second shard from)."""

    def __init__(self, **partitions: int) -> None:
        ids = {"orders": ORDERS, "audit": AUDIT}
        self.topics = StaticTopics({name: TopicInfo(ids[name], name, count)
                                    for name, count in partitions.items()})
        self.shard = GroupCoordinatorShard(GroupConfig(), self.topics, random.Random(7))
        self.now = 1_000
        self.records: list[Any] = []
        self.departed: list[tuple[str, str]] = []
        self.asked: list[ShareInitialization] = []
        self.answer_at_once = True
        """Whether the share coordinator answers each initialization as soon as asked."""

    def beat(self, member: str, epoch: int, topics: tuple[str, ...] | None = ("orders",),
             group: str = "g", rack: str | None = None) -> Any:
        request = ShareHeartbeatRequest(group, member, epoch, rack, topics, "client", "/h")
        response, out = self.shard.share_heartbeat(request, self.now)
        self.collect(out)
        return response

    def collect(self, out: Any) -> None:
        self.records += out.records
        self.departed += out.departed
        self.asked += out.share_initializations
        if self.answer_at_once:
            self.answer()

    def answer(self, failed: frozenset[tuple[str, int]] = frozenset()) -> None:
        """The share coordinator initialized what was asked, but for `failed`."""
        for initialization in self.asked:
            _, out = self.shard.share_partitions_initialized(initialization, failed)
            self.records += out.records
        self.asked.clear()

    def initialize(self, group: str = "g") -> None:
        """Every partition of the group has its state already (as an AlterShareGroupOffsets
        leaves it), so that joins are assigned at once."""
        every = {i.topic_id: (i.name, range(i.partitions)) for i in self.topics.topics.values()}
        self.records += self.shard.share_offsets_initialized(group, every)[1].records

    def tick(self, advance_ms: int) -> None:
        self.now += advance_ms
        self.collect(self.shard.tick(self.now))

    def group(self, group_id: str = "g") -> ShareGroup:
        group = self.shard.groups[group_id]
        assert isinstance(group, ShareGroup)
        return group

    def reloaded(self) -> GroupCoordinatorShard:
        loaded = GroupCoordinatorShard(GroupConfig(), self.topics, random.Random(7))
        for key, value in self.records:
            loaded.replay(key, value)
        return loaded


def assigned(response: Any, topic_id: str = ORDERS) -> set[int]:
    assert response.assignment is not None
    return {p for tp in response.assignment if tp.topic_id == topic_id for p in tp.partitions}


def test_partitions_are_assigned_once_their_state_is_initialized() -> None:
    run = Run(orders=4)
    run.answer_at_once = False
    joined = run.beat("m1", 0)
    assert (joined.member_epoch, assigned(joined)) == (1, set())
    assert run.asked == [ShareInitialization("g", 1, {ORDERS: ("orders", (0, 1, 2, 3))})]
    initializing = run.group().state_partitions.initializing_topics
    assert [(t.topic_id, t.partitions) for t in initializing] == [(ORDERS, (0, 1, 2, 3))]
    waiting = run.beat("m1", 1, None)  # asked already: not asked again
    assert (waiting.member_epoch, waiting.assignment, len(run.asked)) == (1, None, 1)
    run.answer()
    state = run.group().state_partitions
    assert state.initializing_topics == ()
    assert [(t.topic_id, t.partitions) for t in state.initialized_topics] == [
        (ORDERS, (0, 1, 2, 3))]
    assigned_now = run.beat("m1", 1, None)  # initialized and in no target: a new epoch
    assert (assigned_now.member_epoch, assigned(assigned_now)) == (2, {0, 1, 2, 3})
    assert run.beat("m1", 2, None).member_epoch == 2
    assert run.reloaded().groups == run.shard.groups


def test_partitions_whose_initialization_failed_are_asked_for_again() -> None:
    run = Run(orders=3)
    run.answer_at_once = False
    run.beat("m1", 0)
    run.answer(failed=frozenset({(ORDERS, 1)}))
    state = run.group().state_partitions
    assert state.initializing_topics == ()
    assert [(t.topic_id, t.partitions) for t in state.initialized_topics] == [(ORDERS, (0, 2))]
    response = run.beat("m1", 1, None)
    assert (response.member_epoch, assigned(response)) == (2, {0, 2})
    assert run.asked == [ShareInitialization("g", 2, {ORDERS: ("orders", (1,))})]
    run.answer()
    assert assigned(run.beat("m1", 2, None)) == {0, 1, 2}


def test_a_loaded_shard_asks_again_for_what_was_initializing() -> None:
    run = Run(orders=2)
    run.answer_at_once = False
    run.beat("m1", 0)
    loaded = run.reloaded()
    loaded.loaded(run.now)
    request = ShareHeartbeatRequest("g", "m1", 1, None, None, "client", "/h")
    _, out = loaded.share_heartbeat(request, run.now)
    assert out.share_initializations == [
        ShareInitialization("g", 1, {ORDERS: ("orders", (0, 1))})]
    # the first shard's late answer is recorded too, and the second answer changes nothing
    run.answer()
    assert run.group().initialized_partitions() == {ORDERS: frozenset({0, 1})}


def test_an_answer_after_the_state_was_deleted_changes_nothing() -> None:
    run = Run(orders=2)
    run.answer_at_once = False
    run.beat("m1", 0)
    run.beat("m1", -1, None)
    planned, out = run.shard.share_group_delete_plan("g")
    run.records += out.records
    assert planned is not None
    code, plan = planned
    assert (code, plan.delete) == (ErrorCode.none, {ORDERS: [0, 1]})
    deleting = run.group().state_partitions
    run.answer()
    assert run.group().state_partitions == deleting
    assert run.group().initialized_partitions() == {}


def test_members_join_and_get_their_assignment_at_once() -> None:
    run = Run(orders=4)
    run.initialize()
    first = run.beat("m1", 0)
    assert (first.error_code, first.member_id, first.member_epoch) == (ErrorCode.none, "m1", 1)
    assert first.heartbeat_interval_ms == 5000
    assert assigned(first) == {0, 1, 2, 3}
    second = run.beat("m2", 0)
    assert second.member_epoch == 2
    third = run.beat("m1", 1, None)
    assert third.member_epoch == 2
    # No revocation handshake: each member has its target as soon as it heartbeats.
    assert assigned(second) | assigned(third) == {0, 1, 2, 3}
    assert len(assigned(second)) == len(assigned(third)) == 2
    assert run.beat("m1", 2, None).assignment is None  # unchanged: not sent again
    group = run.group()
    assert group.state == "Stable"
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert run.reloaded().groups == run.shard.groups


def test_more_members_than_partitions_share_them() -> None:
    run = Run(orders=1)
    run.initialize()
    for member in ("m1", "m2", "m3"):
        run.beat(member, 0)
    for epoch, member in enumerate(("m1", "m2", "m3"), start=1):
        response = run.beat(member, epoch, None)
        assert (response.error_code, response.member_epoch) == (ErrorCode.none, 3)
    assert all(m.assigned == {ORDERS: frozenset({0})} for m in run.group().members.values())


# (member, epoch, accepted): m1 is at epoch 3 with previous epoch 1.
EPOCH_RULES = [("m1", 0, True), ("m1", 1, True), ("m1", 2, False), ("m1", 3, True),
               ("m1", 4, False), ("m9", 3, False)]


@pytest.mark.parametrize(("member", "epoch", "accepted"), EPOCH_RULES)
def test_member_epoch_rules(member: str, epoch: int, accepted: bool) -> None:
    run = Run(orders=3)
    run.beat("m1", 0)
    run.beat("m2", 0)
    run.beat("m3", 0)
    assert run.beat("m1", 1, None).member_epoch == 3
    response = run.beat(member, epoch, ("orders",) if epoch == 0 else None)
    if accepted:
        assert response.error_code == ErrorCode.none
        assert response.member_epoch == 3
    else:
        expected = ErrorCode.unknown_member_id if member == "m9" else ErrorCode.fenced_member_epoch
        assert (response.error_code, response.member_epoch) == (expected, 0)


@pytest.mark.parametrize(("member", "epoch", "topics", "rack", "message"), [
    ("", 0, ("orders",), None, None),
    ("x" * 37, 0, ("orders",), None, None),
    (" ", 0, ("orders",), None, "MemberId can't be empty."),
    ("m1", 0, (), None, "SubscribedTopicNames must be set in first request."),
    ("m1", 0, None, None, "SubscribedTopicNames must be set in first request."),
    ("m1", 0, ("orders",), " ", "RackId can't be empty."),
    ("m1", -2, None, None, "MemberEpoch is invalid."),
])
def test_request_checks(member: str, epoch: int, topics: tuple[str, ...] | None,
                        rack: str | None, message: str | None) -> None:
    run = Run(orders=1)
    response = run.beat(member, epoch, topics, rack=rack)
    assert (response.error_code, response.error_message) == (ErrorCode.invalid_request, message)
    assert run.shard.groups == {}


def test_unknown_group() -> None:
    run = Run(orders=1)
    response = run.beat("m1", 5, None)
    assert (response.error_code, response.error_message) == (
        ErrorCode.group_id_not_found, "Share group g not found.")
    leave = run.beat("m1", -1, None)
    assert (leave.error_code, leave.error_message) == (
        ErrorCode.group_id_not_found, "Group g not found.")


def test_leave_reports_the_departure_and_the_survivor_takes_over() -> None:
    run = Run(orders=2)
    run.beat("m1", 0)
    run.beat("m2", 0)
    run.beat("m1", 1, None)
    leave = run.beat("m2", -1, None)
    assert (leave.error_code, leave.member_id, leave.member_epoch) == (ErrorCode.none, "m2", -1)
    assert run.departed == [("g", "m2")]
    assert run.beat("m2", -1, None).error_code == ErrorCode.unknown_member_id
    survivor = run.beat("m1", 2, None)
    assert (survivor.member_epoch, assigned(survivor)) == (3, {0, 1})
    assert run.reloaded().groups == run.shard.groups


def test_session_timeout_fences_the_silent_member() -> None:
    run = Run(orders=2)
    run.beat("m1", 0)
    run.tick(SESSION_MS // 2)
    run.beat("m2", 0)
    run.tick(SESSION_MS // 2)  # m1's session ends; m2's does not
    assert run.departed == [("g", "m1")]
    assert set(run.group().members) == {"m2"}
    assert assigned(run.beat("m2", 2, None)) == {0, 1}
    run.tick(SESSION_MS)
    assert run.departed == [("g", "m1"), ("g", "m2")]
    assert run.group().state == "Empty"
    assert run.reloaded().groups == run.shard.groups


def test_a_loaded_shard_fences_members_that_do_not_come_back() -> None:
    run = Run(orders=1)
    run.beat("m1", 0)
    loaded = run.reloaded()
    loaded.loaded(run.now)
    assert (SESSION_TIMER, "g", "m1") in loaded.timers
    out = loaded.tick(run.now + SESSION_MS)
    assert out.departed == [("g", "m1")]


def test_topic_growth_bumps_the_epoch_and_reassigns() -> None:
    run = Run(orders=1)
    run.beat("m1", 0)
    run.topics.topics["orders"] = TopicInfo(ORDERS, "orders", 3)
    run.collect(run.shard.refresh_topics(run.now))
    assert run.group().group_epoch == 2
    response = run.beat("m1", 1, None)
    assert (response.member_epoch, assigned(response)) == (2, {0, 1, 2})
    initialized = run.group().state_partitions.initialized_topics
    assert [(t.topic_id, t.partitions) for t in initialized] == [(ORDERS, (0, 1, 2))]


def test_group_types_do_not_mix() -> None:
    run = Run(orders=1)
    run.beat("m1", 0, group="share")
    consumer = HeartbeatRequest("consumer", "c1", 0, None, None, 30000, ("orders",), None,
                                None, (), "client", "/h", 1)
    assert run.shard.consumer_heartbeat(consumer, run.now)[0].error_code == ErrorCode.none
    on_consumer = run.beat("m1", 0, group="consumer")
    assert (on_consumer.error_code, on_consumer.error_message) == (
        ErrorCode.group_id_not_found, "Group consumer is not a share group.")
    on_share = run.shard.consumer_heartbeat(
        HeartbeatRequest("share", "c1", 0, None, None, 30000, ("orders",), None, None, (),
                         "client", "/h", 1), run.now)[0]
    assert (on_share.error_code, on_share.error_message) == (
        ErrorCode.group_id_not_found, "Group share is not a consumer group.")
    join = JoinRequest("share", "", None, 30000, 30000, "consumer", (("range", b""),),
                       "client", "/h", 5)
    out = run.shard.join_group("token", join, run.now)
    assert out.responses[0][1]["error_code"] == ErrorCode.inconsistent_group_protocol
    assert run.shard.describe_group("share", 6)["error_code"] == ErrorCode.group_id_not_found
    described = run.shard.share_group_describe("consumer")
    assert described["error_message"] == "Group consumer is not a share group."
    assert run.shard.share_group_describe("none")["error_message"] == "Group none not found."


def test_describe_list_and_delete() -> None:
    run = Run(orders=2)
    run.initialize()
    run.beat("m1", 0, rack="r1")
    described = run.shard.share_group_describe("g")
    assert (described["group_state"], described["group_epoch"], described["assignor_name"]) == (
        "Stable", 1, "simple")
    [member] = described["members"]
    assert (member["member_id"], member["rack_id"], member["subscribed_topic_names"]) == (
        "m1", "r1", ["orders"])
    assert member["assignment"]["topic_partitions"][0]["partitions"] == [0, 1]
    listed = run.shard.list_groups(types=["share"])
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in listed] == [
        ("g", "share", "Stable", "share")]
    assert run.shard.list_groups(types=["consumer"]) == []
    assert run.shard.delete_group("g", run.now)[0] == ErrorCode.non_empty_group
    run.beat("m1", -1, None)
    assert run.shard.list_groups(states=["empty"])[0].group_id == "g"
    code, out = run.shard.delete_group("g", run.now)
    run.records += out.records
    assert code == ErrorCode.none and "g" not in run.shard.groups
    keys = [key for key, value in out.records]
    assert keys[-2:] == [ShareGroupStatePartitionMetadataKey("g"), ShareGroupMetadataKey("g")]
    assert all(value is None for _, value in out.records)
    assert run.reloaded().groups == {}
    assert run.shard.delete_group("g", run.now)[0] == ErrorCode.group_id_not_found


def test_empty_share_groups_do_not_expire() -> None:
    run = Run(orders=1)
    run.beat("m1", 0)
    run.beat("m1", -1, None)
    assert run.shard.expire_offsets(run.now + 10**12).records == []
    assert "g" in run.shard.groups


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["m1", "m2", "m3", "m4"]),
                          st.sampled_from(["join", "beat", "leave", "wait", "audit"])),
                max_size=25))
def test_any_run_replays_to_the_same_groups_and_covers_every_partition(steps) -> None:
    run = Run(orders=3, audit=2)
    epochs: dict[str, int] = {}
    for member, action in steps:
        if action == "wait":
            run.tick(SESSION_MS // 3)
            epochs = {m: e for m, e in epochs.items() if m in run.shard.groups.get(
                "g", ShareGroup("g")).members}
            continue
        if action in ("join", "audit") or member not in epochs:
            topics = ("orders", "audit") if action == "audit" else ("orders",)
            response = run.beat(member, 0, topics)
        elif action == "beat":
            response = run.beat(member, epochs[member], None)
        else:
            response = run.beat(member, -1, None)
            assert response.error_code == ErrorCode.none
            del epochs[member]
            continue
        assert response.error_code == ErrorCode.none, response
        epochs[member] = response.member_epoch
    for member, epoch in epochs.items():  # a round of heartbeats assigns what was initialized
        epochs[member] = run.beat(member, epoch, None).member_epoch
    assert run.reloaded().groups == run.shard.groups
    group = run.shard.groups.get("g")
    if isinstance(group, ShareGroup) and group.members and (
            group.assignment_epoch == group.group_epoch):
        covered = {(t, p) for target in group.target.values()
                   for t, parts in target.items() for p in parts}
        subscribed = {name for m in group.members.values() for name in m.subscribed_topic_names}
        expected = {(ORDERS, p) for p in range(3)} | (
            {(AUDIT, p) for p in range(2)} if "audit" in subscribed else set())
        assert covered == expected


# The SimpleAssignor.

member_ids = st.lists(st.text("abcdefgh", min_size=1, max_size=4), min_size=1, max_size=9,
                      unique=True)


# A topic's assignable partitions: those initialized, not necessarily from 0 or contiguous.
assignable_partitions = st.frozensets(st.integers(0, 5), min_size=1)


@settings(max_examples=200, deadline=None)
@given(members=member_ids, assignable=st.lists(assignable_partitions, min_size=1, max_size=3),
       data=st.data())
def test_assignor_covers_balances_and_sticks(members: list[str],
                                             assignable: list[frozenset[int]],
                                             data: st.DataObject) -> None:
    topics = {f"t{i}": partitions for i, partitions in enumerate(assignable)}
    homogeneous = data.draw(st.booleans())
    subscriptions = {m: frozenset(topics) if homogeneous else frozenset(
        data.draw(st.sets(st.sampled_from(sorted(topics)), min_size=1))) for m in members}
    previous = {m: {t: frozenset(data.draw(st.sets(st.integers(0, 6)))) for t in topics}
                for m in members}
    result = share_assignor.assign(subscriptions, topics, previous)
    assert set(result) == set(members)
    holders: dict[tuple[str, int], int] = {}
    for member, assignment in result.items():
        for topic, partitions in assignment.items():
            assert topic in subscriptions[member]
            assert partitions and partitions <= topics[topic]
            for p in partitions:
                holders[(topic, p)] = holders.get((topic, p), 0) + 1
    wanted = {(t, p) for m in members for t in subscriptions[m] for p in topics[t]}
    assert set(holders) == wanted
    if homogeneous:
        total = sum(len(partitions) for partitions in topics.values())
        sharing = -(-len(members) // total)
        assert max(holders.values()) <= sharing
        sizes = [sum(len(p) for p in result[m].values()) for m in members]
        if len(members) <= total:
            assert max(sizes) - min(sizes) <= 1
    assert share_assignor.assign(subscriptions, topics, result) == result


def test_assignor_keeps_what_members_had_when_balanced() -> None:
    previous = {"a": {ORDERS: frozenset({2, 3})}, "b": {ORDERS: frozenset({0, 1})}}
    subscriptions = {"a": frozenset({ORDERS}), "b": frozenset({ORDERS})}
    orders = {ORDERS: frozenset(range(4))}
    assert share_assignor.assign(subscriptions, orders, previous) == previous
    grown = share_assignor.assign({**subscriptions, "c": frozenset({ORDERS})}, orders, previous)
    assert sorted(len(grown[m][ORDERS]) for m in "abc") == [1, 1, 2]
    assert grown["a"][ORDERS] <= {2, 3} and grown["b"][ORDERS] <= {0, 1}


def test_topic_partitions_in_responses_are_sorted() -> None:
    run = Run(orders=3)
    run.initialize()
    response = run.beat("m1", 0)
    assert response.assignment == (TopicPartitions(ORDERS, (0, 1, 2)),)


def test_a_rejoin_keeps_the_member_and_writes_only_what_changed() -> None:
    run = Run(orders=2)
    run.initialize()
    run.beat("m1", 0)
    run.records.clear()
    again = run.beat("m1", 0)
    assert (again.member_epoch, assigned(again)) == (1, {0, 1})  # sent again on a join
    assert run.records == []
