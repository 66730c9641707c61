"""One campaign: a 3-controller, 5-broker cluster with every node in its own network
namespace, the workload's clients, the nemesis, a final read after healing, the checker and
the report."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.campaign.checker import check, duplicate_places
from tests.campaign.history import READ_COMMITTED, READ_UNCOMMITTED, History, Stored
from tests.campaign.log_files import record_writers
from tests.campaign.nemesis import LOG, SMALL_DISK, SMALL_DISK_SIZE, Nemesis
from tests.campaign.report import write_report
from tests.campaign.workload import (
    CALL_TIMEOUT,
    Client,
    IdempotentProducer,
    OffsetMonitor,
    Reader,
    TransactionalProducer,
    TransformStage,
    quiet,
)
from tests.integration.netns import NetnsCluster
from tests.waiting import wait_until

TOPICS = {"idem": 6, "txn-a": 3, "txn-b": 3, "ctp-mid": 3, "ctp-out": 3}
SESSION_MS = 6000
OVERRIDES = {
    "broker.session.timeout.ms": str(SESSION_MS),
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "10000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "auto.create.topics.enable": "false",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.heartbeat.interval.ms": "1000",
}
HEAL_TIMEOUT = 180.0
FINAL_READ_TIMEOUT = 180.0
STOP_TIMEOUT = 300.0
"""The clients finish their transactions, flush and close within this, all together."""


@dataclass
class Result:
    report: dict[str, Any]
    out: Path

    @property
    def anomalies(self) -> dict[str, int]:
        counts: dict[str, int] = self.report["anomaly_counts"]
        return counts

    @property
    def faults(self) -> int:
        return int(self.report["faults"]["total"])


def clients(bootstrap: str, history: History, seed: int, producers_stop: threading.Event,
            readers_stop: threading.Event) -> tuple[list[Client], list[Client]]:
    """(producers, readers) of the workload."""
    every = list(TOPICS)
    common = (bootstrap, history, seed)
    producers: list[Client] = [
        IdempotentProducer("idem-1", *common, producers_stop, "idem"),
        IdempotentProducer("idem-2", *common, producers_stop, "idem"),
        TransactionalProducer("txn-1", *common, producers_stop, ["txn-a", "txn-b"]),
        TransactionalProducer("txn-2", *common, producers_stop, ["txn-a", "txn-b"]),
        TransformStage("stage-1", *common, producers_stop, ["txn-a", "txn-b"],
                       forward="ctp-mid", sink="ctp-out"),
        TransformStage("stage-2", *common, producers_stop, ["ctp-mid"],
                       forward="txn-b", sink="ctp-out"),
    ]
    readers: list[Client] = [
        Reader("classic-1", *common, readers_stop, every, READ_COMMITTED, "g-classic"),
        Reader("classic-2", *common, readers_stop, every, READ_COMMITTED, "g-classic"),
        Reader("kip848-1", *common, readers_stop, every, READ_COMMITTED, "g-consumer",
               protocol="consumer"),
        Reader("assign-rc", *common, readers_stop, every, READ_COMMITTED),
        Reader("assign-ru", *common, readers_stop, every, READ_UNCOMMITTED),
        OffsetMonitor("monitor", *common, readers_stop,
                      ["g-classic", "g-consumer", "stage-1", "stage-2"], every),
    ]
    return producers, readers


def final_read(bootstrap: str, history: History, isolation: str) -> list[str]:
    """Every record of every topic, from the beginning to the high watermark, into the
    history; the partitions it could not finish (an open transaction holding the last
    stable offset back, an unavailable leader) are returned."""
    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    metadata = admin.list_topics(timeout=CALL_TIMEOUT)
    consumer = Consumer(quiet({"bootstrap.servers": bootstrap, "group.id": f"final-{isolation}",
                               "isolation.level": isolation, "enable.partition.eof": True,
                               "enable.auto.commit": False}))
    ends = {}
    for topic in TOPICS:
        for partition in metadata.topics[topic].partitions:
            tp = TopicPartition(topic, partition)
            ends[(topic, partition)] = consumer.get_watermark_offsets(tp, CALL_TIMEOUT)[1]
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
    done = {tp for tp, end in ends.items() if end == 0}
    deadline = time.monotonic() + FINAL_READ_TIMEOUT
    while len(done) < len(ends) and time.monotonic() < deadline:
        for message in consumer.consume(500, 1.0):
            where = (str(message.topic()), int(message.partition() or 0))
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and \
                        (message.offset() or 0) >= ends[where]:
                    done.add(where)
                continue
            history.add(Stored(isolation, where[0], where[1], int(message.offset() or 0),
                               (message.value() or b"").decode()))
    consumer.close()
    return [f"{t}/{p}" for t, p in sorted(set(ends) - done)]


def brokers_listed(bootstrap: str) -> int:
    """How many brokers Metadata lists, asked by a new client each time: the 40-minute run
    of 2026-11-29 failed at the heal because the admin client made at the start, idle for
    40 minutes, connected to no broker within 5 s for 3 minutes, while the workload's
    producers were writing to the healed cluster."""
    return len(AdminClient(quiet({"bootstrap.servers": bootstrap})).list_topics(timeout=5).brokers)


def blocked_at(thread: threading.Thread) -> str:
    """Where a client that did not stop is blocked: its innermost frames, for the report."""
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return "did not stop"
    frames = reversed(traceback.extract_stack(frame)[-4:])
    return "did not stop, at " + " < ".join(
        f"{f.name} ({Path(f.filename).name}:{f.lineno})" for f in frames)


def mount_small_disk(data_dir: Path) -> Path:
    directory = data_dir / SMALL_DISK
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK_SIZE}", "tmpfs",
                    str(directory)], check=True, capture_output=True)
    return directory


def run_campaign(seed: int, duration: float, minimum_faults: int, out: Path) -> Result:
    out.mkdir(parents=True, exist_ok=True)
    command = (f"{Path(sys.executable).name} -m tests.campaign --seed {seed} "
               f"--duration {duration:g} --faults {minimum_faults} --out {shlex.quote(str(out))}")
    history = History()
    cluster = NetnsCluster(out / "cluster", controllers=3, brokers=5, overrides=OVERRIDES)
    small_disk = mount_small_disk(cluster.data_dir)
    started = time.monotonic()
    try:
        cluster.up(timeout=120)
        LOG.info("cluster up: %s", cluster.bootstrap)
        admin = AdminClient(quiet({"bootstrap.servers": cluster.bootstrap}))
        futures = admin.create_topics([NewTopic(t, n, 3, config={"min.insync.replicas": "2"})
                                       for t, n in TOPICS.items()])
        for future in futures.values():
            future.result(CALL_TIMEOUT)
        producers_stop, readers_stop = threading.Event(), threading.Event()
        producers, readers = clients(cluster.bootstrap, history, seed, producers_stop,
                                     readers_stop)
        for client in [*readers, *producers]:
            client.start()
        nemesis = Nemesis(cluster, history, seed, list(TOPICS), SESSION_MS / 1000, duration,
                          minimum_faults)
        LOG.info("workload started")
        nemesis.run()
        LOG.info("faults over, healed")
        wait_until(lambda: brokers_listed(cluster.bootstrap) == 5, HEAL_TIMEOUT,
                   "every broker registered after healing", ignoring=Exception)
        deadline = time.monotonic() + STOP_TIMEOUT
        producers_stop.set()
        for client in producers:
            client.join(max(deadline - time.monotonic(), 0))
        readers_stop.set()
        for client in readers:
            client.join(max(deadline - time.monotonic(), 0))
        LOG.info("clients stopped, final read")
        incomplete = {isolation: final_read(cluster.bootstrap, history, isolation)
                      for isolation in (READ_COMMITTED, READ_UNCOMMITTED)}
        history.writers.extend(record_writers(cluster.data_dir, duplicate_places(history)))
        crashes = {c.name: c.crash or blocked_at(c) for c in [*producers, *readers]
                   if c.crash or c.is_alive()}
        if nemesis.crash:
            crashes["nemesis"] = nemesis.crash
        report = write_report(history, check(history), out, {
            "seed": seed, "command": command, "duration_s": round(time.monotonic() - started),
            "final_read_incomplete": incomplete, "client_crashes": crashes,
            "operations_by_client": {c.name: c.operations for c in [*producers, *readers]},
        })
        return Result(report, out)
    finally:
        cluster.down()
        subprocess.run(["umount", "-l", str(small_disk)], capture_output=True)
