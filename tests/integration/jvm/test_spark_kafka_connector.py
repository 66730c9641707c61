"""Spark's own Kafka connector (spark-sql-kafka-0-10, `format("kafka")`) against Odradek, from
PySpark with the connector's jars on the classpath: batch and streaming reads and writes, offset
and timestamp limits, headers and read_committed, each checked against what confluent-kafka
reads or wrote; and our `odradek-kafka` source returns the very rows `kafka` returns.

`spark.jars` (`jvm_toolchain.spark_kafka_conf()`: the connector's classpath minus the
artifacts PySpark ships in pyspark/jars) only works for the session that starts the JVM, so
tests/integration/spark/conftest.py gives its session the same conf: whichever layer runs
first in a pytest process, the JVM has the connector. Most of the wall time is the
SparkSession's start and the first read through each source (class loading, Python workers),
not the broker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from confluent_kafka import Producer
from pyspark.sql import DataFrame, Row, SparkSession

from odradek.spark.session import spark_session
from tests import jvm_toolchain
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    Out,
    Rec,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.spark.rows import (
    StreamRun,
    load,
    read_stream,
    recs,
    run_available_now,
)
from tests.integration.test_transactions import transactional

pytestmark = pytest.mark.spark

TIMEOUT = 120.0


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The module's session, with the connector; a session already active in this process
    (the spark layer's, whose conf adds the connector too) is used and left running."""
    jvm_toolchain.require()
    active = SparkSession.getActiveSession()
    session = spark_session("odradek-spark-kafka", conf={
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4", **jvm_toolchain.spark_kafka_conf()})
    yield session
    if active is None:
        session.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("spark-kafka")
    process = BrokerProcess(root / "data", root / "broker.log")
    process.start()
    yield process
    process.stop()


def outs(count: int, partitions: int, stamp: int, tag: str = "v") -> list[Out]:
    """Records with keys (one null), values (one null) and headers (repeated keys, a null)."""
    return [Out(None if i == 3 else f"k{i}".encode(),
                None if i == 5 else f"{tag}{i}".encode() * (1 + i % 4), stamp + 1000 * i,
                (("i", str(i).encode()), ("n", None), ("i", b"again")) if i % 3 else (),
                i % partitions) for i in range(count)]


def rows(frame: DataFrame) -> list[Row]:
    return sorted(frame.collect(), key=lambda r: (r.topic, r.partition, r.offset))


def both(spark: SparkSession, bootstrap: str, **options: Any) -> list[Rec]:
    """The read through `kafka` and through `odradek-kafka`: the same schema and the same
    rows, every column; returned as records."""
    connector = load(spark, bootstrap, source="kafka", **options)
    ours = load(spark, bootstrap, **options)
    assert ours.schema == connector.schema
    assert rows(ours) == rows(connector)
    found = recs(connector)
    assert len(found) <= 1, found.keys()
    return next(iter(found.values()), [])


def between(records: list[Rec], start: dict[int, int], end: dict[int, int]) -> list[Rec]:
    return [r for r in records if start[r.partition] <= r.offset < end[r.partition]]


def test_batch_read_of_every_column(broker: BrokerProcess, spark: SparkSession) -> None:
    topic = create_topic(broker.bootstrap, unique("read"), partitions=3)
    produced = produce_confluent(broker.bootstrap, topic, outs(60, 3, now_ms()))
    everything = read_confluent(broker.bootstrap, topic, partitions=(0, 1, 2))
    assert everything == sorted(produced, key=lambda r: (r.partition, r.offset))
    assert both(spark, broker.bootstrap, subscribe=topic, includeHeaders="true") == everything
    appended = create_topic(broker.bootstrap, unique("appended"),
                            config={"message.timestamp.type": "LogAppendTime"})
    produce_confluent(broker.bootstrap, appended, outs(5, 1, now_ms() - 10**6))
    assert both(spark, broker.bootstrap, subscribe=appended) == \
        [r._replace(headers=()) for r in read_confluent(broker.bootstrap, appended)]
    plain = load(spark, broker.bootstrap, source="kafka", subscribe=f"{topic},{appended}")
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                             "timestampType"]
    kinds = {(r.topic, r.timestampType) for r in plain.collect()}
    assert kinds == {(topic, 0), (appended, 1)}  # CreateTime, LogAppendTime
    pattern = both(spark, broker.bootstrap, subscribePattern=f"{topic[:-3]}.*")
    assert [r[:5] for r in pattern] == [r[:5] for r in everything]
    assigned = both(spark, broker.bootstrap, assign=json.dumps({topic: [2]}))
    assert [r[:5] for r in assigned] == [r[:5] for r in everything if r.partition == 2]


def test_offsets_as_json(broker: BrokerProcess, spark: SparkSession) -> None:
    topic = create_topic(broker.bootstrap, unique("offsets"), partitions=3)
    produce_confluent(broker.bootstrap, topic, outs(90, 3, now_ms()))
    everything = read_confluent(broker.bootstrap, topic, partitions=(0, 1, 2))
    read = both(spark, broker.bootstrap, subscribe=topic, includeHeaders="true",
                startingOffsets=json.dumps({topic: {"0": 5, "1": -2, "2": 12}}),
                endingOffsets=json.dumps({topic: {"0": 20, "1": -1, "2": 13}}))
    assert read == between(everything, {0: 5, 1: 0, 2: 12}, {0: 20, 1: 30, 2: 13})
    assert len(read) == 15 + 30 + 1
    split = {source: load(spark, broker.bootstrap, source=source, subscribe=topic,
                          minPartitions="7").rdd.getNumPartitions()
             for source in ("kafka", "odradek-kafka")}
    assert split["kafka"] == split["odradek-kafka"] >= 6, split  # Spark's splitting


def test_limits_by_timestamp(broker: BrokerProcess, spark: SparkSession) -> None:
    topic = create_topic(broker.bootstrap, unique("times"), partitions=2)
    stamp = now_ms() - 1_000_000
    produce_confluent(broker.bootstrap, topic, outs(40, 2, stamp))
    everything = read_confluent(broker.bootstrap, topic, partitions=(0, 1))

    def stamped(low: dict[int, int], high: dict[int, int]) -> list[Rec]:
        return [r for r in everything if low[r.partition] <= r.timestamp < high[r.partition]]

    start, end = stamp + 10_500, stamp + 30_000
    assert both(spark, broker.bootstrap, subscribe=topic, includeHeaders="true",
                startingTimestamp=start, endingTimestamp=end) == \
        stamped({0: start, 1: start}, {0: end, 1: end})
    by_partition = {topic: {"0": stamp + 4_000, "1": stamp + 20_500}}
    ending = {topic: {"0": stamp + 9_000, "1": stamp + 10**9}}  # past the end: latest
    read = both(spark, broker.bootstrap, subscribe=topic, includeHeaders="true",
                startingOffsetsByTimestamp=json.dumps(by_partition),
                endingOffsetsByTimestamp=json.dumps(ending))
    assert read == stamped({0: stamp + 4_000, 1: stamp + 20_500},
                           {0: stamp + 9_000, 1: stamp + 10**9})
    assert [int(r.offset) for r in read if r.partition == 0] == [2, 3, 4]
    late = stamp + 10**9
    for source in ("kafka", "odradek-kafka"):
        with pytest.raises(Exception, match="No offset matched"):
            load(spark, broker.bootstrap, source=source, subscribe=topic,
                 startingTimestamp=late).collect()
    assert both(spark, broker.bootstrap, subscribe=topic, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest") == []


def test_read_committed_over_aborted_and_open_transactions(broker: BrokerProcess,
                                                           spark: SparkSession) -> None:
    topic = create_topic(broker.bootstrap, unique("txn"), partitions=2)
    producer = transactional(broker.bootstrap, f"spark-{topic}")
    for outcome in ("commit", "abort", "commit", "abort", "commit"):
        transaction(producer, topic, outcome, 20)
    committed = both(spark, broker.bootstrap, subscribe=topic,
                     **{"kafka.isolation.level": "read_committed"})
    assert sorted(r.value for r in committed) == sorted(
        f"commit-{i}".encode() for _ in range(3) for i in range(20))
    uncommitted = both(spark, broker.bootstrap, subscribe=topic)
    assert [r.value[:5] for r in uncommitted if r.value].count(b"abort") == 40
    assert len(uncommitted) == 100
    transaction(producer, topic, "open", 10)  # the last stable offset stays before it
    try:
        assert both(spark, broker.bootstrap, subscribe=topic,
                    **{"kafka.isolation.level": "read_committed"}) == committed
        assert len(both(spark, broker.bootstrap, subscribe=topic)) == 110
    finally:
        producer.abort_transaction(TIMEOUT)
    assert both(spark, broker.bootstrap, subscribe=topic,
                **{"kafka.isolation.level": "read_committed"}) == committed


def transaction(producer: Producer, topic: str, outcome: str, count: int) -> None:
    """`count` records over two partitions in one transaction, committed, aborted or left
    open."""
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, key=b"k", value=f"{outcome}-{i}".encode(), partition=i % 2)
    producer.flush(TIMEOUT)
    if outcome == "commit":
        producer.commit_transaction(TIMEOUT)
    elif outcome == "abort":
        producer.abort_transaction(TIMEOUT)


def test_streaming_read_resumes_from_its_checkpoint(broker: BrokerProcess, spark: SparkSession,
                                                    tmp_path: Path) -> None:
    topic = create_topic(broker.bootstrap, unique("stream"), partitions=3)
    produce_confluent(broker.bootstrap, topic, outs(45, 3, now_ms()))
    first = stream_batches(spark, broker.bootstrap, topic, tmp_path / "checkpoint").batches
    assert len(first) >= 3 and all(len(batch) <= 20 for batch in first)  # 45 at most 20 a time
    everything = read_confluent(broker.bootstrap, topic, partitions=(0, 1, 2))
    assert sorted(r for batch in first for r in batch) == everything
    produce_confluent(broker.bootstrap, topic, outs(15, 3, now_ms(), tag="w"))
    second = stream_batches(spark, broker.bootstrap, topic, tmp_path / "checkpoint").batches
    now = read_confluent(broker.bootstrap, topic, partitions=(0, 1, 2))
    assert sorted(r for batch in second for r in batch) == [r for r in now
                                                             if r not in everything]
    memory = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("includeHeaders", "true").load()
              .writeStream.format("memory").queryName(topic.replace("-", "_"))
              .option("checkpointLocation", str(tmp_path / "memory")).start())
    try:
        memory.processAllAvailable()
        assert recs(spark.table(topic.replace("-", "_")))[topic] == now
    finally:
        memory.stop()


