"""The broker's background retention task deletes whole expired segments and moves the log
start offset, by time and by size, while the newest data stays readable."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.waiting import wait_until

FAST_RETENTION = {
    "log.retention.check.interval.ms": "200",
    "log.segment.delete.delay.ms": "0",
}
RETENTION_TIMEOUT = 15.0


def start_offsets(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = {CTopicPartition(topic, 0): OffsetSpec.earliest()}
    result = admin.list_offsets(request)[CTopicPartition(topic, 0)].result(TIMEOUT)
    return int(result.offset)


def segment_files(data_dir: Path, topic: str) -> list[Path]:
    return sorted((data_dir / f"{topic}-0").glob("*.log"))


def test_retention_by_time_and_by_size(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update(FAST_RETENTION)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    by_time, by_size = unique("by-time"), unique("by-size")
    create_topic(bootstrap, by_time, config={"segment.bytes": "4096", "retention.ms": "2000"})
    create_topic(bootstrap, by_size, config={"segment.bytes": "4096", "retention.bytes": "8192"})

    old = now_ms() - 60_000
    records = [Out(None, b"x" * 500, old + i, partition=0) for i in range(60)]
    one_record_batches = {"linger.ms": 0, "batch.num.messages": 1}
    for topic in (by_time, by_size):
        produce_confluent(bootstrap, topic, records, one_record_batches)

    # by size: everything but the newest ~8 KB of closed segments (plus the active one) goes.
    # Retention may run while the records arrive, so wait for its last pass, then check that
    # it deleted whole segments: the oldest file left begins at the log start.
    def closed_bytes() -> int:
        return sum(p.stat().st_size for p in segment_files(fresh_broker.data_dir, by_size)[:-1])

    wait_until(lambda: closed_bytes() <= 8192 and start_offsets(bootstrap, by_size) > 0,
               RETENTION_TIMEOUT, "retention by size moves the log start")
    size_kept = read_confluent(bootstrap, by_size, start=OFFSET_BEGINNING)
    assert 0 < len(size_kept) < 60
    assert [r.offset for r in size_kept] == list(range(60 - len(size_kept), 60))
    segments = segment_files(fresh_broker.data_dir, by_size)
    assert len(segments) >= 2
    assert segments[0].name == f"{size_kept[0].offset:020d}.log"

    # by time: the records are a minute old, so every closed segment expires; Kafka rolls
    # an expired active segment too, leaving an empty log that starts at the end
    wait_until(lambda: start_offsets(bootstrap, by_time) == 60, RETENTION_TIMEOUT,
               "retention by time empties the log")
    wait_until(lambda: len(segment_files(fresh_broker.data_dir, by_time)) == 1,
               RETENTION_TIMEOUT, "one segment left of the log retained by time")
    assert segment_files(fresh_broker.data_dir, by_time)[0].name == f"{60:020d}.log"
    fresh = [Out(None, b"new", now_ms(), partition=0)]
    assert [r.offset for r in produce_confluent(bootstrap, by_time, fresh)] == [60]
    assert [r.value for r in read_confluent(bootstrap, by_time, start=60)] == [b"new"]
