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
