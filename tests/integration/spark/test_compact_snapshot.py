"""The compaction snapshot against real clusters: it equals a brute-force latest-per-key
model over random histories with tombstones, and --verify compares it with the compacted
topic after the cleaner ran and with the mirrored copy, finding a planted divergence."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from pyspark.sql import SparkSession

from odradek.spark import compaction
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    Out,
    Rec,
    create_topic,
    now_ms,
    produce_confluent,
    produce_transactions,
    read_confluent,
    unique,
)
from tests.integration.spark.mirroring import ALIAS, Mirror
from tests.integration.test_compaction import COMPACTED, roll_active_segment
from tests.waiting import wait_until

SEEDS = (1, 2, 3)


def random_history(seed: int, stamp: int) -> list[Out]:
    """Updates and tombstones over few keys, some keys in both partitions."""
    rng = random.Random(seed)
    return [Out(f"k{rng.randrange(25)}".encode(),
                None if rng.random() < 0.15 else f"{seed}-{i}".encode(),
                stamp + i, (("seq", str(i).encode()),), rng.randrange(2))
            for i in range(rng.randrange(50, 400))]


def model(acked: list[Rec]) -> dict[tuple[int, bytes], bytes]:
    """Brute force: replay every record in offset order, per partition and key."""
    latest: dict[tuple[int, bytes], bytes | None] = {}
    for record in sorted(acked, key=lambda r: (r.partition, r.offset)):
        assert record.key is not None
        latest[(record.partition, record.key)] = record.value
    return {key: value for key, value in latest.items() if value is not None}


def run(spark: SparkSession, *flags: str) -> int:
    parser = argparse.ArgumentParser()
    compaction.add_arguments(parser)
    return compaction.run(parser.parse_args(flags), spark)


def test_the_snapshot_is_the_latest_value_per_key(spark: SparkSession, east: BrokerProcess,
                                                 tmp_path: Path) -> None:
    prefix = unique("history")
    acked = {}
    for seed in SEEDS:
        topic = create_topic(east.bootstrap, f"{prefix}-{seed}", partitions=2)
        acked[topic] = produce_confluent(east.bootstrap, topic, random_history(seed, now_ms()))
    assert run(spark, "--bootstrap", east.bootstrap, "--topics", f"{prefix}-.*",
               "--output", str(tmp_path)) == 0
    table = spark.read.parquet(str(tmp_path / "snapshot"))
    assert table.columns == ["partition", "key", "value", "offset", "timestamp",
                             "timestampType", "headers", "topic"]
    for topic, records in acked.items():
        rows = table.where(table.topic == topic).collect()
        assert {(r.partition, bytes(r.key)): bytes(r.value) for r in rows} == model(records)
        assert len(rows) == len(model(records))
        by_offset = {(r.partition, r.offset): r for r in records}
        for row in rows:
            original = by_offset[(row.partition, row.offset)]
            assert row.headers[0].value == original.headers[0][1]
    cut = json.loads((tmp_path / "cut.json").read_text())["offsets"]
    assert cut == {topic: {str(p): sum(r.partition == p for r in records) for p in (0, 1)}
                   for topic, records in acked.items()}


def test_verify_finds_a_key_that_differs_on_the_mirror(
        spark: SparkSession, east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
        tmp_path: Path) -> None:
    topic = create_topic(east.bootstrap, unique("customers"),
                         config={**COMPACTED, "segment.ms": "500"})
    stamp = now_ms()
    history = [Out(f"c{i % 30}".encode(), None if i % 11 == 0 else f"v{i}".encode() * 30,
                   stamp + i) for i in range(900)]
    produced = produce_confluent(east.bootstrap, topic, history,
                                 {"linger.ms": 5, "batch.size": 4096})
    produced.append(roll_active_segment(east.bootstrap, topic, 500))
    wait_until(lambda: len(read_confluent(east.bootstrap, topic)) < len(produced) / 2, 60,
               "the cleaner compacting the topic", interval=0.5)
    target = mirror.replicate(topic)
    produce_confluent(west.bootstrap, target, [Out(b"c7", b"planted", stamp)])
    code = run(spark, "--bootstrap", east.bootstrap, "--topics", topic, "--output",
               str(tmp_path), "--verify", "--mirror-bootstrap", west.bootstrap,
               "--source-alias", ALIAS)
    report = json.loads((tmp_path / "verify.json").read_text())
    expected = model(produced)[(0, b"c7")].decode()
    assert report["differences"] == [{"where": "mirror", "topic": topic, "partition": 0,
                                      "key": "c7", "snapshot": expected, "found": "planted"}]
    assert code == 1


def test_aborted_updates_are_in_neither_the_snapshot_nor_the_verification(
        spark: SparkSession, east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
        tmp_path: Path) -> None:
    """Committed values, then an aborted transaction updating every key on the source, and an
    aborted update on the mirror: the snapshot holds the committed values, and --verify,
    reading both clusters read_committed, agrees with it."""
    topic = create_topic(east.bootstrap, unique("accounts"), config=COMPACTED)
    stamp = now_ms()
    committed = {f"a{i}".encode(): f"v{i}".encode() for i in range(10)}
    produce_transactions(east.bootstrap, topic, [
        [Out(key, value, stamp) for key, value in committed.items()],
        [Out(key, b"aborted", stamp + 1) for key in committed]], [False, True])
    target = mirror.replicate(topic)
    produce_transactions(west.bootstrap, target, [[Out(b"a3", b"aborted copy", stamp + 2)]],
                         [True])
    code = run(spark, "--bootstrap", east.bootstrap, "--topics", topic, "--output",
               str(tmp_path), "--verify", "--mirror-bootstrap", west.bootstrap,
               "--source-alias", ALIAS)
    rows = spark.read.parquet(str(tmp_path / "snapshot")).collect()
    assert {bytes(r.key): bytes(r.value) for r in rows} == committed
    assert json.loads((tmp_path / "verify.json").read_text())["differences"] == []
    assert code == 0
