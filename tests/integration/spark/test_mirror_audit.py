"""The mirroring audit against two real clusters: a clean mirror audits complete (exit 0);
deliberate damage on the target (records deleted, extra records, a changed value) is reported
in exactly the damaged buckets with the right status (exit 1); a compacted topic whose
source's cleaner ran after the mirror copied it audits compacted (exit 0), and a changed
latest value there is a mismatch (exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from odradek.spark import audit, audit_contract
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import (
    Out,
    Rec,
    confluent_consumer,
    create_topic,
    now_ms,
    produce_confluent,
    produce_transactions,
    read_confluent,
    receive,
    unique,
)
from tests.integration.spark.mirroring import ALIAS, Mirror, dev_cluster
from tests.integration.test_compaction import FAST_CLEANER, set_topic_config
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
BUCKET_MS = 600_000
RECORDS, PARTITIONS = 600, 3


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """West's cleaner is off: a target whose cleaner has not run yet, so that a compacted
    topic differs by what east's cleaner removed after the mirror copied it."""
    yield from dev_cluster(tmp_path_factory, "west",
                           {**FAST_CLEANER, "log.cleaner.enable": "false"})


class Orders:
    """`orders-<id>` on east, three partitions, an hour of records two hours ago (six
    10-minute buckets, timestamps rising with the offset), and its mirror on west."""

    NAME = "orders"
    CONFIG: dict[str, str] = {}

    def __init__(self, east: BrokerProcess, west: BrokerProcess, mirror: Mirror) -> None:
        self.east, self.west = east.bootstrap, west.bootstrap
        self.start = (now_ms() - 7_200_000) // BUCKET_MS * BUCKET_MS
        self.topic = create_topic(self.east, unique(self.NAME), PARTITIONS, config=self.CONFIG)
        self.fill()
        self.target = mirror.replicate(self.topic)

    def stamp(self, i: int) -> int:
        """The timestamp of the i-th record `fill` writes."""
        return self.start + i * (6 * BUCKET_MS // RECORDS)

    def fill(self) -> None:
        produce_confluent(self.east, self.topic, [
            Out(f"order-{i}".encode(), f"amount={i}".encode(), self.stamp(i),
                (("region", b"eu"),), i % PARTITIONS) for i in range(RECORDS)])

    def records(self, bucket: int, tag: str) -> list[Out]:
        """RECORDS // 6 records spread over `bucket`, keyed by `tag`."""
        count = RECORDS // 6
        return [Out(f"{tag}-{bucket}-{i}".encode(), f"amount={i}".encode(),
                    self.start + bucket * BUCKET_MS + i * (BUCKET_MS // count), (),
                    i % PARTITIONS) for i in range(count)]


    def target_records(self, partition: int) -> list[Rec]:
        return read_confluent(self.west, self.target, partitions=(partition,))

    def bucket(self, record: Rec) -> int:
        return record.timestamp // BUCKET_MS * BUCKET_MS

    def audit(self, spark: SparkSession, output: Path, *extra: str) -> tuple[int, Any]:
        args = [*self.flags(output), *extra]
        code = audit.run(_parser().parse_args(args), spark)
        return code, json.loads((output / "summary.json").read_text())

    def flags(self, output: Path) -> list[str]:
        return ["--source-bootstrap", self.east, "--target-bootstrap", self.west,
                "--source-alias", ALIAS, "--replication-policy", "default",
                "--topics", f"{self.topic}", "--from", str(self.start),
                "--to", str(self.start + 6 * BUCKET_MS), "--bucket", "10m", "--grace", "5m",
                "--output", str(output)]


class TransactionalOrders(Orders):
    """Orders written in transactions: in each bucket one committed and one aborted."""

    def fill(self) -> None:
        produce_transactions(self.east, self.topic,
                             [self.records(b, tag) for b in range(6) for tag in ("paid", "void")],
                             [tag == "void" for _ in range(6) for tag in ("paid", "void")])


class Customers(Orders):
    """`customers-<id>`, compacted: 150 keys each written four times, 150 records apart, so
    that the latest value of every key lies in the last two buckets; five keys end in a
    tombstone, in the fifth bucket. Partition i % 3 keeps each key in one partition."""

    NAME = "customers"
    CONFIG = {"cleanup.policy": "compact", "delete.retention.ms": "100"}
    KEYS = 150
    TOMBSTONES = range(0, 50, 10)

    def fill(self) -> None:
        produce_confluent(self.east, self.topic, [
            Out(self.key(i), None if self.tombstone(i) else f"tier={i}".encode(), self.stamp(i),
                (("region", b"eu"),), i % PARTITIONS) for i in range(RECORDS)])

    def key(self, i: int) -> bytes:
        return f"customer-{i % self.KEYS}".encode()

    def tombstone(self, i: int) -> bool:
        return i >= RECORDS - self.KEYS and i % self.KEYS in self.TOMBSTONES

    def compact_east(self) -> None:
        """Until east's cleaner has left the latest value of each live key and nothing
        else (older values and tombstones gone): segment.ms lowered, a record stamped now
        in each partition rolls the active segment (its first record is two hours older),
        and the cleaner runs every 100 ms."""
        # forwarded to the controller, which a loaded machine may not answer in time; a SET
        # can be sent again
        wait_until(lambda: set_topic_config(self.east, self.topic, "segment.ms", "1000") is None,
                   120, "segment.ms lowered on east", ignoring=KafkaException)
        latest = {(i % PARTITIONS, self.key(i), f"tier={i}".encode(), self.stamp(i))
                  for i in range(RECORDS - self.KEYS, RECORDS) if not self.tombstone(i)}

        def compacted() -> bool:
            produce_confluent(self.east, self.topic, [  # until the new segment.ms applies
                Out(b"sentinel", b"roll", now_ms(), (), p) for p in range(PARTITIONS)])
            held = read_confluent(self.east, self.topic, range(PARTITIONS))
            return {(r.partition, r.key, r.value, r.timestamp) for r in held
                    if r.key != b"sentinel"} == latest

        wait_until(compacted, 180, "east's cleaner compacting the topic", interval=0.5)


def _parser() -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    audit.add_arguments(parser)
    return parser


def statuses(summary: Any) -> dict[int, str]:
    return {b["bucket_start_ms"]: b["status"] for b in summary["buckets"]}


def delete_before(bootstrap: str, topic: str, partition: int, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    next(iter(futures.values())).result(20)


def test_a_clean_mirror_audits_complete(spark: SparkSession, east: BrokerProcess,
                                        west: BrokerProcess, mirror: Mirror,
                                        tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    code, summary = orders.audit(spark, tmp_path)
    assert code == 0 and summary["complete"] is True
    assert len(summary["buckets"]) == 6
    assert set(statuses(summary).values()) == {"complete"}
    assert all(b["source_count"] == b["target_count"] == 100 for b in summary["buckets"])
    assert summary["buckets"][0]["topic"] == orders.topic
    assert summary["buckets"][0]["target_topic"] == f"east.{orders.topic}"
    assert summary["totals"]["source_records"] == RECORDS
    assert summary["worst_lag"]["records"] == 0 and summary["worst_lag"]["ms"] == 0
    table = spark.read.parquet(str(tmp_path / "buckets"))
    assert table.count() == 6 and {r.status for r in table.collect()} == {"complete"}
    consumer = confluent_consumer(west.bootstrap, **{"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(audit_contract.AUDIT_TOPIC, 0, 0)])
    try:
        keys = {json.loads(m.key())["bucket_start_ms"] for m in receive(consumer, 6)
                if json.loads(m.key())["topic"] == orders.topic}
    finally:
        consumer.close()
    assert keys == set(statuses(summary))


def test_aborted_transactions_on_either_side_are_not_counted(
        spark: SparkSession, east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
        tmp_path: Path) -> None:
    """Aborted transactions between the committed ones on the source, and aborted copies on
    the target (what every restart of an exactly-once mirror leaves): the audit counts the
    committed records only, and every bucket is complete."""
    orders = TransactionalOrders(east, west, mirror)
    produce_transactions(west.bootstrap, orders.target,
                         [orders.records(b, "retried") for b in range(6)], [True] * 6)
    code, summary = orders.audit(spark, tmp_path)
    assert set(statuses(summary).values()) == {"complete"}
    assert all(b["source_count"] == b["target_count"] == RECORDS // 6
               for b in summary["buckets"])
    assert code == 0 and summary["complete"] is True


def test_records_deleted_on_the_target_are_missing(spark: SparkSession, east: BrokerProcess,
                                                   west: BrokerProcess, mirror: Mirror,
                                                   tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    deleted = orders.target_records(1)[:120]
    delete_before(orders.west, orders.target, 1, 120)
    code, summary = orders.audit(spark, tmp_path)
    damaged = {orders.bucket(r) for r in deleted}
    assert code == 1 and summary["complete"] is False
    assert {b for b, s in statuses(summary).items() if s != "complete"} == damaged
    assert {s for b, s in statuses(summary).items() if b in damaged} == {"missing"}
    assert summary["totals"]["target_records"] == RECORDS - 120
    assert summary["worst_lag"]["partition"] == 1 and summary["worst_lag"]["records"] == 120


def test_records_produced_into_the_mirrored_topic_are_extra(
        spark: SparkSession, east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
        tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    duplicate = orders.target_records(0)[10]
    stray = Out(b"stray", b"x", orders.start + 4 * BUCKET_MS + 5, (), 2)
    produce_confluent(orders.west, orders.target, [
        Out(duplicate.key, duplicate.value, duplicate.timestamp, duplicate.headers, 0), stray])
    code, summary = orders.audit(spark, tmp_path)
    damaged = {orders.bucket(duplicate), orders.start + 4 * BUCKET_MS}
    assert code == 1
    assert {b: s for b, s in statuses(summary).items() if s != "complete"} == \
        dict.fromkeys(damaged, "extra")


def test_a_changed_value_is_a_mismatch(spark: SparkSession, east: BrokerProcess,
                                       west: BrokerProcess, mirror: Mirror,
                                       tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    original = orders.target_records(2)[0]
    delete_before(orders.west, orders.target, 2, 1)  # the original, and nothing else
    assert original.value is not None
    changed = original.value.replace(b"amount=", b"amount:")  # as long: only the checksum sees it
    produce_confluent(orders.west, orders.target, [
        Out(original.key, changed, original.timestamp, original.headers, 2)])
    code, summary = orders.audit(spark, tmp_path)
    assert code == 1
    assert {b: s for b, s in statuses(summary).items() if s != "complete"} == \
        {orders.bucket(original): "mismatch"}


def test_a_source_compacted_after_mirroring_audits_compacted_not_extra(
        spark: SparkSession, east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
        tmp_path: Path) -> None:
    """West still holds the older values and the tombstones that east's cleaner removed:
    the buckets differ in records, yet every key's latest value agrees, so they are
    compacted and the audit passes. Then a new latest value of one key on west is a
    mismatch in the bucket of that key's latest record on east."""
    customers = Customers(east, west, mirror)
    customers.compact_east()
    code, summary = customers.audit(spark, tmp_path / "compacted")
    buckets = {b["bucket_start_ms"]: b for b in summary["buckets"]}
    starts = [customers.start + n * BUCKET_MS for n in range(6)]
    assert statuses(summary) == {**dict.fromkeys(starts[:5], "compacted"),
                                 starts[5]: "complete"}
    assert [(buckets[s]["source_count"], buckets[s]["target_count"]) for s in starts] == \
        [(0, 100)] * 4 + [(45, 100), (100, 100)]
    assert [(buckets[s]["source_keys"], buckets[s]["target_keys"],
             buckets[s]["differing_keys"]) for s in starts] == \
        [(0, 0, 0)] * 4 + [(45, 45, 0), (100, 100, 0)]
    assert summary["totals"]["compacted"] == 5 and summary["totals"]["extra"] == 0
    assert summary["compacted_topics"] == [customers.topic]
    assert code == 0 and summary["complete"] is True

    changed = RECORDS - 73  # customer-77's latest value, in the last bucket
    produce_confluent(west.bootstrap, customers.target, [
        Out(customers.key(changed), b"tier=changed", customers.stamp(changed),
            (("region", b"eu"),), changed % PARTITIONS)])
    code, summary = customers.audit(spark, tmp_path / "changed")
    last = {b["bucket_start_ms"]: b for b in summary["buckets"]}[starts[5]]
    assert {b: s for b, s in statuses(summary).items() if s != "compacted"} == \
        {starts[5]: "mismatch"}
    assert (last["source_count"], last["target_count"]) == (100, 101)  # by records: extra
    assert (last["source_keys"], last["target_keys"], last["differing_keys"]) == (100, 100, 1)
    assert code == 1 and summary["complete"] is False


def test_damage_inside_the_grace_period_does_not_fail(spark: SparkSession, east: BrokerProcess,
                                                      west: BrokerProcess, mirror: Mirror,
                                                      tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    delete_before(orders.west, orders.target, 0, 1)
    code, summary = orders.audit(spark, tmp_path, "--grace", "3h")
    assert code == 0 and summary["complete"] is True
    assert "missing" in statuses(summary).values()
    assert all(b["in_grace"] for b in summary["buckets"])


def test_spark_submit_runs_the_job(east: BrokerProcess, west: BrokerProcess, mirror: Mirror,
                                   tmp_path: Path) -> None:
    orders = Orders(east, west, mirror)
    delete_before(orders.west, orders.target, 0, 1)
    submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [str(submit), "--conf", "spark.ui.enabled=false", str(ROOT / "spark/jobs/mirror_audit.py"),
         *orders.flags(tmp_path)], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "missing" in done.stdout and "INCOMPLETE (1 buckets)" in done.stdout
    assert json.loads((tmp_path / "summary.json").read_text())["complete"] is False


@pytest.mark.parametrize(("flags", "message"), [
    (["--bucket", "ten minutes"], "not a duration"),
    (["--from", "yesterday"], "not an ISO-8601 time"),
    (["--topics", "("], "missing ), unterminated subpattern"),
])
def test_bad_flags_get_one_line(flags: list[str], message: str, tmp_path: Path) -> None:
    args = ["audit", "--source-bootstrap", "127.0.0.1:1", "--target-bootstrap", "127.0.0.1:1",
            "--source-alias", "east", "--output", str(tmp_path), *flags]
    done = subprocess.run([*ODRADEK, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_the_wrapper_without_pyspark_says_so_in_one_line(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['pyspark'] = None; from odradek.cli.main import main; "
            "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "audit", "--source-bootstrap", "x",
                           "--target-bootstrap", "y", "--source-alias", "east", "--output",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "odradek: PySpark is not installed: pip install 'odradek[spark]'\n"
