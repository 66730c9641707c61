"""`odradek-kafka`'s sink, batch and streaming, as Spark's KafkaWriter: each row is a record
of its `topic` column (the `topic` option, when given, for every row), `key` and `value`
(string or binary; no `key` is a null key; `value` is required), `headers`
(`array<struct<key: string, value: binary>>`) and `partition` (int; null or absent lets the
partitioner choose, murmur2 of the key as Kafka's). The input schema is checked when the write
is planned, with Spark's messages. Delivery is at least once, as Spark's sink: a task retried
or a micro-batch run again after a failure writes its rows again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from odradek.spark.kafka_client import RecordProducer
from odradek.spark.source_options import OptionError, WriteOptions

COLUMN_TYPES = {
    "topic": ("string",),
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "headers": ("array<struct<key:string,value:binary>>",),
    "partition": ("int",),
}
"""Each column the sink takes, with the types Spark's KafkaWriter accepts (catalog names)."""
NULL_TOPIC = ("[KAFKA_NULL_TOPIC_IN_DATA] The Kafka message data sent to the producer contains "
              "a null topic. Use the `topic` option for setting a default topic.")
OVERWRITE = ("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
             "ErrorIfExists (default).")


class SchemaError(ValueError):
    """An input the sink cannot write: Spark's AnalysisException of KafkaWriter."""


def check_schema(schema: StructType, topic: str | None) -> None:
    """Spark's KafkaWriter.validateQuery: a `topic` column unless the option is set, a
    `value` column, and each column present of a type Spark takes."""
    types = {field.name: field.dataType.simpleString().lower() for field in schema.fields}
    for column, accepted in COLUMN_TYPES.items():
        if column == "topic" and topic is not None:
            continue
        if column not in types:
            if column == "topic":
                raise SchemaError("topic option required when no 'topic' attribute is present. "
                                  "Use the topic option for setting a topic.")
            if column == "value":
                raise SchemaError("Required attribute 'value' not found")
            continue
        if types[column] not in accepted:
            raise SchemaError(f"{column} attribute unsupported type {types[column]}. {column} "
                              f"must be a(n) {' or '.join(accepted)}")


class KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise OptionError(OVERWRITE)
        check_schema(schema, options.topic)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        write_batches(self.options, iterator)
        return WriterCommitMessage()


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Every output mode is taken: a complete-mode batch is written whole each time, as
    Spark's sink does."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        check_schema(schema, options.topic)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        write_batches(self.options, iterator)
        return WriterCommitMessage()


def write_batches(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> None:
    """One task's rows as records, each delivered (or the first failure raised) on return."""
    producer = RecordProducer(options.client)
    for batch in batches:
        for topic, key, value, headers, partition in rows(batch, options.topic):
            producer.send(topic, key, value, headers, partition)
    producer.flush()


Row = tuple[str, bytes | None, bytes | None, list[tuple[str, str | bytes | None]] | None,
            int | None]


def rows(batch: pa.RecordBatch, topic: str | None) -> Iterator[Row]:
    """A batch's records: (topic, key, value, headers, partition), strings as UTF-8."""
    count = batch.num_rows
    names = batch.schema.names

    def column(name: str) -> list[Any]:
        return batch.column(name).to_pylist() if name in names else [None] * count

    topics = [topic] * count if topic is not None else column("topic")
    for name, key, value, headers, partition in zip(
            topics, column("key"), column("value"), column("headers"), column("partition"),
            strict=True):
        if name is None:
            raise SchemaError(NULL_TOPIC)
        yield (str(name), _bytes(key), _bytes(value),
               None if headers is None else [(h["key"], h["value"]) for h in headers],
               partition)


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode()
