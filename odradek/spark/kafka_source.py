"""`odradek-kafka`: a PySpark (4.x) Python data source with the batch options and schema of
Spark's built-in Kafka source, and no JVM connector jar.

It is registered under its own name, not `kafka`: Spark refuses to register a Python source
under a name its JVM lookup already claims (DATA_SOURCE_ALREADY_EXISTS; `kafka` is claimed
even when the connector jar is absent), and a job should say which implementation it reads
with. Switching a job to the built-in source is changing the format name.

Planning (on the driver) resolves the start and end offsets once, so every task, and every
retry of a task, reads the same ranges: the read is repeatable. Each input partition is one
Kafka partition's range, or a piece of it with `minPartitions`; an executor reads it with an
assigned confluent-kafka consumer and hands Spark Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import Message
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from odradek.spark.kafka_client import ClusterLookup, consumer_config, read_range
from odradek.spark.offset_ranges import OffsetRange, offset_ranges, resolve, split_ranges
from odradek.spark.source_options import ReadOptions, parse_options

NAME = "odradek-kafka"
SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int")
HEADERS = "headers array<struct<key: string, value: binary>>"
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}
"""librdkafka's timestamp types (not available, create, log append) as Kafka's ids."""


def read_schema(include_headers: bool) -> str:
    return f"{SCHEMA}, {HEADERS}" if include_headers else SCHEMA


class RangePartition(InputPartition):
    """One task: an offset range and the consumer config to read it with."""

    def __init__(self, offset_range: OffsetRange, config: dict[str, Any]) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range
        self.config = config


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return read_schema(parse_options(self.options).include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaReader(parse_options(self.options))


class KafkaReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(r, consumer_config(self.options)) for r in plan(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return  # nothing to read: Spark runs one task of InputPartition(None) then
        for chunk in read_range(partition.config, partition.offset_range,
                                self.options.poll_timeout_ms):
            yield record_batch(chunk, self.options.include_headers)


def plan(options: ReadOptions) -> list[OffsetRange]:
    """The read's offset ranges, resolved against the cluster now."""
    lookup = ClusterLookup(options.client)
    partitions = lookup.partitions(options.strategy)
    start = resolve(options.starting, partitions, lookup, starting=True,
                    no_match_latest=options.no_match_latest)
    end = resolve(options.ending, partitions, lookup, starting=False)
    return split_ranges(offset_ranges(start, end), options.min_partitions)


def record_batch(messages: list[Message], include_headers: bool) -> pa.RecordBatch:
    """Records as one Arrow batch in the source's schema (timestamps in microseconds)."""
    stamps = [m.timestamp() for m in messages]
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.array([m.topic() for m in messages], pa.string()),
        pa.array([m.partition() for m in messages], pa.int32()),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array([ts * 1000 for _, ts in stamps], pa.timestamp("us", tz="UTC")),
        pa.array([TIMESTAMP_TYPES[kind] for kind, _ in stamps], pa.int32()),
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if include_headers:
        columns.append(pa.array([_headers(m) for m in messages], HEADER_TYPE))
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


def _headers(message: Message) -> list[dict[str, Any]] | None:
    """A record's headers in order; null, not an empty array, when it has none (as Spark's
    KafkaRecordToRowConverter)."""
    headers = message.headers() or ()
    return [{"key": h[0], "value": h[1]} for h in headers] if headers else None
