"""A partition leader cut off from the rest of the cluster by the network (every node in its
own network namespace, nftables dropping the leader's traffic with the other nodes), while
clients can still reach it: it must not acknowledge acks=all writes, the majority side elects
a new leader and goes on, and once the network heals the old leader truncates the writes it
took alone (acks=1) and holds exactly the new leader's log."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.log.partition import PartitionLog
from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import iter_batches
from tests.integration.cluster import TIMEOUT, wait_until
from tests.integration.netns import NetnsCluster
from tests.unit.test_log_partition import make_config

TOPIC = "cut"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NetnsCluster]:
    cluster = NetnsCluster(tmp_path, overrides={
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "2000",
    })
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


def send(bootstrap: str, values: list[bytes], acks: str, timeout_ms: int = 15000
         ) -> list[tuple[Any, bytes]]:
    """(error or None, value) for each record."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "retries": 0,
                         "message.timeout.ms": timeout_ms, "request.timeout.ms": timeout_ms})
    outcomes: list[tuple[Any, bytes]] = []
    for value in values:
        producer.produce(TOPIC, value, partition=0,
                         on_delivery=lambda error, message: outcomes.append(
                             (error, message.value())))
    producer.flush(timeout_ms / 1000 + 10)
    return outcomes


def leader(bootstrap: str) -> tuple[int, list[int]]:
    partition = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
        TOPIC, timeout=TIMEOUT).topics[TOPIC].partitions[0]
    return int(partition.leader), sorted(partition.isrs)


def read(bootstrap: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                         "enable.auto.commit": False})
    end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=TIMEOUT)[1]
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    while len(values) < end and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def values_on_disk(directory: Path) -> list[bytes]:
    """The records of a partition log directory, read with Odradek's own log reader."""
    log = PartitionLog.open(directory, make_config(), 0)
    data = bytes(log.read(log.log_start_offset, 1 << 30).records)
    log.close()
    return [record.value or b"" for batch in iter_batches(data)
            for record in decode_records(memoryview(data)[batch.position:batch.end])]


def test_an_isolated_leader_acknowledges_nothing_and_loses_its_lone_writes(
    cluster: NetnsCluster,
) -> None:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    client.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})]
                         )[TOPIC].result(TIMEOUT)
    before = [b"before-%d" % i for i in range(50)]
    assert all(error is None for error, _ in send(cluster.bootstrap, before, "all"))
    old, _ = leader(cluster.bootstrap)
    isolated = cluster.broker(old)
    majority = ",".join(f"{n.address}:{n.port}" for n in cluster.brokers() if n is not isolated)

    cluster.isolate(isolated.name)
    alone = f"{isolated.address}:{isolated.port}"
    lone_writes = send(alone, [b"alone-%d" % i for i in range(5)], "1")
    assert all(error is None for error, _ in lone_writes), "the old leader took acks=1 writes"
    refused = send(alone, [b"refused-%d" % i for i in range(5)], "all", timeout_ms=6000)
    assert all(error is not None for error, _ in refused), \
        f"an isolated leader acknowledged acks=all writes: {refused}"

    wait_until(lambda: leader(majority)[0] not in (old, -1), what="a new leader")
    after = [b"after-%d" % i for i in range(50)]
    assert all(error is None for error, _ in send(majority, after, "all"))

    cluster.heal(isolated.name)
    wait_until(lambda: leader(majority)[1] == [1, 2, 3], timeout=60,
               what="the old leader back in the ISR")
    committed = read(majority)
    assert [v for v in committed if not v.startswith(b"refused")] == before + after
    log_text = Path(cluster.data_dir / f"{isolated.name}.log").read_text()
    assert "truncated the log" in log_text
    wait_until(lambda: values_on_disk(cluster.data_dir / isolated.name / f"{TOPIC}-0")
               == committed, what="the old leader holds exactly the new leader's log")
