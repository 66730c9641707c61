"""The KIP-848 consumer group state machine: joins, revoke-before-assign reconciliation,
fencing, timeouts, static membership, topic and regex changes, and replay of its records.

Every heartbeat goes through `Harness`, which checks that the handler left the group alone
(handlers are pure), replays the records into the group as the shard does, and checks that
the response agrees with the replayed state and that no partition has two owners."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.group.consumer_group import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerGroup,
    from_topic_partitions,
    to_topic_partitions,
)
from odradek.group.consumer_handlers import (
    REBALANCE_TIMER,
    SESSION_TIMER,
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    on_timer,
    refresh_metadata,
    schedule_loaded_timers,
)
from odradek.group.model import (
    GroupConfig,
    GroupContext,
    GroupError,
    StaticTopics,
    TimerKey,
    Timers,
    TopicInfo,
)
from odradek.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
    TopicPartitions,
)

GROUP = "g"
ORDERS = "00000000-0000-4000-8000-00000000000a"
PAYMENTS = "00000000-0000-4000-8000-00000000000b"
REFUNDS = "00000000-0000-4000-8000-00000000000c"
SESSION_MS = 45_000
REBALANCE_MS = 30_000

Owned = dict[str, frozenset[int]]


def topics(**partitions: int) -> StaticTopics:
    ids = {"orders": ORDERS, "payments": PAYMENTS, "refunds": REFUNDS}
    return StaticTopics({name: TopicInfo(ids.get(name, f"00000000-0000-4000-8000-{i:012x}"),
                                         name, count)
                         for i, (name, count) in enumerate(partitions.items(), start=100)})


def put_topic(view: StaticTopics, name: str, topic_id: str, partitions: int) -> None:
    """Create or grow a topic, as the metadata image would change."""
    assert isinstance(view.topics, dict)
    view.topics[name] = TopicInfo(topic_id, name, partitions)


def delete_topic(view: StaticTopics, name: str) -> None:
    assert isinstance(view.topics, dict)
    del view.topics[name]


def tp(topic_id: str, *partitions: int) -> TopicPartitions:
    return TopicPartitions(topic_id, partitions)


def owned_of(*tps: TopicPartitions) -> Owned:
    return from_topic_partitions(tps)


class Harness:
    """One group, a manual clock and timers, driven the way the coordinator shard drives it."""

    def __init__(self, view: StaticTopics | None = None, **config: object) -> None:
        self.ctx = GroupContext(now_ms=1_000, topics=view or topics(orders=6),
                                config=GroupConfig(**config),  # type: ignore[arg-type]
                                timers=Timers(), rng=random.Random(7))
        self.group: ConsumerGroup | None = None
        self.log: list[Record] = []
        self.last_records: list[Record] = []

    @property
    def g(self) -> ConsumerGroup:
        assert self.group is not None
        return self.group

    def apply(self, records: list[Record]) -> None:
        self.last_records = records
        for key, value in records:
            if self.group is None:
                self.group = ConsumerGroup(GROUP)
            self.group.replay(key, value)
        self.log.extend(records)
        if self.group is not None:
            assert_single_owner(self.group)

    def send(self, member_id: str, epoch: int, *, names: tuple[str, ...] | None = None,
             regex: str | None = None, owned: tuple[TopicPartitions, ...] | None = None,
             instance_id: str | None = None, rebalance_timeout_ms: int = -1,
             assignor: str | None = None, rack_id: str | None = None, version: int = 1,
             group_id: str = GROUP) -> HeartbeatResponse:
        request = HeartbeatRequest(
            group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout_ms, names, regex,
            assignor, owned, "client", "/10.0.0.1", version,
        )
        before = None if self.group is None else self.group.copy()
        records, response = heartbeat(self.group, request, self.ctx)
        assert self.group == before, "a handler changed the group"
        if response.error_code != ErrorCode.none:
            assert records == []
        self.apply(records)
        if response.error_code == ErrorCode.none and response.member_epoch >= 0:
            member = self.g.members[response.member_id or ""]
            assert response.member_epoch == member.member_epoch
            if response.assignment is not None:
                assert from_topic_partitions(response.assignment) == member.assigned
        return response

    def join(self, member_id: str, names: tuple[str, ...] = ("orders",),
             **kwargs: object) -> HeartbeatResponse:
        kwargs.setdefault("rebalance_timeout_ms", REBALANCE_MS)
        return self.send(member_id, 0, names=names, owned=(), **kwargs)  # type: ignore[arg-type]

    def advance(self, ms: int) -> None:
        """Move the clock and fire the timers that fall due, as the shard does."""
        self.ctx.now_ms += ms
        for key in self.ctx.timers.pop_expired(self.ctx.now_ms):
            assert self.group is not None
            self.apply(on_timer(self.group, key, self.ctx))


def assert_single_owner(group: ConsumerGroup) -> None:
    seen: dict[tuple[str, int], str] = {}
    for member in group.members.values():
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    other = seen.setdefault((topic_id, p), member.member_id)
                    assert other == member.member_id, f"{topic_id}-{p} owned twice"


def partitions(response: HeartbeatResponse, topic_id: str = ORDERS) -> set[int]:
    assert response.assignment is not None
    return set(from_topic_partitions(response.assignment).get(topic_id, frozenset()))


# Joining.


def test_first_member_joins_alone_and_gets_every_partition() -> None:
    h = Harness()
    response = h.join("a", assignor="range")

    assert response.error_code == ErrorCode.none
    assert (response.member_id, response.member_epoch) == ("a", 1)
    assert response.heartbeat_interval_ms == 5000
    assert response.assignment == (tp(ORDERS, 0, 1, 2, 3, 4, 5),)
    assert [type(key).__name__ for key, _ in h.last_records] == [
        "ConsumerGroupMemberMetadataKey", "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey", "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupCurrentMemberAssignmentKey",
    ]
    assert (h.g.group_epoch, h.g.assignment_epoch, h.g.state) == (1, 1, "Stable")
    assert h.ctx.timers.deadline((SESSION_TIMER, GROUP, "a")) == h.ctx.now_ms + SESSION_MS


def test_second_member_waits_until_the_first_revokes() -> None:
    h = Harness()
    h.join("a", assignor="range")
    b = h.join("b", assignor="range")
    # b's target is 3-5, still held by a: it moves to epoch 2 with nothing yet.
    assert (b.member_epoch, b.assignment) == (2, ())
    assert h.g.members["b"].state == UNRELEASED_PARTITIONS
    assert h.g.target == {"a": {ORDERS: frozenset({0, 1, 2})}, "b": {ORDERS: frozenset({3, 4, 5})}}
    assert h.g.state == "Reconciling"

    # a keeps 0-2 and must revoke 3-5, at its old epoch.
    a = h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),))
    assert (a.member_epoch, partitions(a)) == (1, {0, 1, 2})
    assert h.g.members["a"].state == UNREVOKED_PARTITIONS
    assert h.g.members["a"].pending_revocation == {ORDERS: frozenset({3, 4, 5})}
    assert (REBALANCE_TIMER, GROUP, "a") in h.ctx.timers

    # Until a stops reporting 3-5, b gets none of them.
    assert h.send("b", 2, owned=()).assignment is None
    assert h.g.members["b"].assigned == {}
    a = h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),))
    assert a.member_epoch == 1 and h.g.members["a"].state == UNREVOKED_PARTITIONS

    a = h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2),))
    assert (a.member_epoch, h.g.members["a"].state) == (2, STABLE)
    assert (REBALANCE_TIMER, GROUP, "a") not in h.ctx.timers
    b = h.send("b", 2, owned=())
    assert (b.member_epoch, partitions(b)) == (2, {3, 4, 5})
    assert h.g.state == "Stable"


def test_three_members_converge_to_two_partitions_each() -> None:
    h = Harness()
    clients = Clients(h)
    for member_id in "abc":
        clients.join(member_id, assignor="range")
    clients.settle()
    assert h.g.state == "Stable"
    assert (h.g.group_epoch, h.g.assignment_epoch) == (3, 3)
    assert {m: clients.owned[m] for m in "abc"} == {
        "a": {ORDERS: frozenset({0, 1})}, "b": {ORDERS: frozenset({2, 3})},
        "c": {ORDERS: frozenset({4, 5})},
    }
    assert all(m.member_epoch == 3 for m in h.g.members.values())


@dataclass
class Clients:
    """Consumers that take the partitions a response gives them and report what they own.
    An eager client lets revoked partitions go at once; a lazy one, like a slow revocation
    callback, still holds them through its next heartbeat and lets them go after its
    response. After every step, checks that each client owns only what the group has it
    hold, so that no two clients own a partition."""

    h: Harness
    lazy: bool = False
    epoch: dict[str, int] = field(default_factory=dict)
    owned: dict[str, Owned] = field(default_factory=dict)
    revoking: dict[str, Owned] = field(default_factory=dict)
    instance: dict[str, str | None] = field(default_factory=dict)

    def join(self, member_id: str, names: tuple[str, ...] = ("orders",),
             **kwargs: object) -> HeartbeatResponse:
        response = self.h.join(member_id, names, **kwargs)
        self.instance[member_id] = kwargs.get("instance_id")  # type: ignore[assignment]
        self.owned[member_id], self.revoking[member_id] = {}, {}
        self._receive(member_id, response)
        return response

    def beat(self, member_id: str) -> HeartbeatResponse:
        releasing = self.revoking[member_id]
        response = self.h.send(member_id, self.epoch[member_id],
                               owned=to_topic_partitions(_union(self.owned[member_id], releasing)),
                               instance_id=self.instance[member_id])
        self._receive(member_id, response)
        if member_id in self.revoking:
            self.revoking[member_id] = _minus(self.revoking[member_id], releasing)
        return response

    def _receive(self, member_id: str, response: HeartbeatResponse) -> None:
        if response.error_code != ErrorCode.none:
            self.drop(member_id)
            return
        self.epoch[member_id] = response.member_epoch
        if response.assignment is not None:
            assignment = from_topic_partitions(response.assignment)
            if self.lazy:
                revoked = _minus(self.owned[member_id], assignment)
                self.revoking[member_id] = _union(self.revoking[member_id], revoked)
            self.owned[member_id] = assignment
        self.check()

    def drop(self, member_id: str) -> None:
        for state in (self.epoch, self.owned, self.revoking):
            state.pop(member_id, None)

    def settle(self, rounds: int = 4) -> None:
        for _ in range(rounds):
            for member_id in sorted(self.epoch):
                self.beat(member_id)

    def check(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        group = self.h.g
        for member_id, owned in self.owned.items():
            member = group.members[member_id]
            for topic_id, parts in _union(owned, self.revoking[member_id]).items():
                held = (member.assigned.get(topic_id, frozenset())
                        | member.pending_revocation.get(topic_id, frozenset()))
                assert parts <= held, f"{member_id} owns {topic_id} {parts} beyond {held}"
                for p in parts:
                    assert seen.setdefault((topic_id, p), member_id) == member_id


def _union(a: Owned, b: Owned) -> Owned:
    return {t: a.get(t, frozenset()) | b.get(t, frozenset()) for t in a.keys() | b.keys()}


def _minus(a: Owned, b: Owned) -> Owned:
    return {t: ps - b.get(t, frozenset()) for t, ps in a.items() if ps - b.get(t, frozenset())}


def test_revoke_before_assign_when_a_third_member_joins() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a", assignor="range")
    clients.join("b", assignor="range")
    clients.settle()
    assert clients.owned == {"a": {ORDERS: frozenset({0, 1, 2})},
                             "b": {ORDERS: frozenset({3, 4, 5})}}

    c = clients.join("c", assignor="range")
    assert (c.member_epoch, c.assignment) == (3, ())
    # c's target 4-5 is held by b (5) and a (2 -> b): nothing moves before a revocation.
    a = clients.beat("a")
    assert (a.member_epoch, partitions(a)) == (2, {0, 1})
    assert h.g.members["a"].pending_revocation == {ORDERS: frozenset({2})}
    assert clients.beat("c").assignment is None
    b = clients.beat("b")
    assert (b.member_epoch, partitions(b)) == (2, {3})
    # b wants 2, still pending revocation from a: b must first give up 4-5.
    assert h.g.members["b"].pending_revocation == {ORDERS: frozenset({4, 5})}
    b = clients.beat("b")
    assert (b.member_epoch, b.assignment) == (3, None)  # still {3}: nothing to tell
    assert h.g.members["b"].state == UNRELEASED_PARTITIONS
    c = clients.beat("c")
    assert (c.member_epoch, partitions(c)) == (3, {4, 5})
    a = clients.beat("a")
    assert (a.member_epoch, h.g.members["a"].state) == (3, STABLE)
    b = clients.beat("b")
    assert (b.member_epoch, partitions(b)) == (3, {2, 3})
    assert h.g.state == "Stable"


def test_assignment_is_only_sent_when_it_changed_or_differs_from_what_is_owned() -> None:
    h = Harness()
    h.join("a")
    assert h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),)).assignment is None
    assert h.send("a", 1).assignment is None
    assert h.send("a", 1, owned=(tp(ORDERS, 0, 1),)).assignment == (tp(ORDERS, 0, 1, 2, 3, 4, 5),)
    full = h.send("a", 1, names=("orders",), owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),),
                  rebalance_timeout_ms=REBALANCE_MS)
    assert full.assignment == (tp(ORDERS, 0, 1, 2, 3, 4, 5),)


# Fencing.


def test_epoch_fencing_rules() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a", assignor="range")
    clients.join("b", assignor="range")
    clients.settle()
    a = h.g.members["a"]
    assert (a.member_epoch, a.previous_member_epoch) == (2, 1)

    unknown = h.send("zz", 1, owned=())
    assert unknown.error_code == ErrorCode.unknown_member_id
    assert (unknown.member_id, unknown.member_epoch) == (None, 0)
    assert h.send("a", 3, owned=()).error_code == ErrorCode.fenced_member_epoch
    # The previous epoch is accepted while the member owns no more than its assignment.
    retry = h.send("a", 1, owned=(tp(ORDERS, 0, 1),))
    assert (retry.error_code, retry.member_epoch) == (ErrorCode.none, 2)
    assert h.send("a", 1, owned=(tp(ORDERS, 0, 3),)).error_code == ErrorCode.fenced_member_epoch
    assert h.send("a", 1, owned=None).error_code == ErrorCode.fenced_member_epoch
    b = h.g.members["b"]
    stale = b.previous_member_epoch - 1
    assert h.send("b", stale, owned=()).error_code == ErrorCode.fenced_member_epoch
    assert h.send("a", 2, owned=(tp(ORDERS, 0, 1, 2),)).error_code == ErrorCode.none


def test_a_fenced_member_rejoins_with_epoch_zero_under_its_member_id() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a", assignor="range")
    clients.join("b", assignor="range")
    clients.settle()
    assert (h.g.members["a"].member_epoch, h.g.members["a"].previous_member_epoch) == (2, 1)
    assert h.send("a", 7, owned=()).error_code == ErrorCode.fenced_member_epoch
    rejoined = h.join("a", assignor="range")
    assert (rejoined.error_code, rejoined.member_epoch) == (ErrorCode.none, 2)
    assert partitions(rejoined) == {0, 1, 2}
    assert h.g.group_epoch == 2


def test_unknown_group() -> None:
    h = Harness()
    response = h.send("a", 3, owned=())
    assert response.error_code == ErrorCode.group_id_not_found
    assert h.send("a", -1).error_code == ErrorCode.group_id_not_found
    assert h.group is None


# Timeouts.


def test_session_timeout_fences_and_the_survivor_takes_over() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a")
    clients.join("b")
    clients.settle()
    h.advance(SESSION_MS - 1000)
    clients.beat("a")
    epoch = h.g.group_epoch
    h.advance(1000)  # b's session ends; a heartbeated 1 s ago
    assert set(h.g.members) == {"a"}
    assert h.g.group_epoch == epoch + 1
    assert "b" not in h.g.target
    clients.drop("b")
    clients.settle()
    assert clients.owned["a"] == {ORDERS: frozenset(range(6))}
    assert (SESSION_TIMER, GROUP, "b") not in h.ctx.timers


def test_session_expiry_of_the_last_member_leaves_an_empty_group() -> None:
    h = Harness()
    h.join("a")
    h.advance(SESSION_MS)
    assert h.g.state == "Empty" and h.g.is_empty()
    assert h.g.group_epoch == 2
    assert h.g.subscription_metadata == {}


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a")
    clients.join("b")
    a = h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),))
    assert h.g.members["a"].state == UNREVOKED_PARTITIONS
    assert a.member_epoch == 1
    deadline = h.ctx.timers.deadline((REBALANCE_TIMER, GROUP, "a"))
    assert deadline == h.ctx.now_ms + REBALANCE_MS
    # a keeps its session alive but never lets 3-5 go.
    for _ in range(3):
        h.advance(10_000 - 1)
        h.send("a", 1, owned=(tp(ORDERS, 0, 1, 2, 3, 4, 5),))
    h.advance(3)
    assert "a" not in h.g.members
    assert h.send("a", 1, owned=()).error_code == ErrorCode.unknown_member_id
    clients.drop("a")
    clients.settle()
    assert clients.owned["b"] == {ORDERS: frozenset(range(6))}


def test_rebalance_timer_is_cancelled_once_the_member_revoked() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a")
    clients.join("b")
    clients.beat("a")
    assert (REBALANCE_TIMER, GROUP, "a") in h.ctx.timers
    clients.beat("a")
    assert (REBALANCE_TIMER, GROUP, "a") not in h.ctx.timers
    assert on_timer(h.g, (REBALANCE_TIMER, GROUP, "a"), h.ctx) == []
    assert on_timer(h.g, (SESSION_TIMER, GROUP, "gone"), h.ctx) == []


# Leaving.


def test_leave_removes_the_member_and_bumps_the_epoch() -> None:
    h = Harness(topics(orders=6, payments=2))
    clients = Clients(h)
    clients.join("a")
    clients.join("b", ("orders", "payments"))
    clients.settle()
    epoch = h.g.group_epoch
    response = h.send("b", -1)
    assert (response.error_code, response.member_id, response.member_epoch) == \
        (ErrorCode.none, "b", -1)
    assert h.last_records[:3] == [
        (ConsumerGroupCurrentMemberAssignmentKey(GROUP, "b"), None),
        (ConsumerGroupTargetAssignmentMemberKey(GROUP, "b"), None),
        (ConsumerGroupMemberMetadataKey(GROUP, "b"), None),
    ]
    # payments is no longer subscribed: new topic metadata, then the epoch bump.
    assert h.last_records[3] == (
        ConsumerGroupPartitionMetadataKey(GROUP),
        ConsumerGroupPartitionMetadataValue((h.g.subscription_metadata["orders"],)),
    )
    assert h.last_records[4] == (ConsumerGroupMetadataKey(GROUP),
                                 ConsumerGroupMetadataValue(epoch + 1))
    assert set(h.g.members) == {"a"}
    assert not any(key[2] == "b" for key in _timer_keys(h))
    assert h.send("b", -1).error_code == ErrorCode.unknown_member_id


def _timer_keys(h: Harness) -> list[TimerKey]:
    keys = [(kind, GROUP, m) for kind in (SESSION_TIMER, REBALANCE_TIMER) for m in "abcdxyz"]
    return [key for key in keys if key in h.ctx.timers]


def test_static_member_leaves_and_its_replacement_takes_over_without_rebalance() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("s1", instance_id="i1", assignor="range")
    clients.join("b", assignor="range")
    clients.settle()
    before = dict(clients.owned["s1"])
    assert before == {ORDERS: frozenset({3, 4, 5})}
    epoch = h.g.group_epoch

    left = h.send("s1", -2, instance_id="i1")
    assert (left.error_code, left.member_id, left.member_epoch) == (ErrorCode.none, "s1", -2)
    clients.drop("s1")
    assert h.last_records == [(
        ConsumerGroupCurrentMemberAssignmentKey(GROUP, "s1"),
        ConsumerGroupCurrentMemberAssignmentValue(-2, 1, STABLE, to_topic_partitions(before), ()),
    )]
    assert h.g.group_epoch == epoch
    assert h.g.members["s1"].assigned == before  # reserved for the instance

    # The instance's partitions are not handed to b while it is away.
    clients.settle()
    assert clients.owned["b"] == {ORDERS: frozenset({0, 1, 2})}

    rejoined = clients.join("s2", instance_id="i1", assignor="range")
    assert (rejoined.error_code, rejoined.member_epoch) == (ErrorCode.none, epoch)
    assert from_topic_partitions(rejoined.assignment or ()) == before
    assert h.g.group_epoch == epoch
    assert set(h.g.members) == {"s2", "b"}
    assert h.g.static_member("i1") == h.g.members["s2"]
    assert h.g.target["s2"] == before and "s1" not in h.g.target
    assert h.g.state == "Stable"
    # s1's session timer fires later and finds nothing to fence.
    h.advance(SESSION_MS - 1)
    clients.settle(1)
    h.advance(1)
    assert set(h.g.members) == {"s2", "b"}


def test_static_member_that_stays_away_is_fenced_at_session_expiry() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("s1", instance_id="i1")
    clients.join("b")
    clients.settle()
    h.send("s1", -2, instance_id="i1")
    clients.drop("s1")
    epoch = h.g.group_epoch
    h.advance(SESSION_MS // 2)
    clients.beat("b")
    h.advance(SESSION_MS // 2)
    assert set(h.g.members) == {"b"} and h.g.group_epoch == epoch + 1
    clients.settle()
    assert clients.owned["b"] == {ORDERS: frozenset(range(6))}


def test_static_membership_errors() -> None:
    h = Harness()
    h.join("s1", instance_id="i1")
    unreleased = h.join("s2", instance_id="i1")
    assert unreleased.error_code == ErrorCode.unreleased_instance_id
    fenced = h.send("s2", 1, instance_id="i1", owned=())
    assert fenced.error_code == ErrorCode.fenced_instance_id
    assert h.send("s2", -2, instance_id="i1").error_code == ErrorCode.fenced_instance_id
    unknown = h.send("s9", 1, instance_id="i9", owned=())
    assert (unknown.error_code, unknown.error_message) == (
        ErrorCode.unknown_member_id, "Instance id i9 is unknown.")
    assert h.send("s1", -2, instance_id="i9").error_code == ErrorCode.unknown_member_id
    assert h.send("s1", -1, instance_id="i1").member_epoch == -1
    assert h.g.members == {}


# Topic metadata and regexes.


def test_topic_creation_and_growth_bump_the_group_epoch() -> None:
    view = topics(orders=2)
    h = Harness(view)
    clients = Clients(h)
    clients.join("a", ("orders", "payments"))
    assert set(h.g.subscription_metadata) == {"orders"}
    assert h.g.group_epoch == 1
    assert clients.beat("a").assignment is None
    assert h.last_records == []

    put_topic(view, "payments", PAYMENTS, 2)
    response = clients.beat("a")
    assert h.g.group_epoch == 2
    assert set(h.g.subscription_metadata) == {"orders", "payments"}
    assert (ConsumerGroupPartitionMetadataKey(GROUP),
            ConsumerGroupPartitionMetadataValue(tuple(h.g.subscription_metadata.values()))) \
        in h.last_records
    assert from_topic_partitions(response.assignment or ()) == {
        ORDERS: frozenset({0, 1}), PAYMENTS: frozenset({0, 1})}

    put_topic(view, "orders", ORDERS, 3)
    records = refresh_metadata(h.g, h.ctx)
    h.apply(records)
    assert [type(key).__name__ for key, _ in records] == [
        "ConsumerGroupPartitionMetadataKey", "ConsumerGroupMetadataKey"]
    assert (h.g.group_epoch, h.g.state) == (3, "Assigning")
    assert refresh_metadata(h.g, h.ctx) == []
    assert partitions(clients.beat("a")) == {0, 1, 2}

    delete_topic(view, "payments")
    assert PAYMENTS not in from_topic_partitions(clients.beat("a").assignment or ())
    assert h.g.group_epoch == 4


def test_regex_subscription_resolves_against_topic_names() -> None:
    view = topics(orders=2, payments=1, __consumer_offsets=50)
    h = Harness(view)
    clients = Clients(h)
    response = clients.join("a", names=(), regex="pay.*|__.*")
    assert from_topic_partitions(response.assignment or ()) == {PAYMENTS: frozenset({0})}
    assert h.g.regexes == {"pay.*|__.*": ConsumerGroupRegularExpressionValue(
        ("payments",), 0, h.ctx.now_ms)}
    assert h.g.subscribed_topic_names() == {"payments"}
    assert h.g.members["a"].subscribed_topic_regex == "pay.*|__.*"

    # `fullmatch`: "prepayments" does not match; "payments-eu" does, and bumps the epoch.
    put_topic(view, "prepayments", "00000000-0000-4000-8000-0000000000f1", 1)
    assert clients.beat("a").assignment is None
    eu = "00000000-0000-4000-8000-0000000000f2"
    put_topic(view, "payments-eu", eu, 2)
    epoch = h.g.group_epoch
    response = clients.beat("a")
    assert h.g.group_epoch == epoch + 1
    assert from_topic_partitions(response.assignment or ()) == {
        PAYMENTS: frozenset({0}), eu: frozenset({0, 1})}

    # Switching to names drops the regex and its record.
    response = h.send("a", clients.epoch["a"], names=("orders",), regex="",
                      owned=to_topic_partitions(clients.owned["a"]))
    assert (ConsumerGroupRegularExpressionKey(GROUP, "pay.*|__.*"), None) in h.last_records
    assert h.g.regexes == {} and h.g.members["a"].subscribed_topic_regex is None
    assert h.g.subscribed_topic_names() == {"orders"}


def test_invalid_regex_is_refused() -> None:
    h = Harness()
    response = h.join("a", names=(), regex="pay(")
    assert response.error_code == ErrorCode.invalid_regular_expression
    assert h.group is None


# Validation.


@pytest.mark.parametrize(("changes", "error", "message"), [
    ({"group_id": " "}, ErrorCode.invalid_request, "GroupId can't be empty."),
    ({"member_id": ""}, ErrorCode.invalid_request, "MemberId can't be empty."),
    ({"instance_id": ""}, ErrorCode.invalid_request, "InstanceId can't be empty."),
    ({"rack_id": " "}, ErrorCode.invalid_request, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, ErrorCode.invalid_request,
     "RebalanceTimeoutMs must be provided in first request."),
    ({"owned": None}, ErrorCode.invalid_request,
     "TopicPartitions must be empty when (re-)joining."),
    ({"owned": (tp(ORDERS, 0),)}, ErrorCode.invalid_request,
     "TopicPartitions must be empty when (re-)joining."),
    ({"names": None}, ErrorCode.invalid_request,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ({"assignor": "sticky"}, ErrorCode.unsupported_assignor,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
])
def test_join_validation(changes: dict[str, object], error: ErrorCode, message: str) -> None:
    h = Harness()
    request: dict[str, object] = {"names": ("orders",), "owned": (),
                                  "rebalance_timeout_ms": REBALANCE_MS}
    request.update(changes)
    member_id = str(request.pop("member_id", "a"))
    response = h.send(member_id, 0, **request)  # type: ignore[arg-type]
    assert (response.error_code, response.error_message) == (error, message)
    assert (response.member_id, response.heartbeat_interval_ms, response.assignment) == \
        (None, 0, None)


@pytest.mark.parametrize("subscription", [{"names": ()}, {"names": None, "regex": ""}])
def test_a_member_may_join_subscribed_to_nothing(subscription: dict[str, object]) -> None:
    """Kafka 4 accepts an empty list or regex; its Java consumer joins so while its pattern
    matches no topic yet."""
    h = Harness()
    response = h.send("a", 0, owned=(), rebalance_timeout_ms=REBALANCE_MS,
                      **subscription)  # type: ignore[arg-type]
    assert response.error_code == ErrorCode.none
    assert response.member_epoch == 1
    assert response.assignment == ()


def test_epoch_validation() -> None:
    h = Harness()
    assert h.send("a", -2).error_message == "InstanceId can't be null."
    assert h.send("a", -3).error_message == "MemberEpoch is invalid."
    assert h.send("", 4, version=0).error_message == "MemberId can't be empty."
    assert h.send("", -1, version=0).error_message == "MemberId can't be empty."


def test_version_0_join_gets_a_member_id_from_the_coordinator() -> None:
    h = Harness()
    response = h.send("", 0, names=("orders",), owned=(), rebalance_timeout_ms=REBALANCE_MS,
                      version=0)
    assert response.error_code == ErrorCode.none
    expected = GroupContext(0, h.ctx.topics, h.ctx.config, Timers(),
                            random.Random(7)).new_member_id()
    assert response.member_id == expected
    assert set(h.g.members) == {expected}


def test_group_max_size() -> None:
    h = Harness(consumer_max_size=2)
    h.join("a")
    h.join("b")
    full = h.join("c")
    assert full.error_code == ErrorCode.group_max_size_reached
    assert full.error_message == "The consumer group has reached its maximum capacity of 2 members."
    assert h.send("a", 1, owned=()).error_code == ErrorCode.none


def test_server_assignor_preference_and_describe() -> None:
    h = Harness(topics(orders=2))
    h.join("a", assignor="range", rack_id="r1")
    h.join("b", instance_id="i-b")
    described = h.g.describe(h.ctx.topics)
    assert described["assignor_name"] == "range"
    assert {k: described[k] for k in ("group_id", "group_state", "group_epoch",
                                      "assignment_epoch", "error_code", "error_message",
                                      "authorized_operations")} == {
        "group_id": GROUP, "group_state": "Reconciling", "group_epoch": 2,
        "assignment_epoch": 2, "error_code": ErrorCode.none, "error_message": None,
        "authorized_operations": -2147483648}
    a, b = described["members"]
    assert (a["member_id"], a["rack_id"], a["instance_id"], a["member_epoch"]) == \
        ("a", "r1", None, 1)
    assert a["assignment"]["topic_partitions"][0]["topic_name"] == "orders"
    assert str(a["assignment"]["topic_partitions"][0]["topic_id"]) == ORDERS
    assert a["assignment"]["topic_partitions"][0]["partitions"] == [0, 1]
    assert a["target_assignment"]["topic_partitions"][0]["partitions"] == [0]
    assert (b["instance_id"], b["subscribed_topic_names"], b["subscribed_topic_regex"],
            b["member_type"], b["client_id"], b["client_host"]) == \
        ("i-b", ["orders"], None, 1, "client", "/10.0.0.1")
    assert ConsumerGroup("x").describe(h.ctx.topics, "uniform")["assignor_name"] == "uniform"


# Offsets.


def test_validate_offset_commit_and_fetch() -> None:
    h = Harness()
    h.join("a")
    group = h.g
    group.validate_offset_commit("a", None, 1)
    with pytest.raises(GroupError) as stale:
        group.validate_offset_commit("a", None, 2)
    assert stale.value.error_code == ErrorCode.stale_member_epoch
    with pytest.raises(GroupError) as unknown:
        group.validate_offset_commit("zz", None, 1)
    assert unknown.value.error_code == ErrorCode.unknown_member_id
    with pytest.raises(GroupError) as admin:
        group.validate_offset_commit("", None, -1)
    assert admin.value.error_code == ErrorCode.unknown_member_id
    group.validate_offset_fetch(None, -1)
    group.validate_offset_fetch("a", 1)
    with pytest.raises(GroupError) as fetch_stale:
        group.validate_offset_fetch("a", 0)
    assert fetch_stale.value.error_code == ErrorCode.stale_member_epoch
    h.send("a", -1)
    h.g.validate_offset_commit("", None, -1)
    assert h.g.subscribed_topic_names() == set()


def test_subscribed_topic_names_include_regex_matches() -> None:
    h = Harness(topics(orders=1, payments=1, refunds=1))
    h.join("a", names=("orders",))
    h.join("b", names=(), regex="ref.*")
    assert h.g.subscribed_topic_names() == {"orders", "refunds"}


# Replay.


def replayed(records: list[Record]) -> ConsumerGroup:
    group = ConsumerGroup(GROUP)
    for key, value in records:
        group.replay(key, value)
    return group


def compacted(records: list[Record]) -> list[Record]:
    """What `__consumer_offsets` holds after compaction: the last value of each key, in the
    order of those last writes, tombstones gone."""
    last = {key: (index, value) for index, (key, value) in enumerate(records)}
    return [(key, value) for key, (_, value) in sorted(last.items(), key=lambda kv: kv[1][0])
            if value is not None]


def test_replay_equivalence_and_deletion() -> None:
    view = topics(orders=6, payments=3)
    h = Harness(view)
    clients = Clients(h)
    clients.join("a", assignor="range")
    clients.join("b", ("orders", "payments"))
    clients.join("s", instance_id="i", regex="pay.*", names=())
    clients.settle(2)
    h.send("s", -2, instance_id="i")
    clients.drop("s")
    clients.join("s2", instance_id="i", regex="pay.*", names=())
    put_topic(view, "payments", PAYMENTS, 4)
    clients.beat("a")
    h.send("b", -1)
    clients.drop("b")
    clients.settle(2)

    served = h.g
    assert replayed(h.log) == served
    assert replayed(compacted(h.log)) == served
    assert replayed(h.log).owner(ORDERS, 0) == served.owner(ORDERS, 0) is not None
    assert served != replayed(h.log[:-1])

    tombstones = served.deletion_records()
    assert tombstones[-1] == (ConsumerGroupMetadataKey(GROUP), None)
    assert all(value is None for _, value in tombstones)
    deleted = replayed(h.log + tombstones)
    assert (deleted.members, deleted.target, deleted.regexes, deleted.subscription_metadata) == \
        ({}, {}, {}, {})
    assert (deleted.group_epoch, deleted.assignment_epoch) == (0, -1)
    assert compacted(h.log + tombstones) == []


def test_loading_schedules_sessions_and_unfinished_revocations() -> None:
    h = Harness()
    clients = Clients(h)
    clients.join("a")
    clients.join("b")
    clients.beat("a")  # a now revokes 3-5
    loaded = replayed(h.log)
    h.ctx.timers = Timers()
    h.ctx.now_ms += 5
    schedule_loaded_timers(loaded, h.ctx)
    now = h.ctx.now_ms
    assert {key: h.ctx.timers.deadline(key) for key in _timer_keys(h)} == {
        (SESSION_TIMER, GROUP, "a"): now + SESSION_MS,
        (SESSION_TIMER, GROUP, "b"): now + SESSION_MS,
        (REBALANCE_TIMER, GROUP, "a"): now + REBALANCE_MS,
    }


def test_replay_refuses_a_partition_with_two_owners() -> None:
    group = ConsumerGroup(GROUP)
    value = ConsumerGroupCurrentMemberAssignmentValue(1, 0, STABLE, (), (tp(ORDERS, 0),))
    group.replay(ConsumerGroupCurrentMemberAssignmentKey(GROUP, "a"), value)
    assert group.owner(ORDERS, 0) == "a"
    with pytest.raises(ValueError, match="still owned by a"):
        group.replay(ConsumerGroupCurrentMemberAssignmentKey(GROUP, "b"), value)


def test_replay_of_assignment_epoch_and_target_records() -> None:
    group = replayed([
        (ConsumerGroupMetadataKey(GROUP), ConsumerGroupMetadataValue(4)),
        (ConsumerGroupTargetAssignmentMetadataKey(GROUP),
         ConsumerGroupTargetAssignmentMetadataValue(3)),
    ])
    assert (group.group_epoch, group.assignment_epoch, group.state) == (4, 3, "Empty")


# Random sequences.

CLIENT_SUBSCRIPTIONS: list[tuple[tuple[str, ...], str | None]] = [
    (("orders",), None), (("orders", "payments"), None), ((), "pay.*"), (("payments",), None),
]
Op = tuple[str, int]


@st.composite
def operations(draw: st.DrawFn) -> list[Op]:
    kinds = st.sampled_from(["join", "join", "beat", "beat", "beat", "beat", "leave",
                             "static_leave", "bounce", "bounce", "crash", "tick", "grow",
                             "refresh"])
    return draw(st.lists(st.tuples(kinds, st.integers(0, len(CLIENT_SUBSCRIPTIONS) - 1)),
                         max_size=60))


@settings(max_examples=200, deadline=None)
@given(ops=operations(), assignor=st.sampled_from(["uniform", "range"]), lazy=st.booleans())
def test_random_sequences_never_give_a_partition_to_two_members(
    ops: list[Op], assignor: str, lazy: bool
) -> None:
    view = topics(orders=4, payments=2)
    h = Harness(view)
    clients = Clients(h, lazy)
    generation = [0] * len(CLIENT_SUBSCRIPTIONS)
    active: dict[int, str] = {}

    def member_of(i: int) -> str:
        return f"m{i}-{generation[i]}"

    def forget_fenced() -> None:
        for i, member_id in list(active.items()):
            if h.group is None or member_id not in h.g.members:
                clients.drop(member_id)
                del active[i]
                generation[i] += 1

    for kind, i in ops:
        instance_id = f"i{i}" if i < 2 else None
        if kind == "bounce" and i in active and instance_id is not None:
            # A rolling restart: the static member leaves and its successor joins at once.
            assert h.send(active[i], -2, instance_id=instance_id).member_epoch == -2
            clients.drop(active.pop(i))
            generation[i] += 1
            kind = "join"
        if kind == "join" and i not in active:
            names, regex = CLIENT_SUBSCRIPTIONS[i]
            response = clients.join(member_of(i), names, regex=regex, instance_id=instance_id,
                                    assignor=assignor)
            if response.error_code == ErrorCode.none:
                active[i] = member_of(i)
            else:
                assert response.error_code == ErrorCode.unreleased_instance_id
        elif kind == "beat" and i in active:
            clients.beat(active[i])
        elif kind == "leave" and i in active:
            assert h.send(active[i], -1, instance_id=instance_id).member_epoch == -1
            clients.drop(active.pop(i))
            generation[i] += 1
        elif kind == "static_leave" and i in active and instance_id is not None:
            assert h.send(active[i], -2, instance_id=instance_id).member_epoch == -2
            clients.drop(active.pop(i))
            generation[i] += 1
        elif kind == "crash" and i in active:
            clients.drop(active.pop(i))
            generation[i] += 1
        elif kind == "tick":
            h.advance([1_000, 10_000, 30_000, 50_000][i])
        elif kind == "grow":
            put_topic(view, "payments", PAYMENTS, view.topics["payments"].partitions + 1)
        elif kind == "refresh" and h.group is not None:
            h.apply(refresh_metadata(h.g, h.ctx))
        forget_fenced()
        if h.group is not None:
            clients.check()

    # Every live client heartbeats every 10 s: the departed expire and the group settles.
    for _ in range(7):
        h.advance(10_000)
        forget_fenced()
        clients.settle(1)
    clients.settle(3)
    if h.group is None:
        return
    group = h.g
    assert set(group.members) == set(active.values())
    assert replayed(h.log) == group
    assert replayed(compacted(h.log)) == group
    if not active:
        assert group.state == "Empty"
        return
    assert group.state == "Stable"
    everything = {(t.topic_id, p) for t in group.subscription_metadata.values()
                  for p in range(t.num_partitions)}
    held = {(t, p) for m in group.members.values() for t, ps in m.assigned.items() for p in ps}
    assert held == everything
    for member_id in active.values():
        assert clients.owned[member_id] == group.members[member_id].assigned
        assert group.members[member_id].assigned == group.target[member_id]
