"""The log cleaner on a real broker, driven by confluent-kafka: compacted topics keep the
latest value of every key at its original offset, tombstones go after their delete horizon,
a kill -9 in the middle of cleaning loses nothing, and `__consumer_offsets` stays small."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from odradek.group.partitioning import partition_for
from odradek.log.segment_swap import SwapPoint
from tests.integration import paused_cleaner
from tests.integration.broker_metrics import sample, scrape
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    Rec,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.raw_client import RawClient, batch_of
from tests.waiting import wait_until

FAST_CLEANER = {"log.cleaner.backoff.ms": "100"}
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "16384",
             "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "2000"}
SMALL_BATCHES = {"linger.ms": 5, "batch.size": 4096}
"""Batches well below the topics' segment.bytes."""
KEYS, UPDATES, DELETED = 500, 10_000, 50
INVALID_RECORD = 87


def history(tag: str) -> list[Out]:
    """UPDATES updates over KEYS keys, then tombstones for the first DELETED keys."""
    stamp = now_ms()
    updates = [Out(f"key-{i % KEYS}".encode(), f"{tag}-{i}".encode(), stamp)
               for i in range(UPDATES)]
    return updates + [Out(f"key-{k}".encode(), None, stamp) for k in range(DELETED)]


def latest_per_key(records: list[Rec]) -> dict[bytes | None, Rec]:
    latest: dict[bytes | None, Rec] = {}
    for record in sorted(records, key=lambda r: r.offset):
        latest[record.key] = record
    return latest


def roll_active_segment(bootstrap: str, topic: str, segment_ms: float) -> Rec:
    """Records in the active segment are never cleaned: once segment.ms has passed, one more
    record rolls it, so everything before it becomes cleanable."""
    time.sleep(segment_ms / 1000 + 0.2)  # segment.ms is an age: time must pass
    (sentinel,) = produce_confluent(bootstrap, topic, [Out(b"sentinel", b"roll", now_ms())])
    return sentinel


def compacted_exactly(bootstrap: str, topic: str, acked: list[Rec]) -> bool:
    """A full read holds the latest acknowledged value of every live key at the offset it
    was acknowledged with, and nothing else (no older values, no tombstones)."""
    expected = {key: record for key, record in latest_per_key(acked).items()
                if record.value is not None}
    records = read_confluent(bootstrap, topic)
    return sorted(records, key=lambda r: r.offset) == sorted(expected.values(),
                                                             key=lambda r: r.offset)


def set_topic_config(bootstrap: str, topic: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT)


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compaction_keeps_the_latest_value_of_each_key_at_its_offset(
        fresh_broker: BrokerProcess, compression: str) -> None:
    fresh_broker.overrides.update(FAST_CLEANER)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("compacted"), config={**COMPACTED,
                                                                 "segment.ms": "1000"})
    acked = produce_confluent(bootstrap, topic, history("v"), {
        "compression.type": compression, **SMALL_BATCHES})
    acked.append(roll_active_segment(bootstrap, topic, 1000))
    took = wait_until(lambda: compacted_exactly(bootstrap, topic, acked), 60,
                      "the log compacted down to the latest value per live key", interval=0.5)
    print(f"\n{compression}: compacted and tombstones gone {took:.1f} s after the roll")
    segments = sorted((fresh_broker.data_dir / f"{topic}-0").glob("*.log"))
    assert sum(path.stat().st_size for path in segments) < UPDATES * 20
    assert "cleaned " in fresh_broker.logs()


def test_keyless_records_are_refused_on_a_compacted_topic(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("keyless"), config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0})
    errors: list[int] = []
    producer.produce(topic, value=b"no key", on_delivery=lambda error, _: errors.append(
        error.code() if error else 0))
    producer.flush(TIMEOUT)
    assert errors == [INVALID_RECORD]
    produce_confluent(bootstrap, topic, [Out(b"k", b"keyed", now_ms())])
    assert [r.value for r in read_confluent(bootstrap, topic)] == [b"keyed"]


