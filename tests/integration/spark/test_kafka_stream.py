"""`odradek-kafka` streaming and writing against a real broker: micro-batches from a
checkpoint with each record exactly once across restarts, `startingOffsets`,
`maxOffsetsPerTrigger`'s batches as Spark cuts them, `failOnDataLoss` both ways, and the sink
in batch and streaming with every column, each checked against what confluent-kafka reads or
wrote."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import CapturedException

from odradek.mirror.progress import partition_for
from odradek.spark.offset_ranges import rate_limit
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
from tests.integration.spark.rows import StreamRun, read_stream, run_available_now, start_query

HEADERS = "array<struct<key: string, value: binary>>"
TIMEOUT = 180.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("stream")
    process = BrokerProcess(root / "data", root / "broker.log")
    process.start()
    yield process
    process.stop()


def outs(count: int, partitions: int, tag: str = "v") -> list[Out]:
    """Keyed records (one key null) with headers (a repeated key, a null value) on most."""
    stamp = now_ms()
    return [Out(None if i == 3 else f"k{i}".encode(), f"{tag}{i}".encode(), stamp + i,
                (("i", str(i).encode()), ("n", None), ("i", b"again")) if i % 3 else (),
                i % partitions) for i in range(count)]


def everything(bootstrap: str, topic: str, partitions: int) -> list[Rec]:
    return read_confluent(bootstrap, topic, partitions=tuple(range(partitions)))


def test_restarts_from_the_checkpoint_with_each_record_once(
        spark: SparkSession, broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap, checkpoint = broker.bootstrap, tmp_path / "checkpoint"
    topic = create_topic(bootstrap, unique("restart"), partitions=3)
    produce_confluent(bootstrap, topic, outs(30, 3))
    first = StreamRun()
    query = start_query(read_stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                                    includeHeaders="true")
                        .writeStream.foreachBatch(first.collect)
                        .option("checkpointLocation", str(checkpoint)))
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(first.records) == everything(bootstrap, topic, 3)
    produce_confluent(bootstrap, topic, outs(20, 3, tag="w"))
    frame = read_stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                        includeHeaders="true")
    second = run_available_now(frame, checkpoint)
    now = everything(bootstrap, topic, 3)
    assert sorted(second.records) == [r for r in now if r not in first.records]
    assert len(second.records) == 20
    assert second.end_offset == {topic: {"0": 17, "1": 17, "2": 16}}  # Spark's offset JSON
    assert run_available_now(frame, checkpoint).records == []  # nothing new: nothing again


def test_starting_offsets_latest_and_as_json(spark: SparkSession, broker: BrokerProcess,
                                             tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("starting"), partitions=2)
    produce_confluent(bootstrap, topic, outs(10, 2))
    latest = StreamRun()
    query = start_query(read_stream(spark, bootstrap, subscribe=topic)  # latest by default
                        .writeStream.foreachBatch(latest.collect)
                        .option("checkpointLocation", str(tmp_path / "latest")))
    try:
        query.processAllAvailable()  # the initial offsets are taken: the log ends
        produce_confluent(bootstrap, topic, outs(6, 2, tag="late"))
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(r.value for r in latest.records) == sorted(f"late{i}".encode()
                                                             for i in range(6))
    given = run_available_now(read_stream(spark, bootstrap, subscribe=topic,
                                          startingOffsets=json.dumps({topic: {"0": 2, "1": -2}})),
                              tmp_path / "json")
    assert [r[:2] for r in sorted(given.records)] == \
        [(0, o) for o in range(2, 8)] + [(1, o) for o in range(8)]


def test_max_offsets_per_trigger_cuts_batches_as_spark(spark: SparkSession,
                                                       broker: BrokerProcess,
                                                       tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("rate"), partitions=3)
    sizes = {0: 60, 1: 30, 2: 10}
    produce_confluent(bootstrap, topic, [Out(b"k", f"{p}-{i}".encode(), now_ms(), partition=p)
                                         for p, n in sizes.items() for i in range(n)])
    run = run_available_now(read_stream(spark, bootstrap, subscribe=topic,
                                        startingOffsets="earliest", maxOffsetsPerTrigger=25),
                            tmp_path / "checkpoint")
    expected, start = [], {(topic, p): 0 for p in sizes}
    latest = {(topic, p): n for p, n in sizes.items()}
    while start != latest:
        end = rate_limit(25, start, latest, {})
        expected.append([(p, o) for (_, p), s in sorted(start.items())
                         for o in range(s, end[(topic, p)])])
        start = end
    assert [[r[:2] for r in batch] for batch in run.batches] == expected
    assert len(expected) == 5 and all(len(batch) <= 25 for batch in expected)
    assert sorted(run.records) == everything(bootstrap, topic, 3)


def test_fail_on_data_loss_fails_or_skips_what_was_deleted(
        spark: SparkSession, broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("loss"))
    produce_confluent(bootstrap, topic, outs(20, 1))
    failing, skipping = tmp_path / "failing", tmp_path / "skipping"

    def frame(**options: Any) -> DataFrame:
        return read_stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                           includeHeaders="true", **options)

    assert len(run_available_now(frame(), failing).records) == 20
    shutil.copytree(failing, skipping)
    produce_confluent(bootstrap, topic, outs(20, 1, tag="w"))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    next(iter(admin.delete_records([TopicPartition(topic, 0, 30)]).values())).result(TIMEOUT)
    with pytest.raises(CapturedException) as failed:
        run_available_now(frame(), failing)
    assert "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE" in str(failed.value)
    assert f"offset [20, 40) for topic partition {topic}-0" in str(failed.value)
    skipped = run_available_now(frame(failOnDataLoss="false"), skipping)
    assert [r.offset for r in skipped.records] == list(range(30, 40))
    assert skipped.records == everything(bootstrap, topic, 1)


def sink_rows(topics: list[str]) -> list[tuple[Any, ...]]:
    """(topic, key, value, headers, partition): keys null and not, headers with a null
    value, partitions given and left to the partitioner."""
    return [(topics[i % 2], None if i % 7 == 0 else f"k{i}".encode(), f"v{i}",
             [("h", str(i).encode()), ("n", None)] if i % 2 else None,
             None if i % 3 == 0 and i % 7 else i % 2) for i in range(42)]


def expected_records(rows: list[tuple[Any, ...]], topic: str, partitions: int
                     ) -> list[tuple[Any, ...]]:
    """What each row becomes: its partition (murmur2 of the key when none is given), key,
    value as UTF-8 and headers."""
    return sorted(((p if p is not None else partition_for(k, partitions), k, v.encode(),
                    tuple(h or ())) for t, k, v, h, p in rows if t == topic), key=repr)


def written(bootstrap: str, topic: str, partitions: int) -> list[tuple[Any, ...]]:
    records = everything(bootstrap, topic, partitions)
    for partition in range(partitions):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == list(range(len(offsets)))
    return sorted(((r.partition, r.key, r.value, r.headers) for r in records), key=repr)


def test_batch_write_of_every_column(spark: SparkSession, broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topics = [create_topic(bootstrap, unique("write"), partitions=2) for _ in range(2)]
    rows = sink_rows(topics)
    frame = spark.createDataFrame(rows, f"topic string, key binary, value string, "
                                        f"headers {HEADERS}, partition int")
    before = now_ms()
    frame.write.format("odradek-kafka").option("kafka.bootstrap.servers", bootstrap) \
        .mode("append").save()
    for topic in topics:
        assert written(bootstrap, topic, 2) == expected_records(rows, topic, 2)
        assert all(r.timestamp >= before for r in everything(bootstrap, topic, 2))
    option = create_topic(bootstrap, unique("write-option"), partitions=2)
    frame.selectExpr("topic", "CAST(key AS STRING) AS key", "value") \
        .write.format("odradek-kafka").option("kafka.bootstrap.servers", bootstrap) \
        .option("topic", option).mode("append").save()  # the option wins over the column
    assert sorted(((r.key, r.value) for r in everything(bootstrap, option, 2)), key=repr) == \
        sorted(((k, v.encode()) for _, k, v, _, _ in rows), key=repr)


@pytest.mark.parametrize(("columns", "options", "message"), [
    ("topic string, key binary", {}, "Required attribute 'value' not found"),
    ("key binary, value binary", {}, "topic option required when no 'topic' attribute"),
    ("topic string, key int, value binary", {},
     "key attribute unsupported type int. key must be a\\(n\\) string or binary"),
    ("topic int, value binary", {}, "topic attribute unsupported type int"),
    ("topic string, value binary, partition string", {},
     "partition attribute unsupported type string. partition must be a\\(n\\) int"),
    ("topic string, value binary, headers array<string>", {},
     "headers attribute unsupported type array<string>. headers must be a\\(n\\) "
     "array<struct<key:string,value:binary>>"),
    ("topic string, value binary", {"mode": "overwrite"}, "Save mode Overwrite not allowed"),
])
def test_write_refuses_bad_input_with_sparks_messages(
        spark: SparkSession, columns: str, options: dict[str, str], message: str) -> None:
    frame = spark.createDataFrame([], columns)
    writer = frame.write.format("odradek-kafka").option("kafka.bootstrap.servers", "h:1") \
        .mode(options.get("mode", "append"))
    with pytest.raises(CapturedException, match=message):
        writer.save()


def test_a_null_topic_fails_the_write(spark: SparkSession, broker: BrokerProcess) -> None:
    frame = spark.createDataFrame([(None, b"v")], "topic string, value binary")
    with pytest.raises(CapturedException, match="KAFKA_NULL_TOPIC_IN_DATA"):
        frame.write.format("odradek-kafka").option("kafka.bootstrap.servers",
                                                   broker.bootstrap).mode("append").save()


def test_streaming_write_of_every_column(spark: SparkSession, broker: BrokerProcess,
                                         tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    source = create_topic(bootstrap, unique("copy-from"), partitions=3)
    sink = create_topic(bootstrap, unique("copy-to"), partitions=3)
    produce_confluent(bootstrap, source, outs(30, 3))
    query = start_query(
        read_stream(spark, bootstrap, subscribe=source, startingOffsets="earliest",
                    includeHeaders="true", maxOffsetsPerTrigger=12)
        .selectExpr("key", "value", "headers", "partition")
        .writeStream.format("odradek-kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink).option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True))
    assert query.awaitTermination(TIMEOUT)
    assert query.exception() is None
    copied, original = everything(bootstrap, sink, 3), everything(bootstrap, source, 3)
    assert [r[:4] + r[5:] for r in copied] == [r[:4] + r[5:] for r in original]
    assert query.lastProgress["sink"]["numOutputRows"] > 0
