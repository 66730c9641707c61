"""The server-side assignors of KIP-848 consumer groups, after Kafka's group coordinator.

`uniform` balances partition counts across members and keeps partitions where they are when
it can (balance first, then stickiness); `range` gives each topic's subscribers contiguous
ranges of its partitions. Both are pure and deterministic: ties break on member id, topic id
and partition, never on hash or insertion order. Topics absent from `topics` are ignored.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import islice
from typing import Protocol

TopicPartition = tuple[str, int]
GroupAssignment = dict[str, dict[str, frozenset[int]]]

# Kafka's UniformHeterogeneousAssignmentBuilder stops balancing after this many passes over
# the topics; overlapping, non-identical subscriptions may otherwise converge slowly.
_MAX_BALANCE_PASSES = 16


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    rack_id: str | None
    subscribed_topic_ids: frozenset[str]
    assigned: Mapping[str, frozenset[int]]  # current target assignment: topic id -> partitions


class Assignor(Protocol):
    name: str

    def assign(
        self, members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
    ) -> GroupAssignment:
        """Map every member id to its new target assignment (topic id -> partitions)."""
        ...


class UniformAssignor:
    """Kafka's UniformAssignor: a quota-based builder when all members subscribe to the same
    topics, and an assign-then-rebalance builder when subscriptions differ."""

    name = "uniform"

    def assign(
        self, members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
    ) -> GroupAssignment:
        if not members:
            return {}
        subscriptions = _existing_subscriptions(members, topics)
        owners = _current_owners(members, subscriptions, topics)
        if len(set(subscriptions.values())) <= 1:
            owners = _assign_homogeneous(subscriptions, topics, owners)
        else:
            owners = _assign_heterogeneous(subscriptions, topics, owners)
        return _group(members, owners.items())


class RangeAssignor:
    """Kafka's RangeAssignor: per topic, its subscribers sorted by member id get contiguous
    ranges, the first (partitions % subscribers) of them one partition more. Not sticky."""

    name = "range"

    def assign(
        self, members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
    ) -> GroupAssignment:
        subscriptions = _existing_subscriptions(members, topics)
        owners: list[tuple[TopicPartition, str]] = []
        for topic_id, subscribers in _subscribers(subscriptions).items():
            quota, extra = divmod(topics[topic_id], len(subscribers))
            start = 0
            for index, member_id in enumerate(subscribers):
                end = start + quota + (index < extra)
                owners.extend(((topic_id, p), member_id) for p in range(start, end))
                start = end
        return _group(members, owners)


ASSIGNORS: Mapping[str, Assignor] = {
    assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())
}


def _existing_subscriptions(
    members: Mapping[str, MemberSubscription], topics: Mapping[str, int]
) -> dict[str, frozenset[str]]:
    """Each member's subscribed topics that exist, in member id order."""
    return {
        member_id: frozenset(t for t in members[member_id].subscribed_topic_ids if t in topics)
        for member_id in sorted(members)
    }


def _subscribers(subscriptions: Mapping[str, frozenset[str]]) -> dict[str, list[str]]:
    """Topic id -> its subscribers in member id order, topics in id order."""
    topic_ids = sorted(set().union(*subscriptions.values()))
    return {t: [m for m in sorted(subscriptions) if t in subscriptions[m]] for t in topic_ids}


def _current_owners(
    members: Mapping[str, MemberSubscription],
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
) -> dict[TopicPartition, str]:
    """The current assignment that is still valid: partitions that exist, of topics their
    member still subscribes to; a partition claimed twice stays with the smaller member id."""
    owners: dict[TopicPartition, str] = {}
    for member_id, subscribed in subscriptions.items():
        for topic_id, partitions in members[member_id].assigned.items():
            if topic_id in subscribed:
                for p in partitions:
                    if 0 <= p < topics[topic_id]:
                        owners.setdefault((topic_id, p), member_id)
    return owners


def _group(
    members: Mapping[str, MemberSubscription], owners: Iterable[tuple[TopicPartition, str]]
) -> GroupAssignment:
    collected: dict[str, dict[str, set[int]]] = {member_id: {} for member_id in members}
    for (topic_id, partition), member_id in owners:
        collected[member_id].setdefault(topic_id, set()).add(partition)
    return {
        member_id: {topic_id: frozenset(ps) for topic_id, ps in assignment.items()}
        for member_id, assignment in collected.items()
    }


