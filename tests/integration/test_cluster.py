"""A 3-controller, 3-broker cluster started with `odradek cluster up`, driven by real clients:
leaders spread across brokers, controller failover, a killed controller catching up from its
log and snapshot, fencing of a broker whose heartbeats stop, and a full cluster restart."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import DescribeClusterRequest

from odradek.rpc import controller_pb2, controller_pb2_grpc
from tests.integration.clients import create_topic, receive, unique
from tests.integration.cluster import (
    TIMEOUT,
    Cluster,
    admin,
    broker_ids,
    partitions,
    running_cluster,
    scrape,
)
from tests.waiting import wait_until

SESSION_TIMEOUT_MS = 3000
FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    try:
        with running_cluster(tmp_path_factory.mktemp("cluster"), 3, 3, {
            "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "broker.heartbeat.interval.ms": "500",
            "metadata.log.max.record.bytes.between.snapshots": "4096",
        }) as cluster:
            yield cluster
    finally:
        if FIGURES:
            print("\ncluster figures:", ", ".join(f"{k}={v:.2f}" for k, v in FIGURES.items()))


def quorum(cluster: Cluster, name: str) -> controller_pb2.DescribeQuorumResponse:
    port = cluster.node(name)["port"]
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        response: controller_pb2.DescribeQuorumResponse = stub.DescribeQuorum(
            controller_pb2.DescribeQuorumRequest(), timeout=5
        )
        return response


def describe_cluster(bootstrap: str, node_id: int) -> Any:
    """DescribeCluster v2 with fenced brokers included, through kafka-python, sent to the
    broker `node_id` (the one at `bootstrap`)."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        async def call() -> Any:
            return await client._manager.send(DescribeClusterRequest(
                include_cluster_authorized_operations=False, include_fenced_brokers=True,
            ), node_id=node_id)

        return client._manager.run(call)
    finally:
        client.close()


def test_replicated_topics_spread_leaders_and_replicas_across_brokers(cluster: Cluster) -> None:
    topic = create_topic(cluster.broker_bootstrap("broker-2"), unique("t"), 6, replication=3)

    described = partitions(cluster.broker_bootstrap("broker-3"), topic)
    assert sorted(described) == list(range(6))
    for partition in described.values():
        assert sorted(partition.replicas) == [1, 2, 3]
        assert partition.leader == partition.replicas[0]
    assert Counter(p.leader for p in described.values()) == {1: 2, 2: 2, 3: 2}