def stream_batches(spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path,
                   source: str = "kafka") -> StreamRun:
    """One availableNow run of `source` from `checkpoint`, at most 20 offsets a batch."""
    return run_available_now(read_stream(spark, bootstrap, source, subscribe=topic,
                                         startingOffsets="earliest", includeHeaders="true",
                                         maxOffsetsPerTrigger=20), checkpoint)


def test_odradek_kafka_streams_and_writes_as_the_connector(
        broker: BrokerProcess, spark: SparkSession, tmp_path: Path) -> None:
    """`odradek-kafka` against `kafka`: the same micro-batches of the same rows, the same end
    offsets, again after a restart from each one's checkpoint; and the same frame written by
    each sink reads the same (keyed rows without a partition placed by murmur2 alike)."""
    topic = create_topic(broker.bootstrap, unique("parity"), partitions=3)
    for tag in ("v", "w"):
        produce_confluent(broker.bootstrap, topic, outs(45, 3, now_ms(), tag=tag))
        runs = {source: stream_batches(spark, broker.bootstrap, topic,
                                       tmp_path / source, source)
                for source in ("kafka", "odradek-kafka")}
        assert runs["odradek-kafka"].batches == runs["kafka"].batches
        assert runs["odradek-kafka"].end_offset == runs["kafka"].end_offset
        assert len(runs["kafka"].batches) == 3  # 45 new offsets, at most 20 a batch
    assert sum(int(o) for o in runs["kafka"].end_offset[topic].values()) == 90
    rows = [(f"k{i}".encode(), f"v{i}" if i % 5 else None,
             [("h", str(i).encode()), ("n", None)] if i % 2 else None,
             None if i % 3 else i % 3 + i % 2) for i in range(60)]
    frame = spark.createDataFrame(rows, "key binary, value string, headers "
                                        "array<struct<key: string, value: binary>>, "
                                        "partition int").coalesce(1)
    copies = {}
    for source in ("kafka", "odradek-kafka"):
        copies[source] = create_topic(broker.bootstrap, unique("written"), partitions=3)
        frame.write.format(source).option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("topic", copies[source]).mode("append").save()
    read = {source: [r[:4] + r[5:] for r in read_confluent(broker.bootstrap, topic,
                                                            partitions=(0, 1, 2))]
            for source, topic in copies.items()}
    assert read["odradek-kafka"] == read["kafka"] and len(read["kafka"]) == 60