def _assign_homogeneous(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    owners: Mapping[TopicPartition, str],
) -> dict[TopicPartition, str]:
    """Every member gets total // members partitions, total % members of them one more.

    Members keep what they own up to their quota and the rest is dealt out to members under
    theirs. Kafka hands the extra quota out in member iteration order; we give it to the
    members that own the most, so a balanced group never moves more than it must.
    """
    topic_ids = sorted(next(iter(subscriptions.values())))
    held: dict[str, list[TopicPartition]] = {member_id: [] for member_id in subscriptions}
    unassigned: list[TopicPartition] = []
    for tp in ((t, p) for t in topic_ids for p in range(topics[t])):
        owner = owners.get(tp)
        (unassigned if owner is None else held[owner]).append(tp)
    total = sum(topics[t] for t in topic_ids)
    minimum, extra = divmod(total, len(held))
    order = sorted(held, key=lambda m: (-len(held[m]), m))
    quotas = {member_id: minimum + (i < extra) for i, member_id in enumerate(order)}
    for member_id in order:
        unassigned.extend(held[member_id][quotas[member_id] :])
        del held[member_id][quotas[member_id] :]
    pending = iter(unassigned)
    for member_id in order:
        held[member_id].extend(islice(pending, quotas[member_id] - len(held[member_id])))
    return {tp: member_id for member_id, tps in held.items() for tp in tps}


def _assign_heterogeneous(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    owners: Mapping[TopicPartition, str],
) -> dict[TopicPartition, str]:
    """Keep every valid current partition, deal the unowned ones to the least loaded
    subscribers, then move partitions from the most to the least loaded subscriber of each
    topic until no topic improves (or the pass limit is hit)."""
    subscribers = _subscribers(subscriptions)
    owner = dict(owners)
    size = dict.fromkeys(subscriptions, 0)
    for member_id in owner.values():
        size[member_id] += 1

    def topic_order(topic_id: str) -> tuple[Fraction, int, str]:
        # Most partitions per subscriber first, then fewest subscribers, then topic id.
        count = len(subscribers[topic_id])
        return -Fraction(topics[topic_id], count), count, topic_id

    def by_load(topic_id: str) -> list[str]:
        return sorted(subscribers[topic_id], key=lambda m: (size[m], m))

    for topic_id in sorted(subscribers, key=topic_order):
        # Fill the least loaded level in turn; equal loads go in the order loads had at start.
        heap = [(size[m], rank, m) for rank, m in enumerate(by_load(topic_id))]
        for p in range(topics[topic_id]):
            if (topic_id, p) not in owner:
                load, rank, member_id = heapq.heappop(heap)
                owner[topic_id, p] = member_id
                size[member_id] += 1
                heapq.heappush(heap, (load + 1, rank, member_id))

    def balance(topic_id: str) -> int:
        """Move this topic's partitions from the most to the least loaded subscriber while
        their loads differ by more than one. Only partitions a member owned when the topic's
        turn began can leave it, its highest partition first. Returns the number moved."""
        ranked = by_load(topic_id)
        rank = {m: i for i, m in enumerate(ranked)}
        owned: dict[str, list[int]] = {m: [] for m in ranked}
        for p in range(topics[topic_id]):
            owned[owner[topic_id, p]].append(p)
        moved = 0
        while donors := [m for m in ranked if owned[m]]:
            donor = max(donors, key=lambda m: (size[m], rank[m]))
            recipient = min(ranked, key=lambda m: (size[m], rank[m]))
            if size[donor] - size[recipient] <= 1:
                break
            owner[topic_id, owned[donor].pop()] = recipient
            size[donor] -= 1
            size[recipient] += 1
            moved += 1
        return moved

    shared = sorted((t for t in subscribers if len(subscribers[t]) >= 2), key=topic_order)
    last_moved: int | None = None
    for _ in range(_MAX_BALANCE_PASSES):
        for index, topic_id in enumerate(shared):
            if index == last_moved:
                return owner  # a whole pass over the topics moved nothing
            if balance(topic_id) or last_moved is None:
                last_moved = index
    return owner
