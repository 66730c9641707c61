"""What a task of `odradek-kafka` reads, in batch and streaming alike: one offset range, read
by an assigned consumer into Arrow record batches in the schema of Spark's Kafka source."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from confluent_kafka import Message
from pyspark.sql.datasource import InputPartition

from odradek.spark.kafka_client import read_range
from odradek.spark.offset_ranges import OffsetRange
from odradek.spark.source_options import ReadOptions

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


def read_partition(partition: InputPartition, options: ReadOptions
                   ) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, RangePartition):
        return  # nothing to read: Spark runs one task of InputPartition(None) then
    for chunk in read_range(partition.config, partition.offset_range, options.poll_timeout_ms):
        yield record_batch(chunk, options.include_headers)


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
