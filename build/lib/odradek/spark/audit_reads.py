"""The audit's reads of each cluster, in Spark: per topic partition and event-time bucket the
records' count, bytes and checksum; and for compacted topics the latest record of each key on
both clusters, joined key by key and counted per bucket (`KeyCounts`: what compaction
preserves, whichever side's cleaner has run)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.spark.audit_rules import Counts, KeyCounts
from odradek.spark.cut import Cut, read_to_cut

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Window = tuple[int, int, int]
"""(from_ms, to_ms, bucket_ms): the audited event times and the buckets' width."""
LATEST_SCHEMA = ("topic STRING, partition INT, key BINARY, "
                 "latest STRUCT<millis: BIGINT, hash: BIGINT, live: BOOLEAN>")
"""`latest_records`' rows."""


@dataclass(frozen=True)
class Side:
    """One of the audited clusters: its cut, and the source's name of each of its topics."""

    bootstrap: str
    cut: Cut
    client: Mapping[str, str]
    source_name: Mapping[str, str]

    def records(self, spark: SparkSession, source_topics: Collection[str] | None = None
                ) -> DataFrame | None:
        """The committed records before the cut (of the topics named by the source's names
        `source_topics`, default all); None when there are none to read."""
        cut = {topic: offsets for topic, offsets in self.cut.items()
               if source_topics is None or self.source_name[topic] in source_topics}
        return read_to_cut(spark, self.bootstrap, cut, self.client) if cut else None


def bucket_counts(spark: SparkSession, side: Side, window: Window) -> list[Counts]:
    """Per topic partition and bucket: count, bytes, checksum and newest timestamp."""
    records = side.records(spark)
    if records is None:
        return []
    from pyspark.sql import functions as F

    from_ms, to_ms, bucket_ms = window
    millis = F.unix_millis("timestamp")
    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    rows = (records
            .where((millis >= from_ms) & (millis < to_ms))
            .groupBy("topic", "partition", _bucket(millis, bucket_ms).alias("bucket"))
            .agg(F.count(F.lit(1)).alias("count"), F.sum(size).alias("bytes"),
                 F.sum(_record_hash().cast("decimal(38,0)")).alias("checksum"),
                 F.max(millis).alias("newest"))
            .collect())
    return [Counts(side.source_name[r["topic"]], r["partition"], r["bucket"], r["count"],
                   r["bytes"], int(r["checksum"]), r["newest"]) for r in rows]


def latest_records(spark: SparkSession, records: DataFrame | None,
                   source_name: Mapping[str, str]) -> DataFrame:
    """Per key (the source topic's name, partition, key) its latest record, whatever its
    event time: its timestamp, hash, and whether it has a value. Keyless records are left
    out, as the cleaner removes them."""
    if records is None:
        return spark.createDataFrame([], LATEST_SCHEMA)
    from pyspark.sql import functions as F

    renamed = F.create_map(*(F.lit(name) for pair in source_name.items() for name in pair))
    latest = F.struct(F.unix_millis("timestamp").alias("millis"), _record_hash().alias("hash"),
                      F.col("value").isNotNull().alias("live"))
    return (records.where(F.col("key").isNotNull())
            .groupBy(renamed[F.col("topic")].alias("topic"), "partition", "key")
            .agg(F.max_by(latest, "offset").alias("latest")))


def key_counts(spark: SparkSession, source: Side, target: Side, compacted: Collection[str],
               window: Window) -> list[KeyCounts]:
    """`KeyCounts` of the `compacted` topics in every bucket of the window."""
    if not compacted:
        return []
    return joined_key_counts(
        latest_records(spark, source.records(spark, compacted), source.source_name),
        latest_records(spark, target.records(spark, compacted), target.source_name), window)


def joined_key_counts(source: DataFrame, target: DataFrame, window: Window
                      ) -> list[KeyCounts]:
    """`KeyCounts` of every bucket of the window from `latest_records` of both clusters."""
    from pyspark.sql import functions as F

    from_ms, to_ms, bucket_ms = window
    joined = source.withColumnRenamed("latest", "s").join(
        target.withColumnRenamed("latest", "t"), ["topic", "partition", "key"], "full_outer")
    source_live = F.coalesce(F.col("s.live"), F.lit(False))
    target_live = F.coalesce(F.col("t.live"), F.lit(False))
    differs = (source_live != target_live) | (source_live & (F.col("s.hash") != F.col("t.hash")))
    millis = F.coalesce(F.col("s.millis"), F.col("t.millis"))
    rows = (joined.where((millis >= from_ms) & (millis < to_ms))
            .groupBy("topic", _bucket(millis, bucket_ms).alias("bucket"))
            .agg(F.count_if(source_live).alias("source"), F.count_if(target_live).alias("target"),
                 F.count_if(differs).alias("differing"))
            .collect())
    return [KeyCounts(r["topic"], r["bucket"], r["source"], r["target"], r["differing"])
            for r in rows]


def _bucket(millis: Column, bucket_ms: int) -> Column:
    from pyspark.sql import functions as F

    return millis - F.pmod(millis, F.lit(bucket_ms))


def _record_hash() -> Column:
    """A record's 64-bit hash of (key, value, timestamp, headers), nulls apart from empties."""
    from pyspark.sql import functions as F

    headers = F.transform("headers", lambda h: F.struct(
        h["key"], h["value"].isNull(), F.coalesce(h["value"], F.lit(b""))))
    return F.xxhash64(F.col("key").isNull(), F.coalesce("key", F.lit(b"")),
                      F.col("value").isNull(), F.coalesce("value", F.lit(b"")),
                      F.unix_millis("timestamp"), headers)
