"""What a broker keeps across a graceful restart, a `kill -9`, a torn segment tail and lost
index files, checked record by record against what the clients were told was acknowledged.

Acknowledged but unflushed writes sit in the page cache, which a killed process leaves behind
(Kafka's default guarantee): nothing here needs fsync.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    Rec,
    TransactionalWriter,
    confluent_consumer,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    read_kafka_python,
    unique,
)
from tests.waiting import wait_until

SMALL_BATCHES = {"linger.ms": 0, "batch.num.messages": 10}
BATCH_HEADER = 61


def records_to_produce(count: int, partitions: int = 1, tag: str = "r") -> list[Out]:
    base = now_ms() - 600_000
    return [
        Out(f"key-{i % 7}".encode(), f"{tag}-{i:06d}-".encode() + b"payload " * (i % 13),
            base + i, (("seq", str(i).encode()),), partition=i % partitions)
        for i in range(count)
    ]


def by_offset(records: list[Rec]) -> list[Rec]:
    return sorted(records, key=lambda r: (r.partition, r.offset))


def partition_dir(broker: BrokerProcess, topic: str, partition: int = 0) -> Path:
    return broker.data_dir / f"{topic}-{partition}"


def batch_positions(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of each record batch in a segment file's bytes."""
    batches = []
    position = 0
    while position + 12 <= len(data):
        size = 12 + int.from_bytes(data[position + 8 : position + 12], "big")
        batches.append((position, size))
        position += size
    return batches


def assert_readable(broker: BrokerProcess, topic: str, expected: list[Rec],
                    partitions: tuple[int, ...] = (0,)) -> None:
    assert read_confluent(broker.bootstrap, topic, partitions) == expected
    assert read_kafka_python(broker.bootstrap, topic, partitions) == expected


# --- graceful restart ------------------------------------------------------------------------


def test_graceful_restart_keeps_every_acknowledged_record(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("restart"), partitions=2)
    outs = records_to_produce(600, partitions=2)
    acked = by_offset(produce_confluent(fresh_broker.bootstrap, topic, outs[:300], SMALL_BATCHES)
                      + produce_confluent(fresh_broker.bootstrap, topic, outs[300:]))

    assert fresh_broker.stop() == 0
    assert "stopped cleanly" in fresh_broker.logs()
    fresh_broker.start()

    assert_readable(fresh_broker, topic, acked, (0, 1))
    more = produce_confluent(fresh_broker.bootstrap, topic, records_to_produce(2, 2, "after"))
    assert sorted((r.partition, r.offset) for r in more) == [(0, 300), (1, 300)]
    assert_readable(fresh_broker, topic, by_offset(acked + more), (0, 1))


# --- kill -9 under load ----------------------------------------------------------------------