def test_batch_write(broker: BrokerProcess, spark: SparkSession) -> None:
    topics = [create_topic(broker.bootstrap, unique("write"), partitions=2) for _ in range(2)]
    data = [(topics[i % 2], None if i % 5 == 0 else f"k{i}".encode(), f"v{i}".encode(), i % 4 // 2,
             [("h", str(i).encode()), ("n", None)]) for i in range(40)]
    frame = spark.createDataFrame(data, "topic string, key binary, value binary, partition int, "
                                        "headers array<struct<key: string, value: binary>>")
    before = now_ms()
    frame.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).save()
    after = now_ms()
    for index, topic in enumerate(topics):
        written = read_confluent(broker.bootstrap, topic, partitions=(0, 1))
        expected = [(p, k, v, tuple(h)) for t, k, v, p, h in data if t == topic]
        assert sorted(((r.partition, r.key, r.value, r.headers) for r in written), key=str) == \
            sorted(expected, key=str), index
        for partition in (0, 1):
            offsets = [r.offset for r in written if r.partition == partition]
            assert offsets == list(range(10))
        assert all(before <= r.timestamp <= after for r in written)
    option = unique("write-option")
    create_topic(broker.bootstrap, option)
    frame.drop("topic", "partition").write.format("kafka") \
        .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", option).save()
    assert sorted(r.value for r in read_confluent(broker.bootstrap, option)) == \
        sorted(v for _, _, v, _, _ in data)


