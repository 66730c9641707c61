"""Partition reassignment (KIP-455) without IO: the partition states a reassignment moves
through, as Kafka's PartitionReassignmentReplicas and ReplicationControlManager compute them.

Reassigning to target T from replicas R (the original replicas, R minus any replicas still
being added) sets replicas to T followed by R's others, adding = T - R, removing = R - T. The
new replicas fetch from the leader and join the ISR as any follower does; once all of T is
in the ISR the reassignment completes: replicas = T, the ISR loses the removed replicas, and
a leader outside T hands over to a member of T in the ISR. Cancelling goes back to R.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from kio.schema.errors import ErrorCode

from odradek.metadata.errors import MetadataError
from odradek.metadata.records import NO_LEADER, PartitionChangeRecord, PartitionRecord


def start(current: PartitionRecord, target: Sequence[int], registered: Collection[int],
          live: Collection[int]) -> PartitionRecord:
    """The partition with a reassignment to `target` begun (and completed at once when every
    target replica is already in the ISR); raises MetadataError for an invalid target."""
    target = tuple(target)
    if not target or len(set(target)) != len(target):
        raise MetadataError(ErrorCode.invalid_replica_assignment,
                            f"Invalid replica assignment {list(target)}")
    unknown = [r for r in target if r not in registered]
    if unknown:
        raise MetadataError(ErrorCode.invalid_replica_assignment,
                            f"Unknown broker(s) {unknown} in the target replicas")
    original = original_replicas(current)
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    replicas = target + removing
    return settle(replace(current, replicas=replicas, adding_replicas=adding,
                          removing_replicas=removing), live)


def cancel(current: PartitionRecord, live: Collection[int]) -> PartitionRecord:
    """The partition back on its original replicas; NO_REASSIGNMENT_IN_PROGRESS when none."""
    if not in_progress(current):
        raise MetadataError(ErrorCode.no_reassignment_in_progress,
                            "No reassignment is in progress for this partition")
    original = original_replicas(current)
    if not set(original) & set(current.isr):
        raise MetadataError(ErrorCode.invalid_replica_assignment,
                            "Cannot cancel: no original replica is in sync")
    return _move_to(current, original, live)


def settle(state: PartitionRecord, live: Collection[int]) -> PartitionRecord:
    """Complete the reassignment when every target replica is in the ISR."""
    if not in_progress(state):
        return state
    target = target_replicas(state)
    if not set(target) <= set(state.isr):
        return state
    return _move_to(state, target, live)


def _move_to(state: PartitionRecord, replicas: tuple[int, ...],
             live: Collection[int]) -> PartitionRecord:
    isr = tuple(r for r in state.isr if r in replicas)
    leader = state.leader
    if leader not in replicas:
        leader = next((r for r in replicas if r in isr and r in live), NO_LEADER)
    return replace(state, replicas=replicas, isr=isr, leader=leader,
                   adding_replicas=(), removing_replicas=())


def in_progress(state: PartitionRecord) -> bool:
    return bool(state.adding_replicas or state.removing_replicas)


def original_replicas(state: PartitionRecord) -> tuple[int, ...]:
    return tuple(r for r in state.replicas if r not in state.adding_replicas)


def target_replicas(state: PartitionRecord) -> tuple[int, ...]:
    return tuple(r for r in state.replicas if r not in state.removing_replicas)


def change(before: PartitionRecord, after: PartitionRecord) -> PartitionChangeRecord | None:
    """The record that takes a partition from `before` to `after` (None when equal)."""
    fields = {
        name: getattr(after, name)
        for name in ("leader", "isr", "replicas", "adding_replicas", "removing_replicas")
        if getattr(after, name) != getattr(before, name)
    }
    if not fields:
        return None
    return PartitionChangeRecord(before.topic_id, before.partition, **fields)
