"""Durability under faults, in the Jepsen spirit: a producer writes uniquely numbered records
with acks=all to a replication-factor-3 topic (min.insync.replicas=2) while a nemesis kill -9s
partition leaders and the active controller, restarts them, and freezes a broker (SIGSTOP)
past its session timeout. Afterwards every acknowledged record must be read back exactly
once, at the offset its acknowledgement named (so in the order of those offsets within its
partition), and no offset may be read twice.

The producer is idempotent, so its retries across failovers are safe: a duplicate would be
the brokers' failure to deduplicate, and acknowledged offsets must follow send order within a
partition. Unacknowledged records may be absent or present. ODRADEK_FAULT_SECONDS sets the
length of the run (default 60)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.integration.cluster import (
    TIMEOUT,
    Cluster,
    admin,
    partitions,
    running_cluster,
)
from tests.waiting import wait_until

SESSION_TIMEOUT_MS = 3000
PARTITIONS = 3
DURATION_S = float(os.environ.get("ODRADEK_FAULT_SECONDS", "60"))
TOPIC = "jepsen"
READ_STALL_S = 30
"""Read-back gives up when no record arrives for this long (and fails: unread is not lost)."""


@pytest.fixture
def cluster(tmp_path: Any) -> Iterator[Cluster]:
    with running_cluster(tmp_path, 3, 3, {
        "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "2000",
    }) as cluster:
        yield cluster


@dataclass
class Ledger:
    """What the producer learnt: each acknowledged record's (partition, offset).

    librdkafka acknowledges some records of an idempotent producer without an offset (None):
    when the answer to their batch was lost and the leader then took a later batch of the
    same producer, which it takes only after this one (librdkafka's implicit ack). Such a
    record is in the log, at an offset the client never learnt."""

    acked: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    failed: int = 0
    sent: int = 0
    ack_times: dict[int, list[tuple[float, int]]] = field(default_factory=dict)
    """Per partition, when each acknowledgement arrived, and of which record."""
    sent_at: dict[int, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lost(self, records: dict[int, list[tuple[int, int]]]) -> list[int]:
        """The acknowledged records that `records` (partition: [(offset, sequence)]) do not
        hold where their acknowledgement placed them: at its offset, or anywhere in its
        partition when it came without one."""
        where = {sequence: (partition, offset)
                 for partition, entries in records.items() for offset, sequence in entries}
        return [sequence for sequence, (partition, offset) in sorted(self.acked.items())
                if (placed := where.get(sequence)) is None or placed[0] != partition
                or offset not in (None, placed[1])]

    def report(self, error: Any, message: Any) -> None:
        with self.lock:
            if error is not None:
                self.failed += 1
                return
            self.acked[int(message.value())] = (message.partition(), message.offset())
            self.ack_times.setdefault(message.partition(), []).append(
                (time.monotonic(), int(message.value())))


def produce_until(bootstrap: str, ledger: Ledger, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 20000, "request.timeout.ms": 5000})
    sequence = 0
    while not stop.is_set():
        producer.produce(TOPIC, str(sequence).encode(), partition=sequence % PARTITIONS,
                         on_delivery=ledger.report)
        sequence += 1
        ledger.sent_at[sequence - 1] = time.monotonic()
        ledger.sent = sequence
        producer.poll(0)
        if sequence % 100 == 0:
            time.sleep(0.01)  # paces the load
    producer.flush(30)


class Nemesis:
    """Rotates through faults until the deadline: kill -9 a partition leader, kill -9 the
    active controller, freeze a partition leader past its session timeout."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.failovers = 0
        self.kills: list[tuple[float, int]] = []
        """(time, partition) of each leader kill."""
        self.log: list[str] = []

    def leader_of(self, partition: int) -> int:
        return int(partitions(self.cluster.bootstrap, TOPIC)[partition].leader)

    def run(self, deadline: float) -> None:
        """Faults until `deadline` (less the last one's recovery), and at least two rounds of
        the three, however slowly a loaded machine stops and starts the nodes."""
        step = 0
        while time.monotonic() < deadline - 8 or step < 6:
            partition = step % PARTITIONS
            fault = ("kill-leader", "kill-controller", "pause-leader")[step % 3]
            getattr(self, fault.replace("-", "_"))(partition)
            step += 1
            time.sleep(2)  # the faults' pace: the cluster recovers under load in between

    def kill_leader(self, partition: int) -> None:
        victim = self.leader_of(partition)
        self.cluster.stop(f"broker-{victim}", kill=True)
        self.kills.append((time.monotonic(), partition))
        self.failovers += 1
        self.log.append(f"kill -9 broker-{victim} (leader of {partition})")
        time.sleep(4)  # the fault: the broker stays down this long
        self.cluster.start(f"broker-{victim}")

    def kill_controller(self, _: int) -> None:
        victim = self.cluster.active_controller()
        self.cluster.stop(victim, kill=True)
        self.log.append(f"kill -9 {victim} (active controller)")
        time.sleep(2)  # the fault: the controller stays down this long
        self.cluster.start(victim)

    def pause_leader(self, partition: int) -> None:
        victim = self.leader_of(partition)
        self.cluster.pause(f"broker-{victim}")
        self.failovers += 1
        self.log.append(f"SIGSTOP broker-{victim} (leader of {partition})")
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 2)  # the fault: frozen past its session
        self.cluster.resume(f"broker-{victim}")