def test_only_the_keyless_records_of_a_refused_batch_are_blamed(
        fresh_broker: BrokerProcess) -> None:
    """KIP-467: a batch refused for its keyless records names them in the Produce response,
    so librdkafka fails just those with INVALID_RECORD and the rest of the batch with its own
    _INVALID_DIFFERENT_RECORD. Raw, the response names each keyless record and says why."""
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("blame"), config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0, "linger.ms": 60_000})
    keyless = set(range(3, 100, 10))
    errors: dict[int, int] = {}

    def report(index: int) -> Any:
        def on_delivery(error: KafkaError | None, _: Any) -> None:
            errors[index] = error.code() if error else 0
        return on_delivery

    for i in range(100):
        producer.produce(topic, key=None if i in keyless else b"k%d" % i, value=b"v%d" % i,
                         partition=0, on_delivery=report(i))
    assert producer.flush(TIMEOUT) == 0  # flush sends the one lingering batch at once
    assert {i for i, code in errors.items() if code == INVALID_RECORD} == keyless
    assert {i for i, code in errors.items()
            if code == KafkaError._INVALID_DIFFERENT_RECORD} == set(range(100)) - keyless
    assert read_confluent(bootstrap, topic) == []
    client = RawClient(bootstrap)
    try:
        refused = client.produce_partition(topic, 0, batch_of(
            [(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")]))
    finally:
        client.close()
    without_key = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert refused.error_code == INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in refused.record_errors] == [
        (1, without_key), (3, without_key)]
    assert refused.error_message.startswith(
        "One or more records have been rejected due to 2 record errors in total")


def test_switching_to_compact_takes_effect_without_a_restart(
        fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update(FAST_CLEANER)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("switch"), config={
        "segment.bytes": "16384", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
    acked = produce_confluent(bootstrap, topic, history("s")[:UPDATES], SMALL_BATCHES)
    acked.append(roll_active_segment(bootstrap, topic, 1000))
    time.sleep(1)  # ten cleaner backoffs: the window in which a wrong cleaning would show
    assert len(read_confluent(bootstrap, topic)) == len(acked), "delete policy: nothing cleaned"
    set_topic_config(bootstrap, topic, "cleanup.policy", "compact")
    wait_until(lambda: compacted_exactly(bootstrap, topic, acked), 60,
               "compaction after the policy change", interval=0.5)
    samples = scrape(fresh_broker)
    assert sample(samples, "kafka_log_logcleaner_cleanings_total") >= 1
    read = sample(samples, "kafka_log_logcleaner_bytes_read_total")
    written = sample(samples, "kafka_log_logcleaner_bytes_written_total")
    assert 0 < written < read
    assert sample(samples, "kafka_log_logcleaner_max_clean_time_secs") > 0
    assert 0 < sample(samples, "kafka_log_logcleaner_cleaner_recopy_percent") < 100
    assert 0 < sample(samples, "kafka_log_logcleaner_max_buffer_utilization_percent") < 100
    assert 0 <= sample(samples, "kafka_log_logcleanermanager_dirty_ratio",
                       topic=topic, partition="0") < 0.5
    assert sample(samples, "kafka_log_logcleanermanager_max_dirty_percent") < 50


@pytest.mark.parametrize("point", ["staged", "committed"])
def test_a_kill_in_the_middle_of_cleaning_leaves_a_readable_log(
        fresh_broker: BrokerProcess, point: SwapPoint) -> None:
    """The cleaner stops for good at a test-only pause point (paused_cleaner.py, holding the
    event loop), before or after its commit point, and the broker is killed there: the log
    reads back with the same latest value per key, and once restarted the cleaner
    finishes the job."""
    fresh_broker.overrides.update(FAST_CLEANER)
    fresh_broker.launcher = paused_cleaner.launcher(point)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("crash"), config={
        **COMPACTED, "cleanup.policy": "delete", "segment.ms": "1000"})
    acked = produce_confluent(bootstrap, topic, history("c")[:UPDATES], SMALL_BATCHES)
    acked.append(roll_active_segment(bootstrap, topic, 1000))
    set_topic_config(bootstrap, topic, "cleanup.policy", "compact")
    marker = fresh_broker.data_dir / f"{topic}-0" / f"cleaner-paused-{point}"
    wait_until(marker.exists, 60, f"the cleaner to pause at {point}", interval=0.5)
    fresh_broker.kill()
    partition_dir = marker.parent
    assert (partition_dir / "cleaner-staging").is_dir()
    assert (partition_dir / "cleaner-swap").exists() == (point == "committed")
    fresh_broker.launcher = ODRADEK
    marker.unlink()
    fresh_broker.start()
    assert not (partition_dir / "cleaner-staging").exists()
    assert ("completed a cleaner swap interrupted by a crash" in fresh_broker.logs()) == (
        point == "committed")
    expected = {key: (r.offset, r.value) for key, r in latest_per_key(acked).items()}
    after_restart = latest_per_key(read_confluent(bootstrap, topic))
    assert {key: (r.offset, r.value) for key, r in after_restart.items()} == expected
    wait_until(lambda: compacted_exactly(bootstrap, topic, acked), 60,
               "the cleaner to finish after the restart", interval=0.5)


def test_consumer_offsets_stay_small_under_100000_commits(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update({**FAST_CLEANER, "offsets.topic.segment.bytes": "1048576"})
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("committed"), partitions=4)
    group = unique("busy")
    answered = [0]

    def count(error: object, _partitions: object) -> None:
        answered[0] += 1

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "on_commit": count})
    commits = 100_000

    def commit_now() -> bool:
        try:
            consumer.commit(offsets=[CTopicPartition(topic, 0, 0)], asynchronous=False)
        except KafkaException:
            return False
        return True

    try:
        wait_until(commit_now, 30, "the group coordinator", interval=0.5)
        consumer.poll(0)
        answered[0] = 0
        for i in range(commits):
            consumer.commit(offsets=[CTopicPartition(topic, i % 4, i)], asynchronous=True)
            if i % 100 == 99:
                consumer.poll(0)
        # awaited through the callbacks: librdkafka's synchronous commit behind a flood of
        # asynchronous ones sometimes never returns, and no pytest timeout can interrupt it
        consumer.commit(offsets=[CTopicPartition(topic, p, commits + p) for p in range(4)],
                        asynchronous=True)
        wait_until(lambda: consumer.poll(0.1) is None and answered[0] >= commits + 1, 300,
                   "every commit answered", interval=0)
        shard = CTopicPartition("__consumer_offsets", partition_for(group, 50))
        _, appended = consumer.get_watermark_offsets(shard, TIMEOUT)
    finally:
        consumer.close()
    assert appended >= commits, f"only {appended} commits reached __consumer_offsets"
    shard_dir = fresh_broker.data_dir / f"__consumer_offsets-{shard.partition}"

    def offsets_bytes() -> int:
        return sum(f.stat().st_size for f in shard_dir.glob("*.log"))

    written = commits * 100
    wait_until(lambda: offsets_bytes() < written // 10, 120, "__consumer_offsets compacted",
               interval=0.5)
    size = offsets_bytes()
    fresh_broker.stop()
    started = time.monotonic()
    fresh_broker.start()
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = {tp.partition: tp.offset for tp in reader.committed(
            [CTopicPartition(topic, p) for p in range(4)], TIMEOUT)}
    finally:
        reader.close()
    load_s = time.monotonic() - started
    print(f"\n{appended} records in __consumer_offsets-{shard.partition}: {size} bytes on "
          "disk after compaction; "
          f"restart to committed offsets served in {load_s:.2f} s")
    assert committed == {p: commits + p for p in range(4)}

