"""The controllers' gRPC over mutual TLS: 3 controllers and 2 brokers started with `odradek
cluster up`, the controller listener mapped to SSL with `ssl.client.auth=required`. Raft
between controllers and brokers' calls to the active controller go over it; clients without
a trusted, valid certificate, and plaintext, are refused while the cluster keeps serving; a
replaced key store is served to new connections, and presented on new channels, without a
restart; SASL_* and an SSL controller listener without a key store stop start-up in one
line."""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import Consumer, Producer

from odradek.rpc import controller_pb2, controller_pb2_grpc
from tests.certificates import Authority, Issued
from tests.integration.broker_process import ODRADEK, free_port
from tests.integration.clients import create_topic, receive, unique
from tests.integration.cluster import TIMEOUT, Cluster, running_cluster
from tests.waiting import wait_until

pytestmark = pytest.mark.timeout(600)


class Stores:
    """The cluster's CA and the one key store every controller and broker uses (each node's
    controller listener configs name the same files)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.authority = Authority()
        self.truststore = self.authority.write(directory / "truststore.pem")
        self.keystore = self.authority.issue("odradek-node").write(directory / "keystore.pem")

    def overrides(self) -> dict[str, str]:
        prefix = "listener.name.controller."
        return {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.location": str(self.keystore),
            f"{prefix}ssl.truststore.type": "PEM",
            f"{prefix}ssl.truststore.location": str(self.truststore),
            f"{prefix}ssl.client.auth": "required",
        }


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return Stores(tmp_path_factory.mktemp("controller-tls") / "stores")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, stores: Stores) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster"), 3, 2, {
        **stores.overrides(),
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
    }) as cluster:
        yield cluster


def describe_quorum(port: int, secured: grpc.ChannelCredentials | None) -> Any:
    """DescribeQuorum from a gRPC client of our own making (None: plaintext)."""
    target = f"127.0.0.1:{port}"
    with (grpc.secure_channel(target, secured) if secured
          else grpc.insecure_channel(target)) as channel:
        return controller_pb2_grpc.ControllerStub(channel).DescribeQuorum(
            controller_pb2.DescribeQuorumRequest(), timeout=5)


def credentials(stores: Stores, client: Issued | None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        stores.authority.pem.encode(),
        client.key_pem.encode() if client else None,
        client.certificate_pem.encode() if client else None)


def produce_and_consume(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(TIMEOUT) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        received = sorted(m.value() for m in receive(consumer, 10))
        assert received == sorted(f"v{i}".encode() for i in range(10))
    finally:
        consumer.close()


def test_the_quorum_forms_over_mutual_tls_and_serves_clients(cluster: Cluster) -> None:
    """Raft runs between the controllers and both brokers registered through the TLS
    listener: a real client creates a replicated topic and produces and consumes."""
    log = Path(cluster.node(cluster.active_controller())["log"]).read_text()
    assert "serving gRPC over TLS" in log
    topic = create_topic(cluster.bootstrap, unique("t"), 2, replication=2)
    produce_and_consume(cluster.bootstrap, topic)


REFUSALS = {
    "no certificate": "PEER_DID_NOT_RETURN_A_CERTIFICATE",
    "untrusted": "CERTIFICATE_VERIFY_FAILED: self signed certificate in certificate chain",
    "expired": "CERTIFICATE_VERIFY_FAILED: certificate has expired",
    "plaintext": "WRONG_VERSION_NUMBER",
}
"""Why the controller refuses each client, as gRPC logs a failed handshake (to the node's
log); the client only sees its connection closed."""


@pytest.mark.parametrize("client", list(REFUSALS))
def test_controllers_refuse_a_client_without_a_trusted_valid_certificate(
    cluster: Cluster, stores: Stores, client: str
) -> None:
    node = cluster.node(cluster.active_controller())
    log = Path(node["log"])
    assert describe_quorum(node["port"], credentials(stores, stores.authority.issue("tool"))
                           ).active
    refused = {
        "no certificate": lambda: credentials(stores, None),
        "untrusted": lambda: credentials(stores, Authority("Other CA").issue("tool")),
        "expired": lambda: credentials(stores, stores.authority.expired("tool")),
        "plaintext": lambda: None,
    }[client]()
    logged = len(log.read_bytes())
    with pytest.raises(grpc.RpcError) as failure:
        describe_quorum(node["port"], refused)
    assert failure.value.code() == grpc.StatusCode.UNAVAILABLE, failure.value
    wait_until(lambda: REFUSALS[client] in log.read_bytes()[logged:].decode(errors="replace"),
               TIMEOUT, f"the controller logs {REFUSALS[client]!r}")
    create_topic(cluster.bootstrap, unique("t"), 1, replication=2)


def served_certificate(port: int, stores: Stores) -> str:
    """The common name of the certificate the controller at `port` serves now."""
    context = ssl.create_default_context(cafile=str(stores.truststore))
    context.load_cert_chain(stores.keystore)
    with socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as secured:
        subject = dict(item[0] for item in secured.getpeercert()["subject"])
    return str(subject["commonName"])


def test_a_replaced_key_store_is_served_and_presented_without_a_restart(cluster: Cluster,
                                                          stores: Stores) -> None:
    name = cluster.active_controller()
    node = cluster.node(name)
    assert served_certificate(node["port"], stores) == "odradek-node"
    renewed = stores.authority.issue("odradek-node-renewed")
    staged = stores.keystore.with_name("keystore.pem.new")
    renewed.write(staged)
    staged.replace(stores.keystore)
    assert served_certificate(node["port"], stores) == "odradek-node-renewed"
    assert cluster.node(name)["pid"] == node["pid"]
    assert "reloaded its key and trust stores" in Path(node["log"]).read_text()
    client_reload = "reloaded its key and trust stores for connections to controllers"
    nodes = [n for n in cluster.layout["nodes"] if n["role"] == "broker" or n["name"] == name]
    wait_until(lambda: all(client_reload in Path(n["log"]).read_text() for n in nodes),
               TIMEOUT, "brokers and the active controller reopen their channels with the "
                        "new key store")
    create_topic(cluster.bootstrap, unique("t"), 1, replication=2)


def test_a_new_controller_is_elected_over_tls_after_a_kill(cluster: Cluster) -> None:
    """Runs last in this module: it kills a controller."""
    killed = cluster.active_controller()
    cluster.stop(killed, kill=True)
    assert cluster.active_controller() != killed
    topic = create_topic(cluster.bootstrap, unique("t"), 2, replication=2)
    produce_and_consume(cluster.bootstrap, topic)


def start_controller(tmp_path: Path, stores: Stores, **overrides: str) -> str:
    """A controller's start-up with the cluster's TLS configs and `overrides`: its stderr."""
    port = free_port()
    configs = {**stores.overrides(), "process.roles": "controller", "node.id": "1",
               "listeners": f"CONTROLLER://127.0.0.1:{port}",
               "controller.quorum.voters": f"1@127.0.0.1:{port}",
               "log.dir": str(tmp_path / "data"), **overrides}
    command = [*ODRADEK, "controller"]
    for key, value in configs.items():
        if value:
            command += ["--override", f"{key}={value}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip()


def test_sasl_on_the_controller_listener_is_refused_in_one_line(tmp_path: Path,
                                                                stores: Stores) -> None:
    assert start_controller(tmp_path, stores, **{
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL"}) == (
        "odradek: invalid configuration: controller listener CONTROLLER uses security "
        "protocol SASL_SSL, which the controllers' gRPC does not serve: map it to SSL or "
        "PLAINTEXT in listener.security.protocol.map")


def test_an_ssl_controller_listener_without_a_key_store_is_refused_in_one_line(
    tmp_path: Path, stores: Stores
) -> None:
    assert start_controller(tmp_path, stores, **{
        "listener.name.controller.ssl.keystore.location": ""}).startswith(
        "odradek: invalid configuration: listener CONTROLLER: an SSL listener needs a key "
        "store: ssl.keystore.location")

