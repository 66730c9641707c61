"""Named listeners with real clients: each listener describes the brokers at their endpoints
on it (Metadata, DescribeCluster, FindCoordinator, KIP-951 hints), replication runs over
inter.broker.listener.name, and bad listener configs stop start-up in one line."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kio.schema.errors import ErrorCode

from odradek.net.kafka_client.connection import BrokerConnection
from odradek.protocol.codec import build_request
from tests.integration.broker_process import ODRADEK, BrokerProcess, free_port
from tests.integration.clients import (
    TIMEOUT,
    Out,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    read_kafka_python,
    receive,
    unique,
)
from tests.integration.cluster import Cluster, partitions, running_cluster
from tests.integration.test_startup_config import start_expecting_failure
from tests.waiting import wait_until

EXTERNAL_HOST = "127.0.0.2"
"""The EXTERNAL listener is advertised under another loopback address than INTERNAL's."""


class TwoListenerBroker(BrokerProcess):
    """`odradek dev` with INTERNAL on 127.0.0.1 (advertised as bound) and EXTERNAL bound on
    every interface, advertised as 127.0.0.2."""

    def __init__(self, root: Path) -> None:
        self.external_port = free_port()
        port = free_port()
        super().__init__(root / "data", root / "broker.log", {
            "listeners": f"INTERNAL://127.0.0.1:{port},EXTERNAL://:{self.external_port}",
            "advertised.listeners": f"EXTERNAL://{EXTERNAL_HOST}:{self.external_port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }, port=port)

    def endpoints(self) -> dict[str, tuple[str, int]]:
        return {"INTERNAL": ("127.0.0.1", self.port),
                "EXTERNAL": (EXTERNAL_HOST, self.external_port)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoListenerBroker]:
    process = TwoListenerBroker(tmp_path_factory.mktemp("listeners"))
    process.start()
    try:
        yield process
    finally:
        process.stop()


def bootstrap(endpoint: tuple[str, int]) -> str:
    return f"{endpoint[0]}:{endpoint[1]}"


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_each_listener_describes_the_broker_at_its_own_endpoint(
    broker: TwoListenerBroker, listener: str
) -> None:
    endpoint = broker.endpoints()[listener]
    client = AdminClient({"bootstrap.servers": bootstrap(endpoint)})
    metadata = client.list_topics(timeout=TIMEOUT)
    assert {i: (b.host, b.port) for i, b in metadata.brokers.items()} == {1: endpoint}
    cluster = client.describe_cluster().result(TIMEOUT)
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, *endpoint)]
    described = KafkaAdminClient(bootstrap_servers=bootstrap(endpoint)).describe_cluster()
    assert [(b["broker_id"], b["host"], b["port"]) for b in described["brokers"]] == [
        (1, *endpoint)]


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_clients_produce_and_consume_in_a_group_through_either_listener(
    broker: TwoListenerBroker, listener: str
) -> None:
    endpoint = broker.endpoints()[listener]
    servers = bootstrap(endpoint)
    topic = create_topic(servers, unique(f"via-{listener.lower()}"))
    outs = [Out(f"k{i}".encode(), f"{listener}-{i}".encode(), now_ms()) for i in range(20)]
    acked = produce_confluent(servers, topic, outs, {"acks": "all"})
    assert read_confluent(servers, topic) == acked
    assert read_kafka_python(servers, topic) == acked
    group = unique("group")
    consumer = Consumer({"bootstrap.servers": servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        assert [m.value() for m in receive(consumer, len(outs))] == [o.value for o in outs]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    for other, other_endpoint in broker.endpoints().items():
        client = AdminClient({"bootstrap.servers": bootstrap(other_endpoint)})
        coordinator = client.describe_consumer_groups([group])[group].result(TIMEOUT).coordinator
        assert (coordinator.id, coordinator.host, coordinator.port) == (1, *other_endpoint), other


# --- a cluster: clients on EXTERNAL, replication on INTERNAL -----------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {"inter.broker.listener.name": "INTERNAL", "min.insync.replicas": "2"}
    with running_cluster(tmp_path_factory.mktemp("listener-cluster"), 1, 3, overrides,
                         listeners=["EXTERNAL", "INTERNAL"]) as running:
        yield running


def broker_ports(cluster: Cluster, listener: str) -> dict[int, int]:
    return {node["id"]: node["listeners"][listener] for node in cluster.layout["nodes"]
            if node["role"] == "broker"}


def established_remote_ports(pid: int) -> set[int]:
    """The remote ports of a process's established TCP connections (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "01" and fields[9] in inodes:  # 01: ESTABLISHED
                    ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports


def test_replica_fetchers_connect_to_the_inter_broker_listener(cluster: Cluster) -> None:
    servers = ",".join(f"127.0.0.1:{p}" for p in broker_ports(cluster, "EXTERNAL").values())
    topic = create_topic(servers, unique("t"), 3, replication=3)
    outs = [Out(None, f"r{i}".encode(), now_ms(), partition=i % 3) for i in range(30)]
    acked = produce_confluent(servers, topic, outs, {"acks": "all"})
    assert read_confluent(servers, topic, partitions=(0, 1, 2)) == sorted(
        acked, key=lambda r: (r.partition, r.offset))
    internal = broker_ports(cluster, "INTERNAL")
    external = set(broker_ports(cluster, "EXTERNAL").values())
    brokers = {n["id"]: n["pid"] for n in cluster.layout["nodes"] if n["role"] == "broker"}
    leaders = {p.leader for p in partitions(servers, topic).values()}

    def every_follower_fetches_over_internal() -> bool:
        return all({internal[leader] for leader in leaders if leader != broker_id}
                   <= established_remote_ports(pid) for broker_id, pid in brokers.items())

    wait_until(every_follower_fetches_over_internal, TIMEOUT,
               lambda: f"connections to INTERNAL {internal}: "
                       f"{ {b: established_remote_ports(p) for b, p in brokers.items()} }")
    for broker_id, pid in brokers.items():
        assert not established_remote_ports(pid) & external, broker_id


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_metadata_and_leader_hints_name_the_listener_the_request_came_in_on(
    cluster: Cluster, listener: str
) -> None:
    ports = broker_ports(cluster, listener)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    metadata = AdminClient({"bootstrap.servers": servers}).list_topics(timeout=TIMEOUT)
    assert {i: (b.host, b.port) for i, b in metadata.brokers.items()} == {
        i: ("127.0.0.1", p) for i, p in ports.items()}
    topic = create_topic(servers, unique("t"), 1, replication=3)
    leader = partitions(servers, topic)[0].leader
    follower = next(i for i in ports if i != leader)
    request = build_request(0, 12, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": b""}]}]})
    answers: list[Any] = []

    def follower_knows_the_topic() -> bool:  # it may not have applied the new topic yet
        answers.append(asyncio.run(send_to(ports[follower], request)))
        code = answers[-1].responses[0].partition_responses[0].error_code
        return bool(code != ErrorCode.unknown_topic_or_partition)

    wait_until(follower_knows_the_topic, TIMEOUT, "the follower knows the new topic")
    response = answers[-1]
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.not_leader_or_follower
    assert answer.current_leader.leader_id == leader
    assert [(n.node_id, n.host, n.port) for n in response.node_endpoints] == [
        (leader, "127.0.0.1", ports[leader])]


async def send_to(port: int, request: Any) -> Any:
    connection = await BrokerConnection.connect("127.0.0.1", port, "listeners", TIMEOUT)
    try:
        return await connection.send(request, TIMEOUT)
    finally:
        connection.close()


def test_transactions_commit_across_brokers(cluster: Cluster) -> None:
    """The coordinator's markers reach the other brokers over INTERNAL."""
    servers = ",".join(f"127.0.0.1:{p}" for p in broker_ports(cluster, "EXTERNAL").values())
    topic = create_topic(servers, unique("t"), 3, replication=3)
    producer = Producer({"bootstrap.servers": servers, "transactional.id": unique("tx")})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for index in range(6):
        producer.produce(topic, value=f"t{index}".encode(), partition=index % 3)
    producer.commit_transaction(TIMEOUT)
    consumer = Consumer({"bootstrap.servers": servers, "group.id": unique("txn-reader"),
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
        received = receive(consumer, 6)
    finally:
        consumer.close()
    assert sorted(m.value() or b"" for m in received) == [f"t{i}".encode() for i in range(6)]


# --- bad configs ---------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    ({"listeners": "INTERNAL://:{p},EXTERNAL://:{p}",
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"},
     "Each listener must have a different port"),
    ({"listeners": "INTERNAL://127.0.0.1:{p}"},
     "No security protocol defined for listener INTERNAL"),
    ({"listeners": "INTERNAL://127.0.0.1:{p}",
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT",
      "inter.broker.listener.name": "REPLICATION"},
     "Listener with name REPLICATION defined in inter.broker.listener.name not found"),
    ({"advertised.listeners": "OTHER://127.0.0.1:{p}",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"},
     "advertised.listeners listener names must be equal to or a subset"),
    ({"listeners": "PLAINTEXT://0.0.0.0:{p}"},
     "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"),
    ({"listeners": "SECURE://127.0.0.1:{p}", "listener.security.protocol.map": "SECURE:SSL",
      "inter.broker.listener.name": "SECURE"},
     "listener SECURE: an SSL listener needs a key store"),
])
def test_bad_listener_configs_stop_start_up_in_one_line(
    tmp_path: Path, overrides: dict[str, str], message: str
) -> None:
    port = str(free_port())
    args = [arg for name, value in overrides.items()
            for arg in ("--override", f"{name}={value.replace('{p}', port)}")]
    output = start_expecting_failure(tmp_path / "data", *args)
    assert message in output
    assert len(output.strip().splitlines()) == 1, output


def test_a_broker_only_node_may_not_serve_the_controller_listener(tmp_path: Path) -> None:
    command = [*ODRADEK, "broker", "--override", "process.roles=broker",
               "--override", "node.id=1", "--override", f"log.dir={tmp_path / 'data'}",
               "--override", f"controller.quorum.voters=1001@127.0.0.1:{free_port()}",
               "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()},"
                             f"CONTROLLER://127.0.0.1:{free_port()}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        "odradek: invalid configuration: controller.listener.names must not contain a value "
        "appearing in the 'listeners' configuration when running KRaft with just the broker "
        "role")
