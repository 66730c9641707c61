"""Choosing what to clean, without IO (Kafka's LogCleanerManager, LogToClean and
Cleaner.groupSegmentsBySize): a log's dirty range and dirty ratio from per-segment figures,
the filthiest log among those worth a round, and the replacement segments a round writes.
What a round keeps of the batches it reads is `compaction`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    """What the cleaner's choices need of a segment."""

    base_offset: int
    size: int
    largest_timestamp: int = -1
    """The largest record timestamp in the segment (LogSegment.largestTimestamp)."""
    first_batch_timestamp: int | None = None
    """maxTimestamp of the segment's first batch; None when the segment is empty."""
    offset_index_bytes: int = 0
    time_index_bytes: int = 0


S = TypeVar("S", bound=SegmentSummary)


class GroupableSegment(Protocol):
    """What `group_segments_by_size` needs of a segment (SegmentSummary has it)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def offset_index_bytes(self) -> int: ...

    @property
    def time_index_bytes(self) -> int: ...


G = TypeVar("G", bound=GroupableSegment)


def _segments_between(segments: Sequence[S], start: int, end: int) -> list[S]:
    """Kafka's logSegments(start, end): from the segment holding `start` to the last one
    beginning before `end`."""
    if start >= end:
        return []
    first = 0
    for index, segment in enumerate(segments):
        if segment.base_offset <= start:
            first = index
    return [segment for segment in segments[first:] if segment.base_offset < end]


def _non_active_from(segments: Sequence[S], start: int) -> list[S]:
    active_base = segments[-1].base_offset
    if start > active_base:
        return []
    return _segments_between(segments, start, active_base)


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A log's cleanable range and how dirty it is (Kafka's LogToClean)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    """The round's exclusive upper bound: a segment base offset."""
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool
    """Some dirty data is older than max.compaction.lag.ms."""
    force_update_checkpoint: bool
    """The checkpoint was out of the log's range; store `first_dirty_offset` instead."""
    min_cleanable_ratio: float

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        """Kafka's cleanableRatio: cleanable bytes / (clean + cleanable bytes)."""
        return dirty_ratio(self.clean_bytes, self.cleanable_bytes)

    @property
    def priority(self) -> float:
        """The order among logs that need cleaning, the filthiest first: the dirty ratio."""
        return self.dirty_ratio

    @property
    def needs_cleaning(self) -> bool:
        """Worth a round: dirty enough, or holding data past max.compaction.lag.ms."""
        if self.total_bytes <= 0:
            return False
        return (
            self.needs_compaction_now and self.cleanable_bytes > 0
        ) or self.dirty_ratio > self.min_cleanable_ratio


def dirty_ratio(clean_bytes: int, dirty_bytes: int) -> float:
    """dirty / (clean + dirty); 0 for an empty log."""
    total = clean_bytes + dirty_bytes
    return dirty_bytes / total if total > 0 else 0.0


def log_to_clean(
    segments: Sequence[SegmentSummary],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    log_end_offset: int,
    last_stable_offset: int,
    min_compaction_lag_ms: int,
    max_compaction_lag_ms: int,
    min_cleanable_ratio: float,
    now_ms: int,
) -> LogToClean:
    """Kafka's cleanableOffsets + LogToClean for one log.

    `segments` are all the log's segments in offset order, the last being the active one;
    `checkpoint` is the cleaner checkpoint (None if the log has none); `last_stable_offset`
    is the first unstable offset, or the high watermark when no transaction is open.
    """
    checkpoint_offset = log_start_offset if checkpoint is None else checkpoint
    if checkpoint_offset < log_start_offset or checkpoint_offset > log_end_offset:
        first_dirty, force_update = log_start_offset, True
    else:
        first_dirty, force_update = checkpoint_offset, False
    active_base = segments[-1].base_offset
    uncleanable = min(last_stable_offset, active_base)
    min_lag = max(min_compaction_lag_ms, 0)
    if min_lag > 0:
        for segment in _non_active_from(segments, first_dirty):
            if segment.largest_timestamp > now_ms - min_lag:
                uncleanable = min(uncleanable, segment.base_offset)
                break
    uncleanable = max(first_dirty, uncleanable)
    # calculateCleanableBytes: round down to the base of the segment holding `uncleanable`.
    later = _non_active_from(segments, uncleanable)
    first_uncleanable = later[0].base_offset if later else active_base
    cleanable_bytes = sum(
        segment.size
        for segment in _segments_between(
            segments, min(first_dirty, first_uncleanable), first_uncleanable
        )
    )
    clean_bytes = sum(segment.size for segment in _segments_between(segments, -1, first_dirty))
    return LogToClean(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        needs_compaction_now=_max_compaction_delay(
            segments, first_dirty, max_compaction_lag_ms, now_ms
        )
        > 0,
        force_update_checkpoint=force_update,
        min_cleanable_ratio=min_cleanable_ratio,
    )


def _max_compaction_delay(
    segments: Sequence[SegmentSummary], first_dirty: int, max_compaction_lag_ms: int, now_ms: int
) -> int:
    """How long past max.compaction.lag.ms the oldest dirty segment is (0 if not)."""
    timestamps = [
        segment.first_batch_timestamp
        for segment in _non_active_from(segments, first_dirty)
        if segment.first_batch_timestamp is not None and segment.first_batch_timestamp > 0
    ]
    if not timestamps:
        return 0
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    earliest = min(timestamps)
    return clean_until - earliest if earliest < clean_until else 0


K = TypeVar("K")


def filthiest(logs: Mapping[K, LogToClean]) -> K | None:
    """The cleanable log with the highest dirty ratio (grabFilthiestCompactedLog)."""
    cleanable = [
        (candidate.priority, key) for key, candidate in logs.items() if candidate.needs_cleaning
    ]
    if not cleanable:
        return None
    return max(cleanable, key=lambda pair: pair[0])[1]


def group_segments_by_size(
    segments: Sequence[G], max_size: int, max_index_size: int, first_uncleanable_offset: int
) -> list[list[G]]:
    """Consecutive segments grouped into one replacement segment each (Kafka's
    groupSegmentsBySize): a group grows while its log bytes stay within `max_size`
    (segment.bytes), each of its index sizes within `max_index_size`, and its offsets within
    int32 of its base offset (a segment's last offset is estimated as the next segment's
    base - 1, or `first_uncleanable_offset - 1` for the last one; empty segments are exempt).
    """
    groups: list[list[G]] = []
    index = 0
    while index < len(segments):
        first = segments[index]
        group = [first]
        log_size, offset_index_size, time_index_size = (
            first.size, first.offset_index_bytes, first.time_index_bytes
        )
        index += 1
        while index < len(segments):
            candidate = segments[index]
            last_offset = (
                segments[index + 1].base_offset - 1
                if index + 1 < len(segments)
                else first_uncleanable_offset - 1
            )
            if not (
                log_size + candidate.size <= max_size
                and offset_index_size + candidate.offset_index_bytes <= max_index_size
                and time_index_size + candidate.time_index_bytes <= max_index_size
                and (candidate.size == 0 or last_offset - first.base_offset <= _INT32_MAX)
            ):
                break
            group.append(candidate)
            log_size += candidate.size
            offset_index_size += candidate.offset_index_bytes
            time_index_size += candidate.time_index_bytes
            index += 1
        groups.append(group)
    return groups
