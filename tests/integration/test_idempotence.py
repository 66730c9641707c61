"""Idempotent producers: retried batches are never appended twice, sequence and epoch rules
answer with Kafka's errors, and deduplication survives restarts (producer snapshots)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import NewTopic
from kio.schema.errors import ErrorCode

from odradek.protocol.record_codec import build_batch
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import admin, partitions, running_cluster
from tests.integration.fault_proxy import dropping_produce_responses
from tests.integration.raw_client import RawClient, now_ms
from tests.waiting import wait_until

MESSAGES = 3000
DROPS = 6


def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    idle = 0
    try:
        while idle < 6:
            message = consumer.poll(0.5)
            if message is None:
                idle += 1 if len(values) >= expected else 0
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
    finally:
        consumer.close()
    return values


def _produce_through_lossy_proxy(tmp_path: Path, idempotent: bool) -> tuple[list[bytes], int]:
    proxy_port = free_port()
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", {
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"})
    broker.start()
    try:
        with dropping_produce_responses(broker.port, proxy_port, DROPS) as proxy:
            bootstrap = f"127.0.0.1:{proxy_port}"
            create_topic(bootstrap, "lossy", 1, replication=1)
            producer = Producer({
                "bootstrap.servers": bootstrap, "enable.idempotence": idempotent, "acks": "all",
                "linger.ms": 5, "batch.num.messages": 100, "retry.backoff.ms": 50,
                "max.in.flight.requests.per.connection": 5,
            })
            failed: list[str] = []
            for i in range(MESSAGES):
                producer.produce("lossy", f"{i:06d}".encode(), partition=0,
                                 on_delivery=lambda error, _m: error and failed.append(str(error)))
                producer.poll(0)
            assert producer.flush(60) == 0
            assert not failed, failed[:3]
            assert proxy.dropped == DROPS, "the proxy lost fewer responses than planned"
            return _read_all(bootstrap, "lossy", MESSAGES), proxy.dropped
    finally:
        broker.stop()


def test_an_idempotent_producer_whose_responses_are_lost_writes_each_record_once(
        tmp_path: Path) -> None:
    values, dropped = _produce_through_lossy_proxy(tmp_path, idempotent=True)
    duplicated = sum(count - 1 for count in Counter(values).values())
    print(f"\nidempotent: {len(values)} records read, {dropped} responses lost, "
          f"{duplicated} duplicated")
    assert duplicated == 0
    assert values == [f"{i:06d}".encode() for i in range(MESSAGES)]


def test_without_idempotence_the_same_faults_duplicate_records(tmp_path: Path) -> None:
    """The control experiment: the proxy really makes clients resend appended batches."""
    values, _ = _produce_through_lossy_proxy(tmp_path, idempotent=False)
    assert len(values) > MESSAGES
    assert set(values) == {f"{i:06d}".encode() for i in range(MESSAGES)}


def _batch(producer_id: int, epoch: int, sequence: int, count: int = 2) -> bytes:
    return build_batch([(None, f"{sequence}-{i}".encode()) for i in range(count)],
                       timestamp_ms=now_ms(), producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=sequence)


@pytest.fixture
def idempotent_topic(fresh_broker: BrokerProcess) -> str:
    fresh_broker.start()
    client = admin(fresh_broker.bootstrap)
    client.create_topics([NewTopic("seq", 1, 1, config={"segment.bytes": "1024"})])[
        "seq"].result(30)
    return "seq"


def test_sequence_and_epoch_errors_on_the_wire(fresh_broker: BrokerProcess,
                                               idempotent_topic: str) -> None:
    client = RawClient(fresh_broker.bootstrap)
    try:
        first = client.produce_partition(idempotent_topic, 0, _batch(1000, 3, 0), acks=-1)
        assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
        again = client.produce_partition(idempotent_topic, 0, _batch(1000, 3, 0), acks=-1)
        assert (again.error_code, again.base_offset) == (ErrorCode.none, 0)
        gap = client.produce_partition(idempotent_topic, 0, _batch(1000, 3, 5), acks=-1)
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        stale = client.produce_partition(idempotent_topic, 0, _batch(1000, 2, 2), acks=-1)
        assert stale.error_code == ErrorCode.invalid_producer_epoch
        bumped = client.produce_partition(idempotent_topic, 0, _batch(1000, 4, 0), acks=-1)
        assert (bumped.error_code, bumped.base_offset) == (ErrorCode.none, 2)
        assert client.latest_offset(idempotent_topic, 0) == 4
    finally:
        client.close()


@pytest.mark.parametrize("hard", [False, True], ids=["clean-restart", "kill-9"])
def test_deduplication_survives_a_restart(fresh_broker: BrokerProcess, idempotent_topic: str,
                                          hard: bool) -> None:
    """Batches span several segments (segment.bytes=1024), so loading reads a snapshot
    taken at a roll and replays the rest; a retry of the last batch after the restart is
    answered with its original offset."""
    client = RawClient(fresh_broker.bootstrap)
    sequence = 0
    for _ in range(30):
        response = client.produce_partition(idempotent_topic, 0, _batch(77, 0, sequence), acks=-1)
        assert response.error_code == ErrorCode.none
        sequence += 2
    last_offset = response.base_offset
    client.close()
    snapshots = sorted(p.name for p in fresh_broker.data_dir.rglob("*.snapshot"))
    assert snapshots, "segment rolls write producer snapshots"
    fresh_broker.restart(hard=hard)
    client = RawClient(fresh_broker.bootstrap)
    try:
        retry = client.produce_partition(idempotent_topic, 0, _batch(77, 0, sequence - 2),
                                         acks=-1)
        assert (retry.error_code, retry.base_offset) == (ErrorCode.none, last_offset)
        gap = client.produce_partition(idempotent_topic, 0, _batch(77, 0, sequence + 2), acks=-1)
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        assert client.latest_offset(idempotent_topic, 0) == last_offset + 2
    finally:
        client.close()


def test_a_new_leader_answers_a_retry_with_its_original_offset(tmp_path: Path) -> None:
    """The batches reached every replica, and the last answers were lost with the leader
    (kill -9): the producer's retries to the new leader are duplicates there too (a
    follower keeps producer state from what it replicates), answered with their first
    offsets and not written again."""
    with running_cluster(tmp_path, 1, 3, {"broker.session.timeout.ms": "3000",
                                          "broker.heartbeat.interval.ms": "500"}) as cluster:
        topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=3)
        wait_until(lambda: len(partitions(cluster.bootstrap, topic)[0].isrs) == 3, 60,
                   "every replica in sync")
        leader = partitions(cluster.bootstrap, topic)[0].leader
        client = RawClient(cluster.broker_bootstrap(f"broker-{leader}"))
        offsets = {}
        try:
            for sequence in range(0, 20, 2):
                response = client.produce_partition(topic, 0, _batch(88, 0, sequence), acks=-1)
                assert response.error_code == ErrorCode.none
                offsets[sequence] = response.base_offset
        finally:
            client.close()
        cluster.stop(f"broker-{leader}", kill=True)
        wait_until(lambda: partitions(cluster.bootstrap, topic)[0].leader not in (leader, -1),
                   60, "a new leader")
        successor = partitions(cluster.bootstrap, topic)[0].leader
        client = RawClient(cluster.broker_bootstrap(f"broker-{successor}"))
        try:
            for sequence in (18, 14):  # the last batch, and one of the five before it
                retry = client.produce_partition(topic, 0, _batch(88, 0, sequence), acks=-1)
                assert (retry.error_code, retry.base_offset) == (ErrorCode.none,
                                                                 offsets[sequence])
            assert client.latest_offset(topic, 0) == offsets[18] + 2
        finally:
            client.close()
