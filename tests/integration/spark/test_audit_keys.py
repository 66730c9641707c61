"""The audit's key-by-key comparison of a compacted topic in Spark
(odradek.spark.audit_reads) equals the brute-force model of tests/audit_model.py over random
histories with tombstones and keyless records, compacted at random on either side; rows are
built in the shape the Kafka source reads, without a cluster."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from pyspark.sql import DataFrame, SparkSession

from odradek.spark.audit_reads import joined_key_counts, latest_records
from tests.audit_model import TOPIC, Record, compacted, key_counts, written

SEEDS = (1, 2, 3)
WINDOW = (0, 50_000, 10_000)
ROWS = ("topic STRING, partition INT, offset LONG, key BINARY, value BINARY, "
        "timestamp TIMESTAMP, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")


def history(seed: int) -> list[Record]:
    """Updates, tombstones and a few keyless records over eight keys in two partitions,
    at event times partly past the window's end."""
    rng = random.Random(seed)
    return written((rng.randrange(2), None if rng.random() < 0.05 else
                    f"k{rng.randrange(8)}".encode(),
                    None if rng.random() < 0.15 else f"{seed}-{i}".encode(),
                    rng.randrange(60_000)) for i in range(rng.randrange(100, 300)))


def frame(spark: SparkSession, topic: str, records: list[Record]) -> DataFrame:
    return spark.createDataFrame(
        [(topic, r.partition, r.offset, r.key, r.value,
          datetime.fromtimestamp(r.timestamp / 1000, UTC), [("seq", b"1")])
         for r in records], ROWS)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_key_counts_equal_the_model(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    records = history(seed)
    source = compacted(records, rng)
    target = compacted(records, rng)[:-5] + [  # behind by five, and with a stray key
        Record(0, 10_000, b"stray", b"x", 12_345)]
    found = joined_key_counts(
        latest_records(spark, frame(spark, TOPIC, source), {TOPIC: TOPIC}),
        latest_records(spark, frame(spark, "east." + TOPIC, target), {"east." + TOPIC: TOPIC}),
        WINDOW)
    expected = key_counts(source, target, WINDOW)
    assert sorted(found, key=lambda k: k.bucket_start_ms) == expected
    assert sum(k.differing_keys for k in expected) > 0  # the stray key at least
