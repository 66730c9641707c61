"""Transactions on a 3-broker cluster (__transaction_state and the topic replicated 3 ways,
min.insync.replicas 2): the transaction coordinator's broker is killed with a transaction
open; its successor, loading the replicated log, finishes it, and read_committed consumers
see exactly the committed transactions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.raw_client import RawClient
from tests.integration.test_transactions import read_all
from tests.waiting import wait_until

TRANSACTION_KEY = 1


@pytest.fixture
def cluster(tmp_path: Any) -> Iterator[Cluster]:
    with running_cluster(tmp_path, 1, 3, {"broker.session.timeout.ms": "4000",
                                          "broker.heartbeat.interval.ms": "500"}) as cluster:
        yield cluster


def coordinator_of(bootstrap: str, transactional_id: str) -> int:
    client = RawClient(bootstrap.split(",")[0])
    try:
        response = client.request(FindCoordinatorRequest[4](
            key_type=TRANSACTION_KEY, coordinator_keys=[transactional_id]),
            FindCoordinatorResponse, 4)
    finally:
        client.close()
    (found,) = response.coordinators
    assert found.error_code == 0, found
    return int(found.node_id)


def test_a_transaction_survives_the_loss_of_its_coordinator(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    topic = "ledger"
    client = admin(bootstrap)  # kept: a collected AdminClient fails its futures
    client.create_topics([NewTopic(topic, 2, 3, config={
        "min.insync.replicas": "2"})])[topic].result(TIMEOUT)
    transactional_id = "survivor"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(60)

    def transaction(tag: str, commit: bool) -> None:
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, f"{tag}-{i}".encode(), partition=i % 2)
        producer.flush(60)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)

    transaction("before", commit=True)
    producer.begin_transaction()
    for i in range(20):
        producer.produce(topic, f"across-{i}".encode(), partition=i % 2)
    producer.flush(60)
    victim = coordinator_of(bootstrap, transactional_id)
    cluster.stop(f"broker-{victim}", kill=True)
    killed = time.monotonic()
    producer.commit_transaction(120)
    print(f"\ncommit after killing coordinator broker-{victim}: "
          f"{time.monotonic() - killed:.2f}s")
    assert coordinator_of(bootstrap, transactional_id) != victim
    transaction("aborted", commit=False)
    transaction("after", commit=True)
    cluster.start(f"broker-{victim}")
    wait_until(lambda: len(admin(bootstrap).list_topics(timeout=5).brokers) == 3,
               what="the killed broker back", ignoring=Exception)

    expected = sorted(f"{tag}-{i}".encode() for tag in ("before", "across", "after")
                      for i in range(20))
    committed = sorted(value for _, _, value in read_all(bootstrap, topic, "read_committed",
                                                         at_least=len(expected)))
    assert committed == expected
    everything = read_all(bootstrap, topic, "read_uncommitted", at_least=80)
    assert len(everything) == 80, "every data record, aborted ones included, no markers"
