"""Helpers for the mirror's data-path tests: a mirror process that can be killed with -9,
MM2 config files, and reading whole topics back with read_committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from odradek.cluster_cli.layout import free_port
from tests.waiting import wait_until

Row = tuple[Any, ...]
"""(key, value, headers, timestamp) of one record."""


def write_config(path: Path, east: str, west: str, **settings: str) -> Path:
    lines = ["clusters = east, west", f"east.bootstrap.servers = {east}",
             f"west.bootstrap.servers = {west}", "east->west.enabled = true",
             "offset.storage.replication.factor = 1",
             "offset-syncs.topic.replication.factor = 1"]
    lines += [f"{key} = {value}" for key, value in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class MirrorProcess:
    """`tests.integration.mirror_runner` as a child process: `start`, `kill` (-9), `stop`."""

    def __init__(self, config: Path, topics: dict[str, int], log_path: Path) -> None:
        self.config = config
        self.topics = topics
        self.log_path = log_path
        self.metrics_port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.mirror_runner", str(self.config),
             *(f"{t}={n}" for t, n in self.topics.items()),
             "--metrics-port", str(self.metrics_port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        return self

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def samples(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        """The samples of one metric, by their sorted labels."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {tuple(sorted(s.labels.items())): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples if s.name == name}


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
