"""deploy/compose/compose.secure.yaml over compose.yaml on a real Docker engine, with the CA,
certificates and users deploy/compose/make-secrets.sh writes: clients on the host reach
east over SASL_SSL with SCRAM as the users of secrets/users/ (which the controllers wrote
into the metadata log when they formatted their storage), and over SSL with a client
certificate; the authorizer holds alice to her ACLs; a wrong password, plaintext sent to a
TLS port and a missing client certificate are refused; inside the network the controllers
and the brokers' INTERNAL listeners take only the stack's certificates, and the mirror
(with its own) still copies east to west; Prometheus still scrapes every process. One stack
serves the module."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.clients import (
    Out,
    confluent_consumer,
    now_ms,
    produce_confluent,
    receive,
    unique,
)
from tests.integration.cluster import TIMEOUT
from tests.integration.compose_stack import (
    COMPOSE_DIR,
    NETWORK,
    NODES,
    PROMETHEUS,
    TOOLS_IMAGE,
    ComposeStack,
    running_stack,
)
from tests.integration.raw_client import RawClient, frame, header_v1
from tests.waiting import wait_until

pytestmark = [pytest.mark.containers, pytest.mark.timeout(900)]

SECRETS = COMPOSE_DIR / "secrets"
FILES = ("compose.yaml", "compose.secure.yaml")
EAST = "localhost:19092,localhost:19093,localhost:19094"
EAST_MTLS = "localhost:19192,localhost:19193,localhost:19194"
WEST = "localhost:29092"


def password(user: str) -> str:
    return (SECRETS / "users" / user).read_text().strip()


def scram(bootstrap: str, user: str, secret: str | None = None,
          mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
    """librdkafka's configs of a SASL_SSL client logging in as `user`."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(SECRETS / "ca.crt"), "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": secret or password(user)}


def mtls(user: str | None) -> dict[str, Any]:
    """An SSL client with `user`'s certificate (None: without one)."""
    config = {"bootstrap.servers": EAST_MTLS, "security.protocol": "SSL",
              "ssl.ca.location": str(SECRETS / "ca.crt")}
    if user is not None:
        config |= {"ssl.certificate.location": str(SECRETS / "clients" / user / "tls.crt"),
                   "ssl.key.location": str(SECRETS / "clients" / user / "tls.key")}
    return config


def as_admin(bootstrap: str = EAST) -> AdminClient:
    return AdminClient(scram(bootstrap, "admin"))


@pytest.fixture(scope="module")
def stack() -> Iterator[ComposeStack]:
    subprocess.run(["bash", str(COMPOSE_DIR / "make-secrets.sh")], check=True, timeout=120)
    with running_stack(["mirror"], FILES) as running:
        print(f"\ncompose (secure): images built in {running.build_s:.1f}s, "
              f"up -d --wait returned after {running.up_s:.1f}s")
        yield running


def allow(principal: str, resource: ResourceType, name: str, *operations: AclOperation
          ) -> list[AclBinding]:
    return [AclBinding(resource, name, ResourcePatternType.LITERAL, principal, "*", operation,
                       AclPermissionType.ALLOW) for operation in operations]


def described_everywhere(config: dict[str, Any], brokers: str, topic: str) -> None:
    """Back once every broker of `brokers` shows `topic` in the Metadata it answers the
    client of `config` (ACLs reach the brokers after CreateAcls returns, as in Kafka)."""
    def shown() -> bool:
        for broker in brokers.split(","):
            found = AdminClient({**config, "bootstrap.servers": broker}).list_topics(
                topic, timeout=TIMEOUT).topics.get(topic)
            if found is None or found.error is not None:
                return False
        return True

    wait_until(shown, TIMEOUT, f"{topic} described on every broker")


