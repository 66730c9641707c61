"""`odradek-kafka`'s streaming read, as Spark's KafkaMicroBatchStream: offsets are Spark's
offset JSON (`{"topic":{"0":23,"1":-1}}`, the next offset to read of each partition), which
Spark keeps in the query's checkpoint. A restarted query resumes at its last committed
offsets, and a batch that was planned but not committed is read again over the very same
ranges, so each record comes out once.

The reader lives in one Python process on the driver for the query's life; Spark pickles it
for the executors before it first plans, so the cluster lookup is made on first use and never
pickled."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from odradek.spark.kafka_client import ClusterLookup, consumer_config
from odradek.spark.kafka_records import RangePartition, read_partition
from odradek.spark.offset_ranges import (
    OffsetJson,
    PartitionOffsets,
    data_loss_report,
    offsets_from_json,
    offsets_json,
    rate_limit,
    resolve,
    split_ranges,
    stream_ranges,
)
from odradek.spark.source_options import ReadOptions


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.config = consumer_config(options)
        """The executors' consumer config, with the query's own group id."""
        self._lookup: ClusterLookup | None = None
        self._available_now: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_lookup": None}

    @property
    def lookup(self) -> ClusterLookup:
        if self._lookup is None:
            self._lookup = ClusterLookup(self.options.client)
        return self._lookup

    def initialOffset(self) -> OffsetJson:
        """`startingOffsets` (default latest), resolved now, for a query without a
        checkpoint."""
        partitions = self.lookup.partitions(self.options.strategy)
        return offsets_json(resolve(self.options.starting, partitions, self.lookup,
                                    starting=True, no_match_latest=self.options.no_match_latest))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()

    def latestOffset(self, start: OffsetJson, limit: ReadLimit) -> OffsetJson:
        """The next batch's end: the log ends (those taken when an availableNow query
        started), no more than `maxOffsetsPerTrigger` past `start` under a row limit."""
        begin = offsets_from_json(start)
        latest = self._available_now if self._available_now is not None else self._latest()
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(limit.max_rows, begin, latest, self._new_starts(begin, latest))
        return offsets_json(latest)

    def partitions(self, start: OffsetJson, end: OffsetJson) -> Sequence[InputPartition]:
        begin, until = offsets_from_json(start), offsets_from_json(end)
        ranges = stream_ranges(begin, until, self._new_starts(begin, until),
                               data_loss_report(self.options.fail_on_data_loss))
        return [RangePartition(r, self.config)
                for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options)

    def commit(self, end: OffsetJson) -> None:
        """Nothing to do: Spark's checkpoint holds the offsets (no group commit, as Spark's
        source)."""

    def _latest(self) -> PartitionOffsets:
        return self.lookup.latest(self.lookup.partitions(self.options.strategy))

    def _new_starts(self, start: PartitionOffsets, end: PartitionOffsets) -> PartitionOffsets:
        """The earliest offsets of the partitions at `end` that `start` does not know."""
        new = sorted(set(end) - set(start))
        return self.lookup.earliest(new) if new else {}