class ProducerThread(threading.Thread):
    """Produces acks=1 records without pause; delivery reports say which were acknowledged.
    An error that stops it is raised again in the test's thread (`wait_for_acks`, `check`)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 2,
            "message.timeout.ms": 15_000, "reconnect.backoff.max.ms": 100,
        })
        self.topic = topic
        self.acked: list[tuple[int, bytes]] = []
        self.failed: list[KafkaError] = []
        self.sent = 0
        self.stopping = threading.Event()
        self.error: Exception | None = None

    def on_delivery(self, error: KafkaError | None, message: object) -> None:
        if error is None:
            self.acked.append((message.offset(), message.value()))  # type: ignore[attr-defined]
        else:
            self.failed.append(error)

    def run(self) -> None:
        try:
            self._produce()
        except Exception as error:  # noqa: BLE001 - raised in the test's thread by check()
            self.error = error

    def _produce(self) -> None:
        while not self.stopping.is_set():
            for _ in range(50):
                value = f"live-{self.sent:07d}-".encode() + b"x" * (self.sent % 200)
                try:
                    self.producer.produce(self.topic, value, partition=0,
                                          on_delivery=self.on_delivery)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.005)
        self.producer.flush(TIMEOUT)

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def wait_for_acks(self, count: int) -> None:
        def acknowledged() -> bool:
            self.check()
            return len(self.acked) >= count

        wait_until(acknowledged, TIMEOUT, lambda: f"only {len(self.acked)} acks", interval=0.01)


def test_kill_9_mid_stream_loses_no_acknowledged_record(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("killed"))
    producer = ProducerThread(fresh_broker.bootstrap, topic)
    producer.start()
    try:
        producer.wait_for_acks(3000)
        fresh_broker.kill()
        acked_before_kill = len(producer.acked)
        fresh_broker.start()
        producer.wait_for_acks(acked_before_kill + 3000)  # the same producer carries on
    finally:
        producer.stopping.set()
        producer.join(TIMEOUT + 5)
    assert not producer.is_alive()
    producer.check()

    acked = dict(producer.acked)
    assert len(acked) == len(producer.acked), "two acknowledgements for one offset"
    log = read_confluent(fresh_broker.bootstrap, topic)
    assert [r.offset for r in log] == list(range(len(log)))
    stored = {r.offset: r.value for r in log}
    assert {offset: stored.get(offset) for offset in acked} == acked
    tail = produce_confluent(fresh_broker.bootstrap, topic, [Out(b"k", b"last", now_ms(), (), 0)])
    assert [r.offset for r in tail] == [len(log)]


# --- torn tails ------------------------------------------------------------------------------


def garbage(last_batch: bytes, next_offset: int) -> bytes:
    return bytes((i * 37 + 11) % 256 for i in range(3000))


def zeros(last_batch: bytes, next_offset: int) -> bytes:
    return bytes(4096)


def half_batch(last_batch: bytes, next_offset: int) -> bytes:
    """The first half of a batch that would have come next, as a torn write leaves it."""
    torn = bytearray(last_batch[: len(last_batch) // 2])
    torn[0:8] = next_offset.to_bytes(8, "big")
    return bytes(torn)


@pytest.mark.parametrize("tail", [garbage, zeros, half_batch])
def test_torn_tail_is_cut_back_to_the_last_valid_batch(
    fresh_broker: BrokerProcess, tail: Callable[[bytes, int], bytes]
) -> None:
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("torn"))
    acked = produce_confluent(fresh_broker.bootstrap, topic, records_to_produce(200),
                              SMALL_BATCHES)
    fresh_broker.kill()
    segment = max(partition_dir(fresh_broker, topic).glob("*.log"))
    data = segment.read_bytes()
    position, size = batch_positions(data)[-1]
    assert position + size == len(data)
    with segment.open("ab") as file:
        file.write(tail(data[position:], 200))

    fresh_broker.start()

    assert segment.stat().st_size == len(data)
    assert_readable(fresh_broker, topic, acked)
    more = produce_confluent(fresh_broker.bootstrap, topic, records_to_produce(3, tag="after"))
    assert [r.offset for r in more] == [200, 201, 202]
    assert_readable(fresh_broker, topic, acked + more)
    assert any(f"{topic}-0" in line and "truncated" in line and "log end offset now 200" in line
               for line in fresh_broker.logs().splitlines()), fresh_broker.logs()


# --- many small segments, lost indexes -------------------------------------------------------


def read_at_offsets(broker: BrokerProcess, topic: str, offsets: list[int]) -> list[Rec]:
    """The record at each offset, each read by seeking to it."""
    tp = KTopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                             enable_auto_commit=False)
    try:
        consumer.assign([tp])
        return [record_at(consumer, tp, offset) for offset in offsets]
    finally:
        consumer.close()


def record_at(consumer: KafkaConsumer, tp: KTopicPartition, offset: int) -> Rec:
    consumer.seek(tp, offset)
    records: list[Any] = []

    def poll() -> None:
        records.extend(consumer.poll(500, max_records=1).get(tp, []))

    wait_until(lambda: records, TIMEOUT, f"a record at offset {offset}", between=poll)
    (r,) = records
    return Rec(r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers))


def offsets_for_times(broker: BrokerProcess, topic: str, timestamps: list[int]) -> list[int]:
    consumer = confluent_consumer(broker.bootstrap)
    try:
        return [
            consumer.offsets_for_times([CTopicPartition(topic, 0, ts)], TIMEOUT)[0].offset
            for ts in timestamps
        ]
    finally:
        consumer.close()


def test_many_small_segments_survive_restarts_and_lost_indexes(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("segments"),
                         config={"segment.bytes": "16384"})
    outs = records_to_produce(3000)
    acked = produce_confluent(fresh_broker.bootstrap, topic, outs, SMALL_BATCHES)
    directory = partition_dir(fresh_broker, topic)
    segments = sorted(directory.glob("*.log"))
    assert len(segments) >= 10
    assert all(path.stat().st_size <= 16384 for path in segments)
    samples = [0, 1, 9, 10, 11, 777, 1500, 2048, 2998, 2999]
    sample_times = [outs[i].timestamp for i in samples]

    fresh_broker.restart()
    assert_readable(fresh_broker, topic, acked)

    fresh_broker.restart(hard=True)
    assert_readable(fresh_broker, topic, acked)
    assert sorted(directory.glob("*.log")) == segments

    assert fresh_broker.stop() == 0
    for index in [*directory.glob("*.index"), *directory.glob("*.timeindex")]:
        index.unlink()
    fresh_broker.start()

    assert {p.stem for p in directory.glob("*.index")} == {p.stem for p in segments}
    assert {p.stem for p in directory.glob("*.timeindex")} == {p.stem for p in segments}
    assert read_at_offsets(fresh_broker, topic, samples) == [acked[i] for i in samples]
    assert offsets_for_times(fresh_broker, topic, sample_times) == samples
    assert_readable(fresh_broker, topic, acked)
    more = produce_confluent(fresh_broker.bootstrap, topic, records_to_produce(2, tag="after"))
    assert [r.offset for r in more] == [3000, 3001]


# --- a log write that fails ----------------------------------------------------------------


def test_a_broker_halts_on_a_failed_log_write_and_recovers_the_transaction(
        fresh_broker: BrokerProcess) -> None:
    """The abort marker of a transaction reaches the segment but its transaction index entry
    cannot be written (a full disk in the campaign; here a directory where the file goes).
    Served on, the log showed read_committed consumers the aborted record. The broker halts
    as Kafka's does, and once it can write again its restart finishes the abort."""
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("halt"))
    (partition_dir(fresh_broker, topic) / "00000000000000000000.txnindex").mkdir()
    transactional_id = f"halt-{topic}"
    writer = TransactionalWriter(bootstrap, transactional_id, timeout=10)
    with contextlib.suppress(KafkaException):  # answered or not before the broker halts
        writer.write(topic, [Out(None, b"aborted", now_ms(), partition=0)], commit=False)
    process = fresh_broker.process
    assert process is not None
    wait_until(lambda: process.poll() is not None, TIMEOUT, "the broker halting")
    assert process.returncode == 1
    assert "Shutdown broker because all log dirs in" in fresh_broker.logs()

    (partition_dir(fresh_broker, topic) / "00000000000000000000.txnindex").rmdir()
    fresh_broker.start()
    TransactionalWriter(bootstrap, transactional_id).write(
        topic, [Out(None, b"committed", now_ms(), partition=0)], commit=True)
    assert [r.value for r in read_confluent(bootstrap, topic)] == [b"committed"]
    assert [r.value for r in read_confluent(bootstrap, topic, isolation="read_uncommitted")
            ] == [b"aborted", b"committed"]