def read_back(bootstrap: str) -> dict[int, list[tuple[int, int]]]:
    """Every record of every partition: partition -> [(offset, sequence number)]."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jepsen-check",
                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=TIMEOUT)[1]
            for p in range(PARTITIONS)}
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    records: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}

    def unread() -> bool:
        return any(records[p][-1][0] + 1 < ends[p] if records[p] else ends[p] > 0
                   for p in records)

    stalled_since = time.monotonic()
    while unread() and time.monotonic() - stalled_since < READ_STALL_S:
        for message in consumer.consume(10000, 0.5):
            if message.error() is None:
                records[message.partition()].append((message.offset(), int(message.value())))
                stalled_since = time.monotonic()
    consumer.close()
    assert not unread(), (
        f"read-back stalled for {READ_STALL_S}s below the high watermarks {ends}: read "
        f"{ {p: len(entries) for p, entries in records.items()} }")
    return records


def test_acknowledged_writes_survive_kills_pauses_and_controller_failover(
    cluster: Cluster,
) -> None:
    client = admin(cluster.bootstrap)
    client.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
                         )[TOPIC].result(TIMEOUT)
    ledger = Ledger()
    stop = threading.Event()
    nemesis = Nemesis(cluster)
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        producing = pool.submit(produce_until, cluster.bootstrap, ledger, stop)
        try:
            nemesis.run(started + DURATION_S)
            time.sleep(max(started + DURATION_S - time.monotonic(), 0))  # the run's length
        finally:
            stop.set()
        producing.result(60)  # a producer that failed fails the test
    wait_until(lambda: len(admin(cluster.bootstrap).list_topics(timeout=5).brokers) == 3,
               what="every broker back", ignoring=Exception)

    records = read_back(cluster.bootstrap)
    seen: set[int] = set()
    duplicated = 0
    for partition, entries in records.items():
        offsets = [offset for offset, _ in entries]
        assert offsets == sorted(set(offsets)), f"partition {partition} re-read an offset"
        for _, sequence in entries:
            duplicated += sequence in seen
            seen.add(sequence)
    lost = ledger.lost(records)
    acked_by_partition: dict[int, list[tuple[int, int]]] = {}
    for sequence, (partition, offset) in sorted(ledger.acked.items()):
        if offset is not None:
            acked_by_partition.setdefault(partition, []).append((sequence, offset))
    out_of_order = sum(
        1 for acked in acked_by_partition.values()
        for (_, a), (_, b) in zip(acked, acked[1:], strict=False) if b <= a
    )
    gaps = [b - a for acks in ledger.ack_times.values()
            for (a, _), (b, _) in zip(acks, acks[1:], strict=False)]
    first_after_kill = [  # the first acknowledgement of a record sent after the kill
        min((t for t, sequence in ledger.ack_times.get(partition, [])
             if ledger.sent_at[sequence] > killed), default=float("inf")) - killed
        for killed, partition in nemesis.kills
    ]
    print(f"\nfault run: {DURATION_S:.0f}s, sent={ledger.sent}, acknowledged={len(ledger.acked)}, "
          f"failed={ledger.failed}, lost={len(lost)}, duplicated={duplicated}, "
          f"out_of_order={out_of_order}, failovers={nemesis.failovers}, "
          f"longest_unavailability_s={max(gaps, default=0):.2f}, "
          f"first_ack_after_leader_kill_s={[round(t, 2) for t in first_after_kill]}\n"
          + "\n".join(nemesis.log))
    assert len(ledger.acked) > 1000, "too few writes acknowledged to mean anything"
    assert not lost, f"{len(lost)} acknowledged records lost or moved, e.g. {lost[:5]}"
    assert duplicated == 0
    assert out_of_order == 0, "acknowledged offsets ran against send order in a partition"