def test_clients_produce_to_and_consume_from_every_leader(cluster: Cluster) -> None:
    topic = create_topic(cluster.bootstrap, unique("t"), 6, replication=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for i in range(60):
        producer.produce(topic, f"v{i}".encode(), partition=i % 6)
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: set[bytes] = set()

    def receive() -> None:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.add(message.value())

    wait_until(lambda: len(seen) >= 60, TIMEOUT, lambda: f"{len(seen)} of 60 values",
               between=receive)
    consumer.close()
    assert seen == {f"v{i}".encode() for i in range(60)}


def test_every_broker_serves_the_same_metadata(cluster: Cluster) -> None:
    topic = create_topic(cluster.broker_bootstrap("broker-1"), unique("t"), 3, replication=2)
    views = [partitions(cluster.broker_bootstrap(f"broker-{n}"), topic) for n in (1, 2, 3)]
    shapes = [{i: (p.leader, tuple(p.replicas)) for i, p in view.items()} for view in views]
    assert shapes[0] == shapes[1] == shapes[2]
    assert all(broker_ids(cluster.broker_bootstrap(f"broker-{n}")) == {1, 2, 3}
               for n in (1, 2, 3))


def test_killing_the_active_controller_elects_another_and_a_restarted_one_catches_up(
    cluster: Cluster,
) -> None:
    via = cluster.broker_bootstrap("broker-1")
    for _ in range(12):  # enough metadata for the controllers to take snapshots
        create_topic(via, unique("t"), 4, replication=3)
    victim = cluster.active_controller()
    victim_dir = Path(cluster.node(victim)["config"]).parent
    assert list(victim_dir.rglob("*.checkpoint")), "the controllers took no snapshot"

    started = time.monotonic()
    cluster.stop(victim, kill=True)
    created: list[str] = []

    def create_a_topic() -> bool:
        created.append(create_topic(via, unique("t"), 1, replication=3, timeout=5))
        return True

    wait_until(create_a_topic, TIMEOUT - (time.monotonic() - started),
               f"a topic created within {TIMEOUT}s of the kill", ignoring=KafkaException)
    FIGURES["controller_failover_s"] = time.monotonic() - started
    successor = cluster.active_controller()
    assert successor != victim

    cluster.start(victim)
    target = quorum(cluster, successor).commit_index
    catch_up = wait_until(lambda: quorum(cluster, victim).applied_offset >= target,
                          what=f"{victim} applies the log up to {target}", ignoring=Exception)
    FIGURES["restarted_controller_catch_up_s"] = catch_up
    restarted = quorum(cluster, victim)
    assert restarted.leader_id == quorum(cluster, successor).node_id
    assert not restarted.active
    assert created[0] in admin(cluster.bootstrap).list_topics(timeout=TIMEOUT).topics


def test_a_gracefully_stopped_active_controller_hands_leadership_over(cluster: Cluster) -> None:
    victim = cluster.active_controller()
    started = time.monotonic()
    cluster.stop(victim)
    successor = cluster.active_controller()
    FIGURES["graceful_controller_handover_s"] = time.monotonic() - started
    assert successor != victim
    log = Path(cluster.node(victim)["log"]).read_text()
    assert f"resigned: controller {cluster.node(successor)['id']} now leads" in log
    cluster.start(victim)
    wait_until(lambda: not quorum(cluster, victim).active and quorum(cluster, victim).leader_id
               == cluster.node(successor)["id"], what=f"{victim} follows again", ignoring=Exception)


def test_a_broker_whose_heartbeats_stop_is_fenced_and_its_partitions_go_offline(
    cluster: Cluster,
) -> None:
    topic = create_topic(cluster.broker_bootstrap("broker-1"), unique("t"), 3, replication=1)
    led_by_3 = [i for i, p in partitions(cluster.broker_bootstrap("broker-1"), topic).items()
                if p.leader == 3]
    assert led_by_3
    observer = cluster.broker_bootstrap("broker-1")

    def fenced(broker_id: int) -> bool:
        brokers = {b.broker_id: b for b in describe_cluster(observer, 1).brokers}
        return bool(brokers[broker_id].is_fenced)

    assert not fenced(3)
    cluster.pause("broker-3")
    try:
        FIGURES["broker_fenced_after_s"] = wait_until(lambda: fenced(3),
                                                      what="broker 3 is fenced", ignoring=Exception)
        assert broker_ids(observer) == {1, 2}
        after = partitions(observer, topic)
        assert all(after[i].leader == -1 for i in led_by_3)  # its only in-sync replica is gone
        metrics = scrape(cluster.node(cluster.active_controller())["metrics_port"])
        prefix = "kafka_controller_kafkacontroller_"
        assert metrics[prefix + "fencedbrokercount"] == 1
        assert metrics[prefix + "activebrokercount"] == 2
        assert metrics[prefix + "offlinepartitionscount"] >= len(led_by_3)
        active_log = Path(cluster.node(cluster.active_controller())["log"])
        wait_until(lambda: "Fencing broker 3 because its session has timed out." in
                   active_log.read_text(), what="the active controller logs the fencing")
    finally:
        cluster.resume("broker-3")
    wait_until(lambda: not fenced(3), what="broker 3 is unfenced again", ignoring=Exception)
    wait_until(lambda: all(partitions(observer, topic)[i].leader == 3 for i in led_by_3),
               what="broker 3 leads its partitions again", ignoring=Exception)


def test_metadata_survives_a_full_cluster_restart(cluster: Cluster) -> None:
    client = admin(cluster.bootstrap)
    topic = create_topic(cluster.bootstrap, unique("t"), 3, replication=3)
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "3600000"})
    client.alter_configs([resource])[resource].result(TIMEOUT)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce(topic, b"kept", partition=1)
    assert producer.flush(TIMEOUT) == 0
    replicas_before = {i: tuple(p.replicas)
                       for i, p in partitions(cluster.bootstrap, topic).items()}
    topics_before = set(client.list_topics(timeout=TIMEOUT).topics)

    cluster.down()
    assert not any(node["alive"] for node in cluster.status())
    for node in sorted(cluster.layout["nodes"], key=lambda n: n["role"] != "controller"):
        cluster.start(node["name"])
    wait_until(lambda: broker_ids(cluster.bootstrap) == {1, 2, 3}, what="all brokers back",
               ignoring=Exception)

    client = admin(cluster.bootstrap)
    assert set(client.list_topics(timeout=TIMEOUT).topics) == topics_before
    after = partitions(cluster.bootstrap, topic)
    assert {i: tuple(p.replicas) for i, p in after.items()} == replicas_before
    assert all(p.leader in p.replicas for p in after.values()), \
        "leadership may have moved within the ISR while brokers stopped one by one"
    check = ConfigResource(ResourceType.TOPIC, topic)
    assert client.describe_configs([check])[check].result(TIMEOUT)["retention.ms"].value == (
        "3600000"
    )
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"r-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 1, 0)])
    (message,) = receive(consumer, 1, TIMEOUT)
    consumer.close()
    assert message.value() == b"kept"