def test_users_from_the_secrets_directory_log_in_and_alice_has_what_acls_give(
        stack: ComposeStack) -> None:
    """admin (a super user) and alice log in with the passwords of secrets/users/ with
    either SCRAM mechanism; alice's produce is refused until admin gives her ACLs, then she
    produces and consumes in a group."""
    admin = as_admin()
    with_sha256 = AdminClient(scram(EAST, "admin", mechanism="SCRAM-SHA-256"))
    assert set(with_sha256.list_topics(timeout=TIMEOUT).brokers) == {1, 2, 3}
    topic, group = unique("secure"), unique("alice-group")
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(TIMEOUT)
    outs = [Out(f"k{i}".encode(), f"v{i}".encode(), now_ms(), (), i % 3) for i in range(30)]
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        produce_confluent(EAST, topic, outs[:1], scram(EAST, "alice"))
    bindings = [*allow("User:alice", ResourceType.TOPIC, topic, AclOperation.WRITE,
                       AclOperation.READ),
                *allow("User:alice", ResourceType.GROUP, group, AclOperation.READ)]
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT)
    described_everywhere(scram(EAST, "alice"), EAST, topic)
    sent = produce_confluent(EAST, topic, outs, {**scram(EAST, "alice", mechanism=
                                                         "SCRAM-SHA-256"), "acks": "all"})
    consumer = confluent_consumer(EAST, **scram(EAST, "alice"), **{
        "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = receive(consumer, len(sent), timeout=60)
    finally:
        consumer.close()
    assert sorted((m.partition(), m.key(), m.value()) for m in got) == sorted(
        (r.partition, r.key, r.value) for r in sent)


def test_a_wrong_password_is_refused(stack: ComposeStack) -> None:
    errors: list[KafkaError] = []
    client = AdminClient({**scram(EAST, "alice", "not-her-password"),
                          "error_cb": errors.append})
    wait_until(lambda: client.poll(0.2) is not None and any(
        e.code() == KafkaError._AUTHENTICATION for e in errors), 30, "an authentication error")
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(errors)
    admin = as_admin()
    assert admin.list_topics(timeout=TIMEOUT).brokers.keys() == {1, 2, 3}


def test_plaintext_sent_to_the_tls_port_is_refused(stack: ComposeStack) -> None:
    client = RawClient("localhost:19092")
    try:
        client.send_raw(frame(header_v1(18, 0, 1)))
        assert client.closed_by_peer()
    finally:
        client.close()
    context = ssl.create_default_context(cafile=str(SECRETS / "ca.crt"))
    with socket.create_connection(("localhost", 19092), 10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        assert tls.getpeercert()["subjectAltName"][0] == ("DNS", "broker-1")


def test_a_client_certificate_is_the_principal_on_the_mtls_listener(
        stack: ComposeStack) -> None:
    """alice's certificate (CN=alice) makes her User:alice on MTLS: she may describe the
    topics her ACLs name and no other; without a certificate the handshake fails."""
    topic = unique("mtls")
    admin = as_admin()
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT)
    hidden = unique("hidden")
    admin.create_topics([NewTopic(hidden, 1, 3)])[hidden].result(TIMEOUT)
    for future in admin.create_acls(allow("User:alice", ResourceType.TOPIC, topic,
                                          AclOperation.DESCRIBE)).values():
        future.result(TIMEOUT)
    described_everywhere(mtls("alice"), EAST_MTLS, topic)
    seen = AdminClient(mtls("alice")).list_topics(timeout=TIMEOUT).topics
    assert topic in seen and hidden not in seen
    assert api_versions_over_tls(None) == "closed"
    assert api_versions_over_tls("alice") == "answered"
    with pytest.raises(KafkaException):
        AdminClient({**mtls(None), "log_level": 0}).list_topics(timeout=5)


def api_versions_over_tls(user: str | None) -> str:
    """An ApiVersions request over TLS to broker-1's MTLS listener, with `user`'s client
    certificate or none: "answered", or "closed" when the broker hangs up without an
    answer (TLS 1.3 checks the client's certificate after the client's handshake ends)."""
    context = ssl.create_default_context(cafile=str(SECRETS / "ca.crt"))
    if user is not None:
        context.load_cert_chain(SECRETS / "clients" / user / "tls.crt",
                                SECRETS / "clients" / user / "tls.key")
    with socket.create_connection(("localhost", 19192), 10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(frame(header_v1(18, 0, 1)))
        try:
            return "answered" if tls.recv(4) else "closed"
        except (ssl.SSLError, ConnectionResetError):
            return "closed"


def test_the_mirror_copies_east_to_west(stack: ComposeStack) -> None:
    """The mirror reads east and writes west over their INTERNAL listeners; the host reads
    west's copy over SASL_SSL as admin."""
    topic = unique("mirrored")
    admin = as_admin()
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(TIMEOUT)
    sent = produce_confluent(EAST, topic, [Out(f"k{i}".encode(), f"v{i}".encode(), now_ms(),
                                               (), i % 3) for i in range(40)],
                             {**scram(EAST, "admin"), "acks": "all"})
    target = f"east.{topic}"
    west = as_admin(WEST)
    wait_until(lambda: target in west.list_topics(timeout=TIMEOUT).topics, 120,
               f"{target} on west", ignoring=(KafkaException,))
    consumer = confluent_consumer(WEST, **scram(WEST, "admin"),
                                  **{"isolation.level": "read_committed",
                                     "group.id": unique("reader"),
                                     "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([target])
        copied = receive(consumer, len(sent), timeout=120)
    finally:
        consumer.close()
    assert sorted((m.partition(), m.key(), m.value()) for m in copied) == sorted(
        (r.partition, r.key, r.value) for r in sent)


def test_prometheus_still_scrapes_every_process(stack: ComposeStack) -> None:
    def targets() -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{PROMETHEUS}/api/v1/targets", timeout=10) as answer:
            return json.loads(answer.read())["data"]["activeTargets"]  # type: ignore[no-any-return]

    running = set(NODES) | {"mirror"}
    wait_until(lambda: running <= {t["labels"]["instance"] for t in targets()
                                   if t["health"] == "up"}, 90,
               lambda: json.dumps([(t["labels"]["instance"], t["health"]) for t in targets()]),
               ignoring=OSError, interval=1)


def test_no_password_or_key_is_in_an_image_or_a_variable(stack: ComposeStack) -> None:
    secrets = [password(user) for user in ("admin", "alice")]
    key = (SECRETS / "tls" / "broker-1" / "tls.key").read_text().splitlines()[1]
    for service in [*NODES, "mirror"]:
        environment = stack.inspect(service, "{{json .Config.Env}}")
        assert not any(s in environment for s in [*secrets, key]), service
    history = subprocess.run(["docker", "history", "--no-trunc", "odradek-broker:local"],
                             capture_output=True, text=True, check=True).stdout
    assert not any(s in history for s in secrets)
    assert Path(SECRETS).stat().st_mode & 0o077 == 0


PROBE = """
import socket, ssl, sys
host, port, certificate, protocol = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# gRPC: the HTTP/2 preface and an empty SETTINGS frame (the server answers with its own);
# Kafka: an ApiVersions v0 request
hello = (b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
         if protocol == "grpc" else bytes([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0]))
def answer(wrap):
    with socket.create_connection((host, port), 10) as raw:
        try:
            sock = wrap(raw)
            sock.sendall(hello)
            return "answered" if sock.recv(4) else "closed"
        except (ssl.SSLError, ConnectionResetError):
            return "closed"
context = ssl.create_default_context(cafile="/secrets/ca.crt")
if protocol == "grpc":
    context.set_alpn_protocols(["h2"])
anonymous = answer(lambda raw: context.wrap_socket(raw, server_hostname=host))
node = f"/secrets/tls/{certificate}"
context.load_cert_chain(f"{node}/tls.crt", f"{node}/tls.key")
print(answer(lambda raw: raw), anonymous,
      answer(lambda raw: context.wrap_socket(raw, server_hostname=host)))
"""
"""In a container on the compose network: how the server at `host:port` (gRPC or Kafka)
treats plaintext, TLS without a client certificate, and TLS with the certificate of
tls/<third argument>."""


def probe(host: str, port: int, certificate: str, protocol: str) -> list[str]:
    result = subprocess.run(
        ["docker", "run", "--rm", "--network", NETWORK, "--entrypoint", "python3",
         "--user", "0",  # secrets/ is private to its owner on the host
         "--volume", f"{SECRETS}:/secrets:ro", TOOLS_IMAGE, "-c", PROBE, host, str(port),
         certificate, protocol], capture_output=True, text=True, timeout=120, check=False)
    return result.stdout.split() or [result.stderr]


def test_the_controllers_speak_mutual_tls(stack: ComposeStack) -> None:
    """controller-1:9093 refuses plaintext and a TLS client without a certificate; with a
    node's certificate (as brokers and the other controllers connect) its gRPC server
    answers."""
    assert probe("controller-1", 9093, "broker-1", "grpc") == ["closed", "closed", "answered"]


def test_the_brokers_internal_listeners_speak_mutual_tls(stack: ComposeStack) -> None:
    """broker-1:9092 (replication, transaction markers, the mirror) refuses plaintext and
    TLS without a client certificate, and answers the mirror's certificate."""
    assert probe("broker-1", 9092, "mirror", "kafka") == ["closed", "closed", "answered"]
