"""Kafka's share-group SimpleAssignor (`group.share.assignors=simple`), after its
SimpleHomogeneousAssignmentBuilder: balance first, then stickiness.

Several members of a share group may consume one partition together, so when a group has
more members than partitions each partition is shared by `ceil(members / partitions)`
members at most; otherwise each partition goes to one member. Every member gets its desired
count (the counts differ by one at most); partitions a member already has are kept while
that stays balanced. Members that subscribe to different topics (Kafka's heterogeneous case)
are balanced topic by topic over the members subscribing to each topic.

The result is deterministic: members and partitions are taken in sorted order (Kafka's
iterates hash maps, so the two may pick different, equally balanced assignments).
"""

from __future__ import annotations

from collections.abc import Mapping

SIMPLE_ASSIGNOR = "simple"

TopicPartition = tuple[str, int]
MemberAssignment = dict[str, frozenset[int]]


def assign(subscriptions: Mapping[str, frozenset[str]],
           assignable: Mapping[str, frozenset[int]],
           current: Mapping[str, Mapping[str, frozenset[int]]]) -> dict[str, MemberAssignment]:
    """The target assignment: member id -> topic id -> partitions.

    `subscriptions` maps each member to the topic ids it subscribes to; `assignable` maps
    topic ids to the partitions to assign (Kafka's assignable partitions: those whose
    share-partition state is initialized; unknown topics are left out); `current` is the
    previous target assignment."""
    topics_by_members: dict[frozenset[str], set[str]] = {}
    for topic_id in sorted({t for topics in subscriptions.values() for t in topics}):
        if not assignable.get(topic_id):
            continue
        members = frozenset(m for m, topics in subscriptions.items() if topic_id in topics)
        topics_by_members.setdefault(members, set()).add(topic_id)
    homogeneous = len(topics_by_members) == 1
    result: dict[str, MemberAssignment] = {member: {} for member in subscriptions}
    groups = list(topics_by_members.items()) if homogeneous else [
        (members, {topic}) for members, topics in topics_by_members.items() for topic in topics]
    for members, topics in groups:
        targets = [(t, p) for t in sorted(topics) for p in sorted(assignable[t])]
        for member, partitions in _balance(sorted(members), targets, current).items():
            for topic_id, partition in partitions:
                held = result[member].get(topic_id, frozenset())
                result[member][topic_id] = held | {partition}
    return result


def _balance(members: list[str], targets: list[TopicPartition],
             current: Mapping[str, Mapping[str, frozenset[int]]]) -> dict[str, set[TopicPartition]]:
    count = len(targets)
    sharing = -(-len(members) // count)
    slots = sharing * count
    desired = {m: -(-slots * (i + 1) // len(members)) - -(-slots * i // len(members))
               for i, m in enumerate(members)}
    wanted = set(targets)
    held = {m: {(t, p) for t, parts in current.get(m, {}).items() for p in parts} & wanted
            for m in members}
    holders: dict[TopicPartition, set[str]] = {tp: set() for tp in targets}
    for member, partitions in held.items():
        for tp in partitions:
            holders[tp].add(member)

    def drop(member: str, tp: TopicPartition) -> None:
        held[member].discard(tp)
        holders[tp].discard(member)

    # Revoke partitions shared more than desired, from the fullest members first.
    for tp in targets:
        for member in sorted(holders[tp], key=lambda m: (desired[m] - len(held[m]), m)):
            if len(holders[tp]) <= sharing:
                break
            drop(member, tp)
    # Revoke from members holding more than their desired count, most shared first.
    for member in members:
        for tp in sorted(held[member], key=lambda tp: (-len(holders[tp]), tp)):
            if len(held[member]) <= desired[member]:
                break
            drop(member, tp)
    # Hand out what is missing, partitions with the fewest holders first, each to the
    # emptiest member that has room and does not have it yet.
    for tp in sorted(targets, key=lambda tp: len(holders[tp])):
        while len(holders[tp]) < sharing:
            room = [m for m in members if len(held[m]) < desired[m] and m not in holders[tp]]
            if not room:
                break
            member = min(room, key=lambda m: (len(held[m]) - desired[m], m))
            held[member].add(tp)
            holders[tp].add(member)
    return held
