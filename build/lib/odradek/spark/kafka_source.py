"""`odradek-kafka`: a PySpark (4.x) Python data source with the options and schema of Spark's
built-in Kafka source and sink, and no JVM connector jar: batch reads, streaming reads
(`kafka_stream`) and writes of both kinds (`kafka_sink`).

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

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from odradek.spark.kafka_client import ClusterLookup, consumer_config
from odradek.spark.kafka_records import RangePartition, read_partition, read_schema
from odradek.spark.kafka_sink import KafkaStreamWriter, KafkaWriter
from odradek.spark.kafka_stream import KafkaStreamReader
from odradek.spark.offset_ranges import OffsetRange, offset_ranges, resolve, split_ranges
from odradek.spark.source_options import (
    ReadOptions,
    include_headers,
    parse_options,
    parse_write_options,
)

NAME = "odradek-kafka"


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        """The read schema, unchecked (a write has no read options), as Spark's KafkaTable."""
        return read_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaReader(parse_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return KafkaWriter(parse_write_options(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(parse_write_options(self.options), schema)


class KafkaReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(r, consumer_config(self.options)) for r in plan(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.options)


def plan(options: ReadOptions) -> list[OffsetRange]:
    """The read's offset ranges, resolved against the cluster now."""
    lookup = ClusterLookup(options.client)
    partitions = lookup.partitions(options.strategy)
    start = resolve(options.starting, partitions, lookup, starting=True,
                    no_match_latest=options.no_match_latest)
    end = resolve(options.ending, partitions, lookup, starting=False)
    return split_ranges(offset_ranges(start, end), options.min_partitions)
