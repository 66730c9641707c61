"""Exactly-once under faults, between two real multi-broker clusters (east -> west) through
`odradek mirror`: a producer writes numbered, keyed records to east, some in transactions it
aborts; the mirror (its topic sync creating `east.orders` on west) is killed with -9 three
times and restarted, and a broker of each cluster is killed once. West then holds every
committed east record exactly once, in order per partition, with the same key, value,
headers and timestamp, and no aborted record."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from tests.integration.clients import Out, TransactionalWriter
from tests.integration.cluster import Cluster, admin, running_cluster
from tests.integration.mirror_process import MirrorProcess, properties
from tests.integration.mirroring import read_all
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mirror]

PARTITIONS = 3
OVERRIDES = {"broker.session.timeout.ms": "4000"}
REPLICAS = {key: "3" for key in (
    "replication.factor", "heartbeats.topic.replication.factor",
    "checkpoints.topic.replication.factor", "offset-syncs.topic.replication.factor",
    "offset.storage.replication.factor")}
"""Every topic the mirror creates on a cluster of three brokers, on all three."""


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    root = tmp_path_factory.mktemp("faults")
    with running_cluster(root / "east", 1, 3, OVERRIDES) as east, \
            running_cluster(root / "west", 1, 3, OVERRIDES) as west:
        client = admin(east.bootstrap)
        for future in client.create_topics([NewTopic("orders", PARTITIONS, 3)]).values():
            future.result(60)
        yield east, west


class NumberedProducer(threading.Thread):
    """Transactions of ten records each, one in four aborted; keys are record numbers. A
    transaction a broker kill fails is aborted (`TransactionalWriter.write_recovering`), so
    the mirror must not copy it either."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.running = True
        self.transactions = 0
        self.recoveries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            writer = TransactionalWriter(self.bootstrap, "numbered", 60, **{
                "linger.ms": 5, "compression.type": "lz4"})
            number = 0
            while self.running:
                commit = self.transactions % 4 != 3
                writer.write_recovering("orders", [
                    Out(key, (b"committed-" if commit else b"aborted-") + key * 8, 0,
                        (("n", key),), int(key) % PARTITIONS)
                    for key in (b"%08d" % n for n in range(number, number + 10))], commit)
                self.recoveries = writer.recoveries
                number += 10
                self.transactions += 1
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error


def copying(mirror: MirrorProcess) -> bool:
    return mirror.copied() > 0


def test_exactly_once_through_mirror_kills_and_broker_kills(
        clusters: tuple[Cluster, Cluster], tmp_path: Path) -> None:
    east, west = clusters
    config = properties({"east": east.bootstrap, "west": west.bootstrap}, **REPLICAS, **{
        "east->west.enabled": "true", "east->west.topics": "orders",
        "offset.storage.partitions": "5"})
    producer = NumberedProducer(east.bootstrap)
    producer.start()
    mirror = MirrorProcess(tmp_path, config).start()
    try:
        for kill in range(3):
            wait_until(lambda: copying(mirror), 90,
                       lambda: f"the mirror copying (round {kill})\n"  # noqa: B023
                               f"{mirror.logs()}",
                       ignoring=OSError)
            if kill == 1:
                east.stop("broker-2", kill=True)
                west.stop("broker-3", kill=True)
            mirror.kill()
            mirror.start()
        wait_until(lambda: copying(mirror), 90, lambda: f"the mirror copying\n{mirror.logs()}",
                   ignoring=OSError)
        east.start("broker-2")
        west.start("broker-3")
        wait_until(lambda: producer.transactions >= 40 or producer.error is not None, 120,
                   "forty transactions")
        producer.running = False
        producer.join(120)
        assert producer.error is None, producer.error
        source = read_all(east.bootstrap, "orders", range(PARTITIONS))
        assert sum(map(len, source.values())) >= 300

        def mirrored() -> bool:
            target = read_all(west.bootstrap, "east.orders", range(PARTITIONS))
            return all(len(target[p]) >= len(source[p]) for p in range(PARTITIONS))

        wait_until(mirrored, 120, lambda: f"west catching up\n{mirror.logs()}")
        target = read_all(west.bootstrap, "east.orders", range(PARTITIONS))
        for partition in range(PARTITIONS):
            keys = [row[0] for row in target[partition]]
            expected = [row[0] for row in source[partition]]
            assert keys == expected, (
                f"partition {partition}: duplicates {len(keys) - len(set(keys))}, missing "
                f"{sorted(set(expected) - set(keys))[:5]}, extra "
                f"{sorted(set(keys) - set(expected))[:5]}\n{mirror.logs()}")
            assert target[partition] == source[partition], f"partition {partition}"
            assert not [row for row in target[partition] if row[1].startswith(b"aborted-")]
        numbers = sorted(int(row[0]) for rows in target.values() for row in rows)
        assert len(numbers) == len(set(numbers))
    finally:
        producer.running = False
        mirror.stop()
