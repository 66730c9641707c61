"""Spark rows of a Kafka source in the integration tests' record shape."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tests.integration.clients import Rec


def load(spark: SparkSession, bootstrap: str, source: str = "odradek-kafka",
         **options: Any) -> DataFrame:
    """A batch read with `source` (ours, or Spark's connector: `kafka`); option names as
    Spark's (`startingOffsets=...`)."""
    reader = spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key.replace("__", "."), str(value))
    return reader.load()


def recs(frame: DataFrame) -> dict[str, list[Rec]]:
    """Each topic's rows as records, sorted by (partition, offset)."""
    with_millis = frame.withColumn("millis", F.unix_millis("timestamp"))
    has_headers = "headers" in frame.columns
    found: dict[str, list[Rec]] = {}
    for row in with_millis.collect():
        headers = (tuple((h["key"], _bytes(h["value"])) for h in row["headers"] or ())
                   if has_headers else ())
        found.setdefault(row["topic"], []).append(Rec(
            row["partition"], row["offset"], _bytes(row["key"]), _bytes(row["value"]),
            row["millis"], headers))
    return {topic: sorted(records, key=lambda r: (r.partition, r.offset))
            for topic, records in found.items()}


def _bytes(value: bytearray | bytes | None) -> bytes | None:
    return None if value is None else bytes(value)
