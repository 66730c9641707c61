"""Where a follower truncates its log before fetching from a new leader (Kafka's
AbstractFetcherThread.getOffsetTruncationState, KIP-101 and KIP-279), without IO."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.log.leader_epochs import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache


@dataclass(frozen=True, slots=True)
class Truncation:
    offset: int
    """Truncate the log to this offset (a no-op when it is the log end)."""
    completed: bool
    """False: ask the leader again, with the epoch now latest in the truncated log."""


def truncation(epochs: LeaderEpochCache, log_end_offset: int, high_watermark: int,
               leader_epoch: int, leader_end_offset: int) -> Truncation:
    """The truncation after the leader answered (leader_epoch, leader_end_offset) for this
    follower's latest epoch."""
    if leader_end_offset == UNDEFINED_OFFSET:
        return Truncation(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_end_offset, log_end_offset), True)
    own_epoch, own_end = epochs.end_offset_for(leader_epoch, log_end_offset)
    if own_epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_end_offset, log_end_offset), True)
    if own_epoch != leader_epoch:
        return Truncation(min(own_end, log_end_offset), False)
    return Truncation(min(own_end, leader_end_offset, log_end_offset), True)


def restart_inside_first_batch(log_start_offset: int, log_end_offset: int, first_base: int,
                               first_last: int) -> int | None:
    """Where an empty follower log restarts so that it can take the first fetched batch, or
    None. DeleteRecords can leave the leader's log start inside a batch; a follower that
    starts there fetches the whole batch, which begins below its log end. Like Kafka's
    Partition.appendRecordsToFollowerOrFutureReplica, an empty log then starts again at the
    batch's base offset (its log start moves back up with the leader's on the next fetch)."""
    if log_end_offset == log_start_offset and first_base < log_end_offset <= first_last:
        return first_base
    return None
