"""The mirror scenario's client side: a source topic filled, the system's mirror (`odradek
mirror` or MirrorMaker 2, on one MM2 properties file) started on it, the copy timed from the
first record on the target to the last, then records produced at a fixed rate and each one's
replication latency taken by a consumer on the target: arrival - CreateTime (both mirrors
keep the source's timestamps). Every record must arrive once, unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.sidebyside.machine import Sampler, Usage, group
from bench.sidebyside.scenarios import Scenario
from bench.sidebyside.workload import (
    MB,
    TIMEOUT_S,
    Acks,
    Failed,
    Figures,
    consumer,
    create_topic,
    percentile,
    producer,
    value,
)

SOURCE, TARGET = "src", "dst"
STOP_TIMEOUT_S = 120.0


def properties(source: str, target: str, topic: str, exactly_once: bool,
               settings: Mapping[str, str] | None = None) -> str:
    """An MM2 config for one flow of `topic`, source -> target, both one-broker clusters:
    their internal topics with one replica, `settings` last, every other setting the
    mirror's default."""
    support = "enabled" if exactly_once else "disabled"
    lines = {
        "clusters": f"{SOURCE}, {TARGET}",
        f"{SOURCE}.bootstrap.servers": source, f"{TARGET}.bootstrap.servers": target,
        f"{SOURCE}->{TARGET}.enabled": "true", f"{SOURCE}->{TARGET}.topics": topic,
        f"{TARGET}->{SOURCE}.enabled": "false",
        f"{TARGET}.exactly.once.source.support": support,
        "replication.factor": "1", "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        # MM2 scans its classpath for plugins at each start otherwise (15-25 s)
        "plugin.discovery": "service_load",
        **(settings or {}),
    }
    return "".join(f"{key} = {setting}\n" for key, setting in lines.items())


class RunningMirror:
    """The mirror's command in its own session; `stop()` (SIGTERM) gives its CPU seconds and
    peak RSS while it ran."""

    def __init__(self, command: str, config: Path, log: Path) -> None:
        with open(log, "ab") as out:
            self.process = subprocess.Popen(command.format(config=config), shell=True,
                                            cwd=config.parent, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        self.sampler = Sampler(lambda: group(self.process.pid))

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> Usage:
        usage = self.sampler.finish()
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(STOP_TIMEOUT_S)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        return usage


@dataclass
class Arrivals:
    """Records read on the target: per partition their sequence numbers, and the latencies
    (ms) of those at or past `timed_from`."""

    timed_from: int
    count: int = 0
    first_s: float = 0.0
    last_s: float = 0.0

    def __post_init__(self) -> None:
        self.seen: set[int] = set()
        self.latencies: list[float] = []


def read_target(client: Consumer, arrivals: Arrivals, expected: int, size: int,
                deadline: float, mirror: RunningMirror) -> None:
    """Until `expected` distinct records arrived; a duplicate or a corrupt one fails."""
    while len(arrivals.seen) < expected:
        if time.monotonic() > deadline or not mirror.alive():
            state = "the mirror exited" if not mirror.alive() else "timed out"
            raise Failed(f"{state}: {len(arrivals.seen)}/{expected} records on the target")
        # poll returns as the first record arrives; consume(n, timeout) would hold records
        # until n came or the timeout passed, and count that wait as replication latency
        first = client.poll(0.1)
        for message in [] if first is None else [first, *client.consume(10_000, 0)]:
            now = time.time()
            if message.error() is not None:
                raise Failed(f"target consumer: {message.error()}")
            payload = message.value() or b""
            sequence = int.from_bytes(payload[:8], "big")
            if len(payload) != size or sequence in arrivals.seen:
                raise Failed(f"record {sequence} duplicated or corrupt on the target")
            arrivals.seen.add(sequence)
            if not arrivals.first_s:
                arrivals.first_s = time.monotonic()
            arrivals.last_s = time.monotonic()
            if sequence >= arrivals.timed_from:
                arrivals.latencies.append(now * 1000 - message.timestamp()[1])


def paced(bootstrap: str, topic: str, first: int, count: int, rate: int,
          filler: bytes) -> threading.Thread:
    """A thread producing records `first`..`first + count - 1` at `rate` a second."""
    def run() -> None:
        acks = Acks()
        client = producer(bootstrap, "all", **{"linger.ms": 0})
        client.list_topics(topic, timeout=30)
        started = time.monotonic()
        for i in range(count):
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            client.produce(topic, value(first + i, filler), on_delivery=acks)
            client.poll(0)
        client.flush(TIMEOUT_S)
        acks.check(count)

    thread = threading.Thread(target=run, name="paced-producer", daemon=True)
    thread.start()
    return thread


def fill(bootstrap: str, topic: str, count: int, filler: bytes) -> None:
    acks = Acks()
    client = producer(bootstrap, "all")
    for sequence in range(count):
        while True:
            try:
                client.produce(topic, value(sequence, filler), on_delivery=acks)
                break
            except BufferError:
                client.poll(0.01)
        if sequence % 1024 == 0:
            client.poll(0)
    client.flush(TIMEOUT_S)
    acks.check(count)


def mirror(source: str, scenario: Scenario, messages: int, target: str, command: str,
           log: Path, settings: Mapping[str, str] | None = None
           ) -> tuple[int, Figures, dict[str, Any]]:
    """Fill, mirror, time the copy, then the paced latency phase; the figures and the
    mirror's usage."""
    size, partitions = scenario.param("size"), scenario.param("partitions")
    rate = scenario.param("rate")
    latency_records = min(scenario.param("latency_records"), messages)
    warmup = min(scenario.param("warmup_records"), latency_records // 10)
    topic = create_topic(source, partitions)
    filler = bytes(size - 8)
    fill(source, topic, messages, filler)
    directory = Path(tempfile.mkdtemp(prefix="sidebyside-mirror-"))
    config = directory / "mm2.properties"
    config.write_text(properties(source, target, topic, scenario.param("exactly_once"),
                                 settings))
    remote = f"{SOURCE}.{topic}"
    client = consumer(target, **{"fetch.wait.max.ms": 10, "isolation.level": "read_committed"})
    running = RunningMirror(command, config, log)
    try:
        deadline = time.monotonic() + TIMEOUT_S * 5
        while remote not in client.list_topics(timeout=30).topics:
            if time.monotonic() > deadline or not running.alive():
                raise Failed(f"{remote} never appeared on the target")
            time.sleep(0.05)
        # assigned, not subscribed: a group's join (group.initial.rebalance.delay.ms) would
        # be counted as latency
        client.assign([TopicPartition(remote, p, 0) for p in range(partitions)])
        arrivals = Arrivals(timed_from=messages + warmup)
        read_target(client, arrivals, messages, size, deadline, running)
        copy_s = max(arrivals.last_s - arrivals.first_s, 1e-3)
        producing = paced(source, topic, messages, latency_records, rate, filler)
        read_target(client, arrivals, messages + latency_records, size,
                    time.monotonic() + latency_records / rate + TIMEOUT_S, running)
        producing.join(TIMEOUT_S)
    finally:
        client.close()
        usage = running.stop()
    latencies = arrivals.latencies
    figures = {"mirror_msgs": messages / copy_s, "mirror_MBps": messages * size / copy_s / MB,
               "repl_p50": percentile(latencies, 0.5), "repl_p99": percentile(latencies, 0.99)}
    return messages, figures, {"mirror_cpu_s": usage.cpu_s,
                               "mirror_peak_rss": usage.peak_rss}
