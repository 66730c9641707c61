"""The uniform and range assignors of KIP-848 groups: Kafka's cases and general properties."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.group.assignors import (
    ASSIGNORS,
    GroupAssignment,
    MemberSubscription,
    RangeAssignor,
    UniformAssignor,
)

T1, T2, T3, T4, GONE = (str(uuid.UUID(int=i)) for i in range(1, 6))
UNIFORM = UniformAssignor()
RANGE = RangeAssignor()


def sub(*topic_ids: str, **assigned: list[int]) -> MemberSubscription:
    """A subscription; keyword arguments name the current assignment as t1=[...], t2=[...]."""
    ids = {"t1": T1, "t2": T2, "t3": T3, "t4": T4, "gone": GONE}
    return MemberSubscription(
        None,
        frozenset(topic_ids),
        {ids[name]: frozenset(ps) for name, ps in assigned.items()},
    )


def parts(**assigned: list[int]) -> dict[str, frozenset[int]]:
    return dict(sub(**assigned).assigned)


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def owners(result: GroupAssignment) -> dict[tuple[str, int], str]:
    return {(t, p): m for m, a in result.items() for t, ps in a.items() for p in ps}


def resubscribe(
    result: GroupAssignment, subscriptions: Mapping[str, frozenset[str]]
) -> dict[str, MemberSubscription]:
    """Members whose current assignment is `result` (none for members new to it)."""
    return {m: MemberSubscription(None, s, result.get(m, {})) for m, s in subscriptions.items()}


def assert_valid(
    members: Mapping[str, MemberSubscription], topics: Mapping[str, int], result: GroupAssignment
) -> None:
    """Every member answered; each partition of a subscribed topic owned by exactly one of its
    subscribers; nothing else assigned."""
    assert set(result) == set(members)
    seen: list[tuple[str, int]] = []
    for member_id, assignment in result.items():
        for topic_id, partitions in assignment.items():
            assert partitions, "empty topic entries are left out"
            assert topic_id in members[member_id].subscribed_topic_ids
            seen.extend((topic_id, p) for p in partitions)
    subscribed = set().union(*(s.subscribed_topic_ids for s in members.values())) & set(topics)
    expected = [(t, p) for t in subscribed for p in range(topics[t])]
    assert sorted(seen) == sorted(expected)


def test_registry_names_both_assignors() -> None:
    assert set(ASSIGNORS) == {"uniform", "range"}
    assert all(name == assignor.name for name, assignor in ASSIGNORS.items())


@pytest.mark.parametrize("assignor", [UNIFORM, RANGE], ids=["uniform", "range"])
def test_no_members_no_assignment(assignor: UniformAssignor | RangeAssignor) -> None:
    assert assignor.assign({}, {T1: 3}) == {}


@pytest.mark.parametrize("assignor", [UNIFORM, RANGE], ids=["uniform", "range"])
def test_deleted_and_unsubscribed_topics_are_ignored(
    assignor: UniformAssignor | RangeAssignor,
) -> None:
    members = {"A": sub(T1, GONE, gone=[0], t2=[0]), "B": sub(GONE)}
    result = assignor.assign(members, {T1: 2, T2: 2})
    assert result == {"A": parts(t1=[0, 1]), "B": {}}


# --- uniform, identical subscriptions ---------------------------------------------------------


def test_uniform_homogeneous_first_assignment_is_balanced() -> None:
    members = {m: sub(T1, T2) for m in "ABC"}
    result = UNIFORM.assign(members, {T1: 7, T2: 3})
    assert_valid(members, {T1: 7, T2: 3}, result)
    assert sorted(sizes(result).values()) == [3, 3, 4]


def test_uniform_homogeneous_new_member_takes_only_the_excess() -> None:
    members = {"A": sub(T1, t1=[0, 1, 2]), "B": sub(T1, t1=[3, 4, 5]), "C": sub(T1)}
    assert UNIFORM.assign(members, {T1: 6}) == {
        "A": parts(t1=[0, 1]),
        "B": parts(t1=[3, 4]),
        "C": parts(t1=[2, 5]),
    }


def test_uniform_homogeneous_keeps_an_assignment_already_balanced() -> None:
    # Kafka hands out the extra quota in member order and could move a partition from B to A.
    members = {"A": sub(T1, t1=[0, 1]), "B": sub(T1, t1=[2, 3, 4])}
    assert UNIFORM.assign(members, {T1: 5}) == {"A": parts(t1=[0, 1]), "B": parts(t1=[2, 3, 4])}


def test_uniform_homogeneous_drops_partitions_that_no_longer_exist() -> None:
    members = {"A": sub(T1, t1=[0, 1, 7]), "B": sub(T1, t1=[1, 2])}
    # Partition 7 is out of range; partition 1, claimed twice, stays with A.
    assert UNIFORM.assign(members, {T1: 4}) == {"A": parts(t1=[0, 1]), "B": parts(t1=[2, 3])}


# --- uniform, different subscriptions (Kafka's UniformHeterogeneousAssignmentBuilderTest) ------


def test_uniform_heterogeneous_first_assignment_two_members_two_topics() -> None:
    members = {"A": sub(T1, T3), "B": sub(T3)}
    assert UNIFORM.assign(members, {T1: 3, T3: 6}) == {
        "A": parts(t1=[0, 1, 2], t3=[4]),
        "B": parts(t3=[0, 1, 2, 3, 5]),
    }


def test_uniform_heterogeneous_more_members_than_partitions() -> None:
    members = {"A": sub(T3), "B": sub(T3), "C": sub(T1)}
    assert UNIFORM.assign(members, {T3: 1, T1: 2}) == {
        "A": parts(t3=[0]),
        "B": {},
        "C": parts(t1=[0, 1]),
    }


def test_uniform_heterogeneous_rebalances_an_unbalanced_assignment() -> None:
    members = {
        "A": sub(T1, t1=[0, 1, 2]),
        "B": sub(T1, T2, t1=[3], t2=[0]),
        "C": sub(T1, T2, T3, t1=[4, 5], t2=[1, 2, 3], t3=[0, 1, 2, 3]),
    }
    assert UNIFORM.assign(members, {T1: 6, T2: 4, T3: 4}) == {
        "A": parts(t1=[0, 1, 2, 5]),
        "B": parts(t1=[3], t2=[0, 1, 2, 3]),
        "C": parts(t1=[4], t3=[0, 1, 2, 3]),
    }


def test_uniform_heterogeneous_member_and_partitions_added() -> None:
    members = {
        "A": sub(T1, t1=[0, 2], t2=[0]),
        "B": sub(T1, T2, t1=[1], t2=[1, 2]),
        "C": sub(T1, T2),
    }
    assert UNIFORM.assign(members, {T1: 6, T2: 7}) == {
        "A": parts(t1=[0, 2, 3, 4, 5]),
        "B": parts(t1=[1], t2=[1, 2, 6]),
        "C": parts(t2=[0, 3, 4, 5]),
    }


def test_uniform_heterogeneous_subscription_removed() -> None:
    members = {"A": sub(T1, t1=[0, 2], t2=[1, 3]), "B": sub(T1, T2, t1=[1], t2=[0, 2, 4])}
    assert UNIFORM.assign(members, {T1: 3, T2: 5}) == {
        "A": parts(t1=[0, 1, 2]),
        "B": parts(t2=[0, 1, 2, 3, 4]),
    }


def test_uniform_heterogeneous_stops_when_a_topic_runs_out_of_partitions_to_move() -> None:
    # Kafka forces its heterogeneous builder here; C, subscribed to nothing, does it for us.
    members = {"A": sub(T1, T2, T3, t1=[0, 1], t2=[0, 1], t3=[0, 1]), "B": sub(T1, T2, T3)}
    members["C"] = sub()
    assert UNIFORM.assign(members, {T1: 2, T2: 2, T3: 2}) == {
        "A": parts(t2=[0], t3=[0, 1]),
        "B": parts(t1=[0, 1], t2=[1]),
        "C": {},
    }


# --- range (Kafka's RangeAssignorTest) ----------------------------------------------------------


def test_range_same_subscriptions() -> None:
    members = {"A": sub(T1, T3), "B": sub(T1, T3)}
    assert RANGE.assign(members, {T1: 3, T3: 2}) == {
        "A": parts(t1=[0, 1], t3=[0]),
        "B": parts(t1=[2], t3=[1]),
    }


def test_range_different_subscriptions() -> None:
    members = {"A": sub(T1, T2), "B": sub(T3), "C": sub(T2, T3)}
    assert RANGE.assign(members, {T1: 3, T2: 3, T3: 2}) == {
        "A": parts(t1=[0, 1, 2], t2=[0, 1]),
        "B": parts(t3=[0]),
        "C": parts(t2=[2], t3=[1]),
    }


def test_range_more_members_than_partitions() -> None:
    members = {m: sub(T1, T3) for m in "ABC"}
    assert RANGE.assign(members, {T1: 3, T3: 2}) == {
        "A": parts(t1=[0], t3=[0]),
        "B": parts(t1=[1], t3=[1]),
        "C": parts(t1=[2]),
    }


def test_range_orders_by_member_id_and_ignores_the_current_assignment() -> None:
    members = {"b": sub(T1, t1=[0, 1]), "a": sub(T1, t1=[2])}
    assert RANGE.assign(members, {T1: 3}) == {"a": parts(t1=[0, 1]), "b": parts(t1=[2])}


# --- properties -------------------------------------------------------------------------------

TOPIC_POOL = [T1, T2, T3, T4, GONE]
MEMBER_POOL = ["m0", "m1", "m2", "m3", "m4", "m5", "m6"]

topics_strategy = st.dictionaries(
    st.sampled_from([T1, T2, T3, T4]), st.integers(1, 12), min_size=1, max_size=4
)
current_strategy = st.dictionaries(
    st.sampled_from(TOPIC_POOL), st.frozensets(st.integers(0, 14), max_size=8), max_size=4
)
subscription_strategy = st.builds(
    MemberSubscription,
    st.none(),
    st.frozensets(st.sampled_from(TOPIC_POOL), max_size=5),
    current_strategy,
)
members_strategy = st.dictionaries(st.sampled_from(MEMBER_POOL), subscription_strategy)


@st.composite
def homogeneous_groups(draw: st.DrawFn) -> tuple[dict[str, MemberSubscription], dict[str, int]]:
    topics = draw(topics_strategy)
    subscribed = draw(st.frozensets(st.sampled_from(TOPIC_POOL), min_size=1))
    member_ids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, unique=True))
    members = {m: MemberSubscription(None, subscribed, draw(current_strategy)) for m in member_ids}
    return members, topics


@given(members=members_strategy, topics=topics_strategy)
@settings(max_examples=300)
def test_every_subscribed_partition_has_exactly_one_subscribed_owner(
    members: dict[str, MemberSubscription], topics: dict[str, int]
) -> None:
    for assignor in (UNIFORM, RANGE):
        assert_valid(members, topics, assignor.assign(members, topics))


@given(members=members_strategy, topics=topics_strategy)
def test_assignment_is_deterministic(
    members: dict[str, MemberSubscription], topics: dict[str, int]
) -> None:
    reordered = dict(reversed(members.items()))
    reordered_topics = dict(reversed(topics.items()))
    for assignor in (UNIFORM, RANGE):
        assert assignor.assign(members, topics) == assignor.assign(reordered, reordered_topics)


@given(group=homogeneous_groups())
def test_uniform_identical_subscriptions_differ_by_at_most_one(
    group: tuple[dict[str, MemberSubscription], dict[str, int]],
) -> None:
    members, topics = group
    counts = sizes(UNIFORM.assign(members, topics)).values()
    assert max(counts) - min(counts) <= 1


@given(members=members_strategy, topics=topics_strategy)
@settings(max_examples=300)
def test_uniform_no_topic_can_improve_balance(
    members: dict[str, MemberSubscription], topics: dict[str, int]
) -> None:
    """No partition could move to another subscriber of its topic and narrow the gap."""
    result = UNIFORM.assign(members, topics)
    count = sizes(result)
    for (topic_id, _), owner in owners(result).items():
        for member_id, subscription in members.items():
            if topic_id in subscription.subscribed_topic_ids:
                assert count[owner] - count[member_id] <= 1


@given(members=members_strategy, topics=topics_strategy)
def test_uniform_is_stable_on_its_own_output(
    members: dict[str, MemberSubscription], topics: dict[str, int]
) -> None:
    first = UNIFORM.assign(members, topics)
    again = resubscribe(first, {m: s.subscribed_topic_ids for m, s in members.items()})
    assert UNIFORM.assign(again, topics) == first


@given(group=homogeneous_groups(), newcomer=st.sampled_from(["a", "n", "z"]))
def test_uniform_new_member_takes_partitions_only_from_others(
    group: tuple[dict[str, MemberSubscription], dict[str, int]], newcomer: str
) -> None:
    members, topics = group
    subscribed = next(iter(members.values())).subscribed_topic_ids
    before = UNIFORM.assign(members, topics)
    grown = resubscribe(before, {m: subscribed for m in members} | {newcomer: subscribed})
    after = UNIFORM.assign(grown, topics)
    moved = {tp for tp, owner in owners(after).items() if owners(before)[tp] != owner}
    assert all(owners(after)[tp] == newcomer for tp in moved)
    total = sum(topics[t] for t in subscribed if t in topics)
    assert len(moved) == total // len(grown)


@given(group=homogeneous_groups(), data=st.data())
def test_uniform_removed_member_moves_only_its_partitions(
    group: tuple[dict[str, MemberSubscription], dict[str, int]], data: st.DataObject
) -> None:
    members, topics = group
    subscribed = next(iter(members.values())).subscribed_topic_ids
    before = UNIFORM.assign(members, topics)
    leaving = data.draw(st.sampled_from(sorted(members)))
    remaining = resubscribe(before, {m: subscribed for m in members if m != leaving})
    if not remaining:
        return
    after = UNIFORM.assign(remaining, topics)
    for member_id in remaining:
        for topic_id, partitions in before[member_id].items():
            assert partitions <= after[member_id].get(topic_id, frozenset())


@given(members=members_strategy, topics=topics_strategy)
def test_range_gives_sorted_subscribers_contiguous_ranges(
    members: dict[str, MemberSubscription], topics: dict[str, int]
) -> None:
    result = RANGE.assign(members, topics)
    for topic_id, count in topics.items():
        subscribers = sorted(m for m, s in members.items() if topic_id in s.subscribed_topic_ids)
        start = 0
        for index, member_id in enumerate(subscribers):
            quota = count // len(subscribers) + (index < count % len(subscribers))
            expected = frozenset(range(start, start + quota))
            assert result[member_id].get(topic_id, frozenset()) == expected
            start += quota
