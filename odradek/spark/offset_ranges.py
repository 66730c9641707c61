"""A batch read's offset ranges, planned without IO: the start and end limits resolved to
offsets per partition (the lookups are passed in), then split into input partitions as
Spark's KafkaOffsetRangeCalculator splits them for `minPartitions`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from odradek.spark.source_options import (
    EARLIEST,
    LATEST,
    Earliest,
    GlobalTimestamp,
    Latest,
    OffsetLimit,
    OptionError,
    SpecificOffsets,
    SpecificTimestamps,
    TopicPartition,
)


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [start, end) of one partition: `end - start` is an upper bound on the records
    (compaction and transaction markers leave gaps)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class OffsetLookup(Protocol):
    """What planning asks the cluster: log ends, and the first offset at or after a time
    (None where no record is that late), with the read's isolation level."""

    def earliest(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    def latest(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    def for_times(self, times: Mapping[TopicPartition, int]
                  ) -> dict[TopicPartition, int | None]: ...


def resolve(limit: OffsetLimit, partitions: Sequence[TopicPartition], lookup: OffsetLookup,
            *, starting: bool, no_match_latest: bool = False) -> dict[TopicPartition, int]:
    """Offsets per partition for one limit. A start time that matches no record fails (or
    means latest with `no_match_latest`); an end time that matches none means latest."""
    if isinstance(limit, Earliest):
        return lookup.earliest(partitions)
    if isinstance(limit, Latest):
        return lookup.latest(partitions)
    if isinstance(limit, SpecificOffsets | SpecificTimestamps):
        given = limit.offsets if isinstance(limit, SpecificOffsets) else limit.timestamps
        if set(given) != set(partitions):
            which = "startingOffsets" if starting else "endingOffsets"
            raise OptionError(
                f"If {which} contains specific offsets, you must specify all "
                f"TopicPartitions. Use -1 for latest, -2 for earliest. Specified: "
                f"{sorted(given)} Assigned: {sorted(partitions)}")
    if isinstance(limit, SpecificOffsets):
        resolved = dict(limit.offsets)
        earliest = [tp for tp, offset in resolved.items() if offset == EARLIEST]
        latest = [tp for tp, offset in resolved.items() if offset == LATEST]
        resolved.update(lookup.earliest(earliest) if earliest else {})
        resolved.update(lookup.latest(latest) if latest else {})
        return resolved
    times = (dict(limit.timestamps) if isinstance(limit, SpecificTimestamps)
             else {tp: limit.timestamp for tp in partitions})
    assert isinstance(limit, GlobalTimestamp | SpecificTimestamps)
    found = lookup.for_times(times)
    unmatched = [tp for tp, offset in found.items() if offset is None]
    if unmatched and starting and not no_match_latest:
        tp = unmatched[0]
        raise OptionError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} "
                          f"and timestamp {times[tp]}.")
    latest_offsets = lookup.latest(unmatched) if unmatched else {}
    return {tp: latest_offsets[tp] if offset is None else offset
            for tp, offset in found.items()}


def offset_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
                  ) -> list[OffsetRange]:
    """One range per partition present at both ends, in (topic, partition) order; a start
    past its end is an error, as Spark reports it."""
    ranges = []
    for tp in sorted(set(start) & set(end)):
        if start[tp] > end[tp]:
            raise OptionError(f"The start offset {start[tp]} is after the end offset "
                              f"{end[tp]} for {tp[0]}-{tp[1]}: some data may have been lost "
                              "(deleted or aged out) or the offsets are wrong")
        ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
    return ranges


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None
                 ) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator: empty ranges dropped; below `min_partitions`
    ranges, each large range is cut into a share of `min_partitions` proportional to its size
    (at least one), the last piece taking the rounding."""
    nonempty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)
    unsplit = {(r.topic, r.partition) for r in nonempty
               if _parts(r.size, total, min_partitions) == 1}
    unsplit_size = sum(r.size for r in nonempty if (r.topic, r.partition) in unsplit)
    split_total = total - unsplit_size
    split_min = max(min_partitions - len(unsplit), 1)
    pieces = []
    for r in nonempty:
        parts = (1 if (r.topic, r.partition) in unsplit
                 else _parts(r.size, split_total, split_min))
        remaining, start = r.size, r.start
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            end = min(start + this, r.end)
            if end > start:
                pieces.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return pieces


def _parts(size: int, total: int, min_partitions: int) -> int:
    """Scala's `math.round` (half up) of the range's share, at least one."""
    return max(math.floor(size / total * min_partitions + 0.5), 1)
