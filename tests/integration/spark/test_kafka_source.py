"""The `odradek-kafka` PySpark data source against a real broker: every read is compared with
what a plain confluent-kafka consumer reads from the same offsets."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

from odradek.spark.offset_ranges import OffsetRange, split_ranges
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    Out,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    stored_codecs,
    unique,
)
from tests.integration.spark.rows import load, recs
from tests.integration.test_compaction import COMPACTED, FAST_CLEANER, roll_active_segment
from tests.integration.test_transactions import transactional
from tests.waiting import wait_until

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("source")
    process = BrokerProcess(root / "data", root / "broker.log", overrides=FAST_CLEANER)
    process.start()
    yield process
    process.stop()


def records(count: int, partitions: int, stamp: int, tag: str = "v") -> list[Out]:
    return [Out(f"k{i}".encode(), f"{tag}{i}".encode() * (1 + i % 7), stamp + i,
                (("i", str(i).encode()),), i % partitions) for i in range(count)]


def test_exact_offset_ranges_from_json_offsets(spark: SparkSession,
                                               broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("ranges"), partitions=3)
    produce_confluent(bootstrap, topic, records(90, 3, now_ms()))
    starting = {topic: {"0": 5, "1": -2, "2": 12}}
    ending = {topic: {"0": 20, "1": -1, "2": 13}}
    frame = load(spark, bootstrap, subscribe=topic, includeHeaders="true",
                 startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    consumer = read_confluent(bootstrap, topic, partitions=(0, 1, 2))
    bounds = {0: (5, 20), 1: (0, 30), 2: (12, 13)}
    expected = [r for r in consumer if bounds[r.partition][0] <= r.offset < bounds[r.partition][1]]
    assert recs(frame)[topic] == expected
    assert len(expected) == 15 + 30 + 1


def test_every_codec_reads_as_a_consumer_reads_it(spark: SparkSession,
                                                  broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topics = {codec: create_topic(bootstrap, unique(f"codec-{codec}")) for codec in CODECS}
    for codec, topic in topics.items():
        # one batch: librdkafka sends a batch uncompressed when compression would not shrink
        # it, as a record or two that a busy machine's producer sent alone
        produce_confluent(bootstrap, topic, records(300, 1, now_ms(), codec),
                          {"compression.type": codec, "linger.ms": 1000})
        assert set(stored_codecs(broker.data_dir, topic)) == {CODECS[codec]}
    frame = load(spark, bootstrap, subscribe=",".join(topics.values()), includeHeaders="true")
    read = recs(frame)
    for topic in topics.values():
        assert read[topic] == read_confluent(bootstrap, topic), topic


def test_headers_only_when_included_in_order_with_nulls(spark: SparkSession,
                                                        broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("headers"))
    headers = (("a", b"1"), ("n", None), ("a", b"2"), ("", b""))
    produce_confluent(bootstrap, topic, [Out(b"k", b"v", now_ms(), headers),
                                         Out(None, None, now_ms())])
    plain = load(spark, bootstrap, subscribe=topic)
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                             "timestampType"]
    with_headers = load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert with_headers.schema["headers"].simpleString() == \
        "headers:array<struct<key:string,value:binary>>"
    assert recs(with_headers)[topic] == read_confluent(bootstrap, topic)
    assert [r.headers for r in recs(with_headers)[topic]] == [headers, ()]
    assert [row.timestampType for row in plain.collect()] == [0, 0]
    assert with_headers.orderBy("offset").collect()[1].headers is None  # as Spark's `kafka`


def test_read_committed_skips_aborted_records(spark: SparkSession,
                                              broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("txn"), partitions=2)
    producer = transactional(bootstrap, f"spark-{topic}")
    for outcome in ("commit", "abort", "commit", "abort"):
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, key=f"{outcome}-{i}".encode(), value=outcome.encode(),
                             partition=i % 2)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)
    committed = recs(load(spark, bootstrap, subscribe=topic,
                          **{"kafka.isolation.level": "read_committed"}))[topic]
    everything = recs(load(spark, bootstrap, subscribe=topic))[topic]
    assert {r.value for r in committed} == {b"commit"} and len(committed) == 40
    assert [r.value for r in everything].count(b"abort") == 40 and len(everything) == 80
    for isolation, rows in (("read_committed", committed), ("read_uncommitted", everything)):
        plain = read_confluent(bootstrap, topic, (0, 1), isolation=isolation)
        assert [(r.partition, r.offset, r.value) for r in rows] == [
            (r.partition, r.offset, r.value) for r in plain], isolation


def test_compacted_topic_with_offset_gaps(spark: SparkSession, broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("compacted"),
                         config={**COMPACTED, "segment.ms": "500"})
    stamp, rng = now_ms(), random.Random(19)
    history = [Out(f"key-{rng.randrange(60)}".encode(), f"v{i}".encode() * 20, stamp)
               for i in range(1500)]
    produced = produce_confluent(bootstrap, topic, history, {"linger.ms": 5,
                                                             "batch.size": 4096})
    roll_active_segment(bootstrap, topic, 500)
    wait_until(lambda: len(read_confluent(bootstrap, topic)) < len(produced) / 2, 60,
               "the cleaner compacting the topic", interval=0.5)
    consumer = read_confluent(bootstrap, topic)
    offsets = [r.offset for r in consumer]
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets)))  # gaps
    assert recs(load(spark, bootstrap, subscribe=topic))[topic] == consumer
    split = load(spark, bootstrap, subscribe=topic, minPartitions="4")
    assert split.rdd.getNumPartitions() == 4
    assert recs(split)[topic] == consumer


def test_starting_and_ending_timestamps(spark: SparkSession, broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("times"), partitions=2)
    stamp = now_ms() - 100_000
    produce_confluent(bootstrap, topic, [Out(b"k", str(i).encode(), stamp + 1000 * i,
                                             partition=i % 2) for i in range(40)])
    frame = load(spark, bootstrap, subscribe=topic, startingTimestamp=stamp + 10_500,
                 endingTimestamp=stamp + 30_000)
    assert sorted(int(r.value) for r in recs(frame)[topic]) == list(range(11, 30))
    consumer = read_confluent(bootstrap, topic, partitions=(0, 1))
    assert recs(frame)[topic] == [r for r in consumer if stamp + 10_500 <= r.timestamp
                                  < stamp + 30_000]
    late = stamp + 1_000_000
    with pytest.raises(AnalysisException, match="No offset matched"):
        load(spark, bootstrap, subscribe=topic, startingTimestamp=late).count()
    assert load(spark, bootstrap, subscribe=topic, startingTimestamp=late,
                startingOffsetsByTimestampStrategy="latest").count() == 0


def test_min_partitions_splits_ranges_as_spark_does(spark: SparkSession,
                                                    broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("split"), partitions=3)
    produce_confluent(bootstrap, topic, [Out(b"k", b"v", now_ms(), partition=p)
                                         for p, n in ((0, 100), (1, 10), (2, 1))
                                         for _ in range(n)])
    frame = load(spark, bootstrap, subscribe=topic, minPartitions="6")
    ranges = [OffsetRange(topic, 0, 0, 100), OffsetRange(topic, 1, 0, 10),
              OffsetRange(topic, 2, 0, 1)]
    assert frame.rdd.getNumPartitions() == len(split_ranges(ranges, 6)) == 6
    assert recs(frame)[topic] == read_confluent(bootstrap, topic, partitions=(0, 1, 2))
    assert load(spark, bootstrap, subscribe=topic).rdd.getNumPartitions() == 3


def test_end_offsets_are_fixed_when_the_read_is_planned(spark: SparkSession,
                                                        broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("repeat"))
    produce_confluent(bootstrap, topic, records(50, 1, now_ms()))
    frame = load(spark, bootstrap, subscribe=topic)
    first = recs(frame)[topic]
    produce_confluent(bootstrap, topic, records(30, 1, now_ms()))
    assert recs(frame)[topic] == first and len(first) == 50
    assert load(spark, bootstrap, subscribe=topic).count() == 80


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t"}, "'kafka.bootstrap.servers' must be specified"),
    ({"kafka.bootstrap.servers": "x", "subscribe": "t", "assign": '{"t":[0]}'},
     "Only one of the following options"),
    ({"kafka.bootstrap.servers": "x", "subscribe": "t", "startingOffsets": "latest"},
     "starting offset can't be latest"),
    ({"kafka.bootstrap.servers": "x", "subscribe": "t", "kafka.auto.offset.reset": "earliest"},
     "'auto.offset.reset' is not supported"),
])
def test_bad_options_fail_with_sparks_message(spark: SparkSession, options: dict[str, str],
                                              message: str) -> None:
    reader = spark.read.format("odradek-kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    with pytest.raises(AnalysisException, match=message):
        reader.load().count()


def test_a_start_the_log_no_longer_holds_fails_unless_data_loss_is_allowed(
        spark: SparkSession, broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap, unique("lost"))
    produce_confluent(bootstrap, topic, records(20, 1, now_ms()))
    from_five = json.dumps({topic: {"0": 5}})
    assert load(spark, bootstrap, subscribe=topic, startingOffsets=from_five).count() == 15
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, 10)])
    next(iter(deleted.values())).result(20)
    with pytest.raises(Exception, match="[Oo]ffset out of range"):
        load(spark, bootstrap, subscribe=topic, startingOffsets=from_five).count()
    assert load(spark, bootstrap, subscribe=topic, startingOffsets=from_five,
                failOnDataLoss="false").count() == 10
