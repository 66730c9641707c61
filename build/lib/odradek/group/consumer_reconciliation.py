"""Moving a consumer group member's assignment towards its target (Kafka's
CurrentAssignmentBuilder). It revokes before it assigns: a member gives up partitions at its
old epoch, and a partition still held by another member is only handed out once that member
has released it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from odradek.group.consumer_group import (
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Assignment,
    ConsumerMember,
)
from odradek.group.records import TopicPartitions

OwnerOf = Callable[[str, int], str | None]
"""(topic id, partition) -> the member holding it, or None."""


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              owner: OwnerOf, owned: tuple[TopicPartitions, ...] | None) -> ConsumerMember:
    """The member's next assignment state towards `target`, or the member unchanged.

    `owner(topic_id, partition)` names the member holding a partition, or None; `owned` is
    what the member reported owning (None when it did not say)."""
    if member.state == UNREVOKED_PARTITIONS:
        # Wait until the member stops reporting the partitions it must give up.
        if _owns_any(owned, member.pending_revocation):
            return member
    elif member.state == STABLE and member.member_epoch == target_epoch:
        return member
    return _next_assignment(member, target_epoch, target, owner, owned)


def _owns_any(owned: tuple[TopicPartitions, ...] | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return any(not partitions.get(tp.topic_id, frozenset()).isdisjoint(tp.partitions)
               for tp in owned)


def _next_assignment(member: ConsumerMember, target_epoch: int, target: Assignment,
                     owner: OwnerOf, owned: tuple[TopicPartitions, ...] | None) -> ConsumerMember:
    kept: dict[str, frozenset[int]] = {}
    revoking: dict[str, frozenset[int]] = {}
    gained: dict[str, frozenset[int]] = {}
    unreleased = False
    for topic_id in target.keys() | member.assigned.keys():
        wanted = target.get(topic_id, frozenset())
        held = member.assigned.get(topic_id, frozenset())
        new = wanted - held
        free = frozenset(p for p in new if owner(topic_id, p) is None)
        unreleased = unreleased or len(free) < len(new)
        for assignment, partitions in ((kept, held & wanted), (revoking, held - wanted),
                                       (gained, free)):
            if partitions:
                assignment[topic_id] = partitions
    if revoking and _owns_any(owned, revoking):
        # Revoke first: the member keeps its epoch until it has let the partitions go.
        return replace(member, state=UNREVOKED_PARTITIONS,
                       previous_member_epoch=member.member_epoch, assigned=kept,
                       pending_revocation=revoking)
    for topic_id, partitions in gained.items():
        kept[topic_id] = kept.get(topic_id, frozenset()) | partitions
    return replace(member, state=UNRELEASED_PARTITIONS if unreleased else STABLE,
                   member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned=kept, pending_revocation={})
