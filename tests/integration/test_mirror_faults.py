"""Exactly-once under faults, between two real multi-broker clusters (east -> west): a
producer writes numbered, keyed records to east, some in transactions it aborts; the mirror
is killed with -9 three times and restarted, and a broker of each cluster is killed once.
West then holds every committed east record exactly once, in order per partition, with the
same key, value, headers and timestamp, and no aborted record."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic

from tests.integration.cluster import Cluster, admin, running_cluster
from tests.integration.mirroring import MirrorProcess, read_all, write_config
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mirror]

PARTITIONS = 3
OVERRIDES = {"broker.session.timeout.ms": "4000"}
RECORD_COUNT = "kafka_connect_mirror_mirrorsourceconnector_record_count"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    root = tmp_path_factory.mktemp("faults")
    with running_cluster(root / "east", 1, 3, OVERRIDES) as east, \
            running_cluster(root / "west", 1, 3, OVERRIDES) as west:
        for cluster, specs in ((east, [NewTopic("orders", PARTITIONS, 3),
                                       NewTopic("mm2-offset-syncs.west.internal", 1, 3)]),
                               (west, [NewTopic("east.orders", PARTITIONS, 3)])):
            client = admin(cluster.bootstrap)
            for future in client.create_topics(specs).values():
                future.result(60)
        yield east, west


class NumberedProducer(threading.Thread):
    """Transactions of ten records each, one in four aborted; keys are record numbers.

    It recovers as an application would when a broker kill fails a transaction: an abortable
    error aborts it, a fatal one (the coordinator's INVALID_TXN_STATE after its broker was
    killed, seen in CI) starts a new producer under the same transactional id, which fences
    the old one and aborts its transaction. Either way those records are never committed on
    the source, so the mirror must not copy them; `recoveries` counts them."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.producer = self._new_producer()
        self.running = True
        self.transactions = 0
        self.recoveries = 0
        self.error: BaseException | None = None

    def _new_producer(self) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "numbered",
                         "linger.ms": 5, "compression.type": "lz4"})

    def run(self) -> None:
        try:
            self.producer.init_transactions(60)
            number = 0
            while self.running:
                commit = self.transactions % 4 != 3
                try:
                    self._transaction(number, commit)
                except KafkaException as failure:
                    self._recover(failure.args[0])
                number += 10
                self.transactions += 1
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def _transaction(self, number: int, commit: bool) -> None:
        self.producer.begin_transaction()
        for key in (b"%08d" % n for n in range(number, number + 10)):
            value = (b"committed-" if commit else b"aborted-") + key * 8
            self.producer.produce("orders", value, key, partition=int(key) % PARTITIONS,
                                  headers=[("n", key)])
        if commit:
            self.producer.commit_transaction(60)
        else:
            self.producer.abort_transaction(60)

    def _recover(self, error: KafkaError) -> None:
        self.recoveries += 1
        if error.txn_requires_abort():
            self.producer.abort_transaction(60)
            return
        if not error.fatal():
            raise KafkaException(error)
        self.producer = self._new_producer()
        self.producer.init_transactions(60)


def copying(mirror: MirrorProcess) -> bool:
    return sum(mirror.samples(RECORD_COUNT).values()) > 0


def test_exactly_once_through_mirror_kills_and_broker_kills(
        clusters: tuple[Cluster, Cluster], tmp_path: Path) -> None:
    east, west = clusters
    config = write_config(tmp_path / "mm2.properties", east.bootstrap, west.bootstrap, **{
        "offset.storage.replication.factor": "3", "offset.storage.partitions": "5"})
    producer = NumberedProducer(east.bootstrap)
    producer.start()
    mirror = MirrorProcess(config, {"orders": PARTITIONS}, tmp_path / "mirror.log").start()
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
