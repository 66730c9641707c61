"""Helpers for the mirror's data-path tests: producing keyed rows, and reading whole topics
back with read_committed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.waiting import wait_until

Row = tuple[Any, ...]
"""(key, value, headers, timestamp) of one record."""


def read_all(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, list[Row]]:
    """Every committed record of the partitions, in order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-test-reader",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    # its watermark is the high watermark: a read_committed one is the last stable offset,
    # short of a transaction whose markers are still being written
    ends = Consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-test-reader",
                     "isolation.level": "read_uncommitted"})
    try:
        return {partition: _read_partition(consumer, TopicPartition(topic, partition),
                                           ends.get_watermark_offsets(
                                               TopicPartition(topic, partition), timeout=10)[1])
                for partition in partitions}
    finally:
        consumer.close()
        ends.close()


def _read_partition(consumer: Consumer, tp: TopicPartition, end: int) -> list[Row]:
    """The committed records below `end`, the high watermark."""
    consumer.assign([TopicPartition(tp.topic, tp.partition, 0)])
    rows: list[Row] = []
    state = {"next": 0, "drained": False}

    def poll() -> None:
        message = consumer.poll(0.5)
        state["drained"] = message is None
        if message is not None and message.error() is None:
            rows.append((message.key(), message.value(), tuple(message.headers() or ()),
                         message.timestamp()[1]))
            state["next"] = message.offset() + 1

    def done() -> bool:
        """Every record below `end` returned: the last one was, or nothing more comes and
        the position is past the transaction markers at the end."""
        at_end = consumer.position([tp])[0].offset >= end
        return bool(state["next"] >= end or (state["drained"] and at_end))

    wait_until(done, 60, f"reading {tp.topic}-{tp.partition} to {end}", between=poll)
    return rows


def produce(bootstrap: str, topic: str, rows: Sequence[tuple[int, bytes, bytes]],
            **config: Any) -> None:
    """(partition, key, value) rows, each with a header, acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for partition, key, value in rows:
        producer.produce(topic, value, key, partition=partition, headers=[("n", key)])
    assert producer.flush(30) == 0
