"""Coordinators on a 3-broker cluster (their internal topics and the data replicated 3 ways,
min.insync.replicas 2). The transaction coordinator's broker is killed with a transaction
open; its successor, loading the replicated log, finishes it, and read_committed consumers
see exactly the committed transactions. The share coordinator's broker is killed; its
successor serves the share-group state it wrote."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kio.schema.errors import ErrorCode

from tests.integration.clients import read_confluent
from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.raw_client import RawClient
from tests.integration.test_share_state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    find_share_coordinator,
    initialize,
    read,
    topic_id_of,
    write,
)
from tests.waiting import wait_until

TRANSACTION_KEY = 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("coordinators"), 1, 3, {
            "broker.session.timeout.ms": "4000",
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
    committed = sorted(r.value for r in read_confluent(bootstrap, topic, (0, 1), timeout=60))
    assert committed == expected
    everything = read_confluent(bootstrap, topic, (0, 1), isolation="read_uncommitted",
                                timeout=60)
    assert len(everything) == 80, "every data record, aborted ones included, no markers"


def test_share_group_state_survives_the_loss_of_its_coordinator(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    client = admin(bootstrap)  # kept: a collected AdminClient fails its futures
    client.create_topics([NewTopic("queue", 1, 3)])["queue"].result(TIMEOUT)
    with RawClient(bootstrap.split(",")[0]) as raw:
        topic_id = topic_id_of(raw, "queue")
        key = f"queue-group:{topic_id}:0"
        found: list[Any] = []

        def coordinator_found() -> bool:
            found.append(find_share_coordinator(raw, key))
            return bool(found[-1].error_code == 0)

        wait_until(coordinator_found, what=lambda: f"a share coordinator: {found[-1:]}")
    victim = int(found[-1].node_id)
    with RawClient(cluster.broker_bootstrap(f"broker-{victim}")) as coordinator:
        # its shard may still be loading the state topic's partition it was just given
        initialized: list[Any] = []

        def loaded() -> bool:
            initialized.append(initialize(coordinator, topic_id, 0, 1, 0))
            return bool(initialized[-1].error != ErrorCode.coordinator_load_in_progress)

        wait_until(loaded, what=lambda: f"the shard loaded: {initialized[-1:]}")
        assert initialized[-1].error == 0
        assert write(coordinator, topic_id, 0, 1, 0, 0,
                     [(0, 4, ACKNOWLEDGED, 1), (5, 9, AVAILABLE, 1)]).error == 0
        assert write(coordinator, topic_id, 0, 1, 0, 5, [(5, 6, ARCHIVED, 3)]).error == 0
    cluster.stop(f"broker-{victim}", kill=True)
    survivor = next(f"broker-{n}" for n in (1, 2, 3) if n != victim)
    answers: list[Any] = []

    def served_by_a_successor() -> bool:
        with RawClient(cluster.broker_bootstrap(survivor)) as raw:
            successor = find_share_coordinator(raw, key)
        if successor.error_code != 0 or successor.node_id == victim:
            return False
        with RawClient(cluster.broker_bootstrap(f"broker-{successor.node_id}")) as raw:
            answers.append(read(raw, topic_id, 0, 1))
        return answers[-1].error == 0

    wait_until(served_by_a_successor, 120, lambda: f"a successor serving: {answers[-1:]}",
               ignoring=OSError)
    assert answers[-1].fields == {"state_epoch": 1, "start_offset": 5, "batches": [
        (5, 6, ARCHIVED, 3), (7, 9, AVAILABLE, 1)]}
    cluster.start(f"broker-{victim}")
    wait_until(lambda: len(admin(bootstrap).list_topics(timeout=5).brokers) == 3,
               what="the killed broker back", ignoring=Exception)
