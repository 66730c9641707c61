"""A read's offset ranges, planned without IO: the start and end limits resolved to offsets
per partition (the lookups are passed in), then split into input partitions as Spark's
KafkaOffsetRangeCalculator splits them for `minPartitions`. A stream's micro-batches as
Spark's KafkaMicroBatchStream plans them: offsets as Spark's offset JSON, the end of a batch
under `maxOffsetsPerTrigger` (`rate_limit`), and its ranges with data loss reported
(`stream_ranges`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
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

log = logging.getLogger("odradek.spark.kafka")
PartitionOffsets = dict[TopicPartition, int]
OffsetJson = dict[str, dict[str, int]]
DATA_LOSS = ("Some data may have been lost because they are not available in Kafka any more; "
             "either the data was aged out by Kafka or the topic may have been deleted before "
             "all the data in the topic was processed.")
FAIL_ON_DATA_LOSS_TRUE = ("If you don't want your streaming query to fail on such cases, set "
                          "the source option failOnDataLoss to false.")
FAIL_ON_DATA_LOSS_FALSE = ("If you want your streaming query to fail on such cases, set the "
                           "source option \"failOnDataLoss\" to \"true\".")


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


class DataLossError(RuntimeError):
    """Spark's KAFKA_DATA_LOSS: offsets a read needs are gone, with failOnDataLoss=true."""

    def __init__(self, condition: str, reason: str) -> None:
        super().__init__(f"[KAFKA_DATA_LOSS.{condition}] {DATA_LOSS} {FAIL_ON_DATA_LOSS_TRUE} "
                         f"Reason: {reason} SQLSTATE: 22000")


DataLossReport = Callable[[str, str], None]
"""Called with Spark's error condition and the reason."""


def data_loss_report(fail_on_data_loss: bool) -> DataLossReport:
    """Raises DataLossError, or (failOnDataLoss=false) logs the loss and reads on."""
    def report(condition: str, reason: str) -> None:
        if fail_on_data_loss:
            raise DataLossError(condition, reason)
        log.warning("%s %s %s", reason, DATA_LOSS, FAIL_ON_DATA_LOSS_FALSE)
    return report


def offsets_json(offsets: Mapping[TopicPartition, int]) -> OffsetJson:
    """Spark's offset JSON (`{"topic":{"0":23,"1":-1}}`) as a dict, topics and partitions in
    order."""
    found: OffsetJson = {}
    for (topic, partition), offset in sorted(offsets.items()):
        found.setdefault(topic, {})[str(partition)] = offset
    return found


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> PartitionOffsets:
    return {(topic, int(partition)): int(offset)
            for topic, partitions in data.items() for partition, offset in partitions.items()}


def rate_limit(limit: int, start: Mapping[TopicPartition, int],
               latest: Mapping[TopicPartition, int],
               new_starts: Mapping[TopicPartition, int]) -> PartitionOffsets:
    """A micro-batch's end under `maxOffsetsPerTrigger`, as Spark's rateLimit: `limit`
    offsets shared among the partitions in proportion to what each has to read, rounded
    down, but at least one for a partition with anything to read. A partition new since
    `start` begins at `new_starts`."""
    sizes = {}
    for tp, end in latest.items():
        begin = start.get(tp, new_starts.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    limited = {}
    for tp, end in latest.items():
        if tp not in sizes:
            limited[tp] = end
            continue
        share = limit * (sizes[tp] / total)
        count = math.ceil(share) if share < 1 else math.floor(share)
        limited[tp] = min(end, start.get(tp, new_starts.get(tp, 0)) + count)
    return limited


def stream_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                  new_starts: Mapping[TopicPartition, int],
                  report: DataLossReport) -> list[OffsetRange]:
    """A micro-batch's ranges, as Spark's getOffsetRangesFromResolvedOffsets: a partition new
    since `start` is read from `new_starts` (its earliest offset), which is data loss when
    it is not 0 or unknown (the partition is gone again); a partition in `start` but not in
    `end` was deleted; an end before its start means the log was truncated or re-created.
    With data loss allowed, what can be read is."""
    new = set(end) - set(start)
    gone = new - set(new_starts)
    if gone:
        report("INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS",
               f"Cannot find initial offsets for partitions {_names(gone)}. They may have "
               "been deleted.")
    for tp in sorted(set(new_starts) & new):
        if new_starts[tp] != 0:
            report("ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
                   f"Added partition {_names([tp])} starts from {new_starts[tp]} instead of 0.")
    deleted = set(start) - set(end)
    if deleted:
        report("PARTITIONS_DELETED", f"Partitions {_names(deleted)} have been deleted.")
    ranges = []
    for tp in sorted(end):
        begin = start.get(tp, new_starts.get(tp))
        if begin is None:
            continue
        if end[tp] < begin:
            report("PARTITION_OFFSET_CHANGED",
                   f"Partition {_names([tp])} offset was changed from {begin} to {end[tp]}.")
        ranges.append(OffsetRange(tp[0], tp[1], begin, end[tp]))
    return ranges


def _names(partitions: Sequence[TopicPartition] | set[TopicPartition]) -> str:
    return ", ".join(f"{topic}-{partition}" for topic, partition in sorted(partitions))