def test_streaming_write(broker: BrokerProcess, spark: SparkSession, tmp_path: Path) -> None:
    source = create_topic(broker.bootstrap, unique("source"), partitions=3)
    sink = create_topic(broker.bootstrap, unique("sink"), partitions=3)
    produce_confluent(broker.bootstrap, source, outs(30, 3, now_ms()))
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("includeHeaders", "true").load()
             .selectExpr("key", "value", "headers", "partition")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(TIMEOUT)
    assert query.exception() is None
    copied = read_confluent(broker.bootstrap, sink, partitions=(0, 1, 2))
    original = read_confluent(broker.bootstrap, source, partitions=(0, 1, 2))
    assert [r[:4] + r[5:] for r in copied] == [r[:4] + r[5:] for r in original]


def test_one_copy_of_each_artifact_on_the_classpath(spark: SparkSession) -> None:
    shipped = {jvm_toolchain.artifact(jar)
               for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    added = [Path(jar) for jar in jvm_toolchain.spark_kafka_jars()]
    names = {jvm_toolchain.artifact(jar) for jar in added}
    assert {"spark-sql-kafka-0-10_2.13", "kafka-clients"} <= names
    assert not names & shipped and len(names) == len(added)
    assert {"scala-library", "spark-tags_2.13", "hadoop-client-api"} <= shipped
    listed = spark.sparkContext._jsc.sc().listJars()
    assert sorted(Path(listed.apply(i)).name for i in range(listed.size())) == \
        sorted(jar.name for jar in added)
