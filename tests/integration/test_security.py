"""TLS and SASL listeners with real clients: one `odradek dev` broker with a PLAINTEXT, a
SASL_PLAINTEXT (PLAIN, SCRAM), an SSL (client certificates required, principals by
ssl.principal.mapping.rules) and a SASL_SSL listener; certificates made by `cryptography`.
Every client library speaks each protocol (marked client_matrix); the refused cases close
the connection with Kafka's error codes; bad SASL frames close that connection only."""

from __future__ import annotations

import asyncio
import base64
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaProducer
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from odradek.net.kafka_client import KafkaClientError, KafkaCluster, client_security
from tests.certificates import Authority
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.clients import kafka_python_subscriber, unique
from tests.integration.kafkajs_client import INSTALLED, run_kafkajs
from tests.integration.raw_client import RawClient, frame, header_v1
from tests.waiting import wait_until

SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE = 58, 33, 34
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')
RULES = "RULE:^CN=([a-z]+),OU=clients,O=Odradek$/$1/,RULE:^CN=broker$/broker/"
REAUTH_MS = 2000
KCAT = shutil.which("kcat")


@dataclass
class Pki:
    directory: Path
    ca: Authority
    truststore: Path
    keystore: Path
    client: Path
    """alice's certificate (CN=alice,OU=clients,O=Odradek), key first."""

    def issued(self, name: str, issued: Any) -> Path:
        return issued.write(self.directory / f"{name}.pem")


@dataclass
class SecureBroker:
    process: BrokerProcess
    ports: dict[str, int]
    pki: Pki

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = Authority()
    return Pki(directory, ca, ca.write(directory / "ca.pem"),
               ca.issue("broker").write(directory / "broker.pem"),
               ca.issue("alice", OU="clients", O="Odradek").write(directory / "alice.pem"))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecureBroker]:
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    root = tmp_path_factory.mktemp("secure")
    process = BrokerProcess(root / "data", root / "broker.log", {
        "listeners": listeners,
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms": str(REAUTH_MS),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.truststore),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": RULES,
    }, port=ports["PLAINTEXT"])
    process.start()
    admin = AdminClient({"bootstrap.servers": process.bootstrap})
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 8192),
                                              b"alice-scram")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=20)
    yield SecureBroker(process, ports, pki)
    process.stop()


# --- each client over each protocol -----------------------------------------------------------

PROTOCOLS = {
    "SASL_PLAINTEXT": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                       "sasl.username": "alice", "sasl.password": "alice-secret"},
    "SSL": {"security.protocol": "SSL"},
    "SASL_SSL": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                 "sasl.username": "alice", "sasl.password": "alice-scram"},
}


def librdkafka_config(secure: SecureBroker, listener: str) -> dict[str, str]:
    config = {"bootstrap.servers": secure.bootstrap(listener), **PROTOCOLS[listener]}
    if "SSL" in listener:
        config["ssl.ca.location"] = str(secure.pki.truststore)
    if listener == "SSL":
        config["ssl.certificate.location"] = str(secure.pki.client)
        config["ssl.key.location"] = str(secure.pki.client)
    return config


def python_config(secure: SecureBroker, listener: str, aio: bool = False) -> dict[str, Any]:
    """kafka-python's (or aiokafka's) spelling of the same settings."""
    given = PROTOCOLS[listener]
    config: dict[str, Any] = {"bootstrap_servers": secure.bootstrap(listener),
                              "security_protocol": given["security.protocol"]}
    if "sasl.mechanism" in given:
        config.update(sasl_mechanism=given["sasl.mechanism"],
                      sasl_plain_username=given["sasl.username"],
                      sasl_plain_password=given["sasl.password"])
    if "SSL" in listener:
        client = str(secure.pki.client) if listener == "SSL" else None
        if aio:
            config["ssl_context"] = create_ssl_context(cafile=str(secure.pki.truststore),
                                                       certfile=client, keyfile=client)
        else:
            config.update(ssl_cafile=str(secure.pki.truststore), ssl_certfile=client,
                          ssl_keyfile=client)
    return config


def round_trip_confluent(secure: SecureBroker, listener: str, topic: str) -> list[bytes]:
    config = librdkafka_config(secure, listener)
    producer = Producer(config)
    for value in VALUES:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    received: list[bytes] = []

    def poll() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received.append(message.value())
        return len(received) >= len(VALUES)
    try:
        wait_until(poll, 30, "three messages")
    finally:
        consumer.close()
    return received


def round_trip_kafka_python(secure: SecureBroker, listener: str, topic: str) -> list[bytes]:
    config = python_config(secure, listener)
    producer = KafkaProducer(**config)
    for value in VALUES:
        producer.send(topic, value).get(timeout=30)
    producer.close()
    consumer = kafka_python_subscriber(topic, auto_offset_reset="earliest",
                                       consumer_timeout_ms=15000, **config)
    try:
        return [message.value for _, message in zip(VALUES, consumer, strict=False)]
    finally:
        consumer.close()


def round_trip_aiokafka(secure: SecureBroker, listener: str, topic: str) -> list[bytes]:
    async def run() -> list[bytes]:
        config = python_config(secure, listener, aio=True)
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for value in VALUES:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **config)
        await consumer.start()
        try:
            return [(await asyncio.wait_for(consumer.getone(), 30)).value for _ in VALUES]
        finally:
            await consumer.stop()
    return asyncio.run(run())


def round_trip_kcat(secure: SecureBroker, listener: str, topic: str) -> list[bytes]:
    if KCAT is None:
        pytest.skip("kcat not installed")
    settings = [arg for key, value in librdkafka_config(secure, listener).items()
                if key != "bootstrap.servers" for arg in ("-X", f"{key}={value}")]
    common = [KCAT, "-b", secure.bootstrap(listener), "-t", topic, *settings]
    subprocess.run([*common, "-P"], input=b"\n".join(VALUES) + b"\n", check=True, timeout=60)
    done = subprocess.run([*common, "-C", "-o", "beginning", "-c", str(len(VALUES)), "-e"],
                          capture_output=True, check=True, timeout=60)
    return done.stdout.splitlines()


def round_trip_kafkajs(secure: SecureBroker, listener: str, topic: str) -> list[bytes]:
    if not INSTALLED.exists():
        pytest.skip("kafkajs not installed (scripts/bootstrap.sh --dev)")
    given = PROTOCOLS[listener]
    security: dict[str, Any] = {}
    if "SSL" in listener:
        client = secure.pki.client.read_text() if listener == "SSL" else None
        security["ssl"] = {"ca": [secure.pki.truststore.read_text()], "cert": client,
                           "key": client, "rejectUnauthorized": True}
    if "sasl.mechanism" in given:
        security["sasl"] = {"mechanism": given["sasl.mechanism"].lower(),
                            "username": given["sasl.username"],
                            "password": given["sasl.password"]}
    results, log = run_kafkajs(secure.bootstrap(listener), {
        "op": "produce", "args": {"topic": topic, "acks": -1,
                                  "messages": [{"value": v.decode()} for v in VALUES]}}, {
        "op": "consume", "args": {"groupId": unique("g"), "topic": topic,
                                  "count": len(VALUES)}}, security=security)
    assert all("ok" in result for result in results), (results, log)
    values = [item["value"] for item in results[1]["ok"]]
    return [value.encode() if isinstance(value, str) else base64.b64decode(value["base64"])
            for value in values]


VALUES = [b"one", b"two", b"three"]
CLIENTS = {"confluent-kafka": round_trip_confluent, "kafka-python": round_trip_kafka_python,
           "aiokafka": round_trip_aiokafka, "kcat": round_trip_kcat,
           "kafkajs": round_trip_kafkajs}


@pytest.mark.client_matrix
@pytest.mark.parametrize("listener", list(PROTOCOLS))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_client_produces_and_consumes_over_each_protocol(secure: SecureBroker, client: str,
                                                         listener: str) -> None:
    topic = unique(f"sec-{client}-{listener}")
    admin = AdminClient({"bootstrap.servers": secure.process.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    assert sorted(CLIENTS[client](secure, listener, topic)) == sorted(VALUES)


# --- refused: credentials ---------------------------------------------------------------------


def sasl_exchange(bootstrap: str, mechanism: str, *tokens: bytes,
                  failure_closes: bool = True) -> list[Any]:
    """SaslHandshake v1 then one SaslAuthenticate v2 per token, on one raw connection; the
    answers until one fails (after which the broker closes the connection, on a SASL
    listener)."""
    client = RawClient(bootstrap)
    try:
        answers = [client.request(SaslHandshakeRequest(mechanism=mechanism),
                                  SaslHandshakeResponse, 1)]
        for token in tokens:
            if answers[-1].error_code:
                break
            answers.append(client.request(SaslAuthenticateRequest(auth_bytes=token),
                                          SaslAuthenticateResponse, 2))
        if answers[-1].error_code and failure_closes:
            assert client.closed_by_peer(), "the connection stays open after a failure"
        return answers
    finally:
        client.close()


def test_wrong_password_gets_sasl_authentication_failed_and_the_connection_closes(
        secure: SecureBroker) -> None:
    answers = sasl_exchange(secure.bootstrap("SASL_PLAINTEXT"), "PLAIN", b"\0alice\0wrong")
    assert answers[-1].error_code == SASL_AUTHENTICATION_FAILED
    assert answers[-1].error_message == "Authentication failed: Invalid username or password"


def test_wrong_scram_password_is_refused_by_a_real_client(secure: SecureBroker) -> None:
    errors: list[KafkaError] = []
    config = {**librdkafka_config(secure, "SASL_SSL"), "sasl.password": "wrong",
              "error_cb": errors.append}
    admin = AdminClient(config)
    wait_until(lambda: admin.poll(0.2) is not None and any(
        e.code() == KafkaError._AUTHENTICATION for e in errors), 20, "an authentication error")
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(errors)


def test_unknown_mechanism_gets_unsupported_sasl_mechanism(secure: SecureBroker) -> None:
    (answer,) = sasl_exchange(secure.bootstrap("SASL_PLAINTEXT"), "GSSAPI")
    assert answer.error_code == UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def test_requests_before_authentication_close_the_connection(secure: SecureBroker) -> None:
    client = RawClient(secure.bootstrap("SASL_PLAINTEXT"))
    try:
        client.send_raw(frame(header_v1(3, 1, 1) + b"\xff\xff\xff\xff"))
        assert client.closed_by_peer()
    finally:
        client.close()


def test_sasl_requests_on_a_plaintext_listener_get_illegal_sasl_state(
        secure: SecureBroker) -> None:
    (answer,) = sasl_exchange(secure.process.bootstrap, "PLAIN", failure_closes=False)
    assert answer.error_code == ILLEGAL_SASL_STATE


# --- refused: TLS -----------------------------------------------------------------------------


def tls_handshake(secure: SecureBroker, listener: str, certificate: Path | None = None,
                  trust: Path | None = None) -> str:
    """"ok" when a TLS connection is made and the broker answers ApiVersions over it, else the
    failure."""
    context = ssl.create_default_context(cafile=str(trust or secure.pki.truststore))
    if certificate is not None:
        context.load_cert_chain(str(certificate))
    try:
        with socket.create_connection(("127.0.0.1", secure.ports[listener]), 10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(frame(header_v1(18, 0, 7)))
            answer = tls.recv(4)
            return "ok" if len(answer) == 4 else "closed"
    except (ssl.SSLError, OSError) as error:
        return f"{type(error).__name__}: {error}"


def test_a_trusted_client_certificate_is_served(secure: SecureBroker) -> None:
    assert tls_handshake(secure, "SSL", secure.pki.client) == "ok"


@pytest.mark.parametrize("case", ["missing", "expired", "untrusted CA", "unmapped name"])
def test_client_certificates_that_are_refused(secure: SecureBroker, case: str) -> None:
    """Each certificate differs from alice's, which is served, by its one flaw (the broker
    closes the connection without a TLS alert, so the client cannot tell which)."""
    pki = secure.pki
    client = {"OU": "clients", "O": "Odradek"}
    certificate = {
        "missing": None,
        "expired": pki.issued("expired", pki.ca.expired("bob", **client)),
        "untrusted CA": pki.issued("stranger", Authority("Other CA").issue("eve", **client)),
        "unmapped name": pki.issued("unmapped", pki.ca.issue("carol", OU="outsiders")),
    }[case]
    assert tls_handshake(secure, "SSL", certificate) != "ok"


def test_a_server_certificate_from_an_untrusted_ca_is_refused_by_the_client(
        secure: SecureBroker) -> None:
    other = Authority("Other CA").write(secure.pki.directory / "other-ca.pem")
    assert "CERTIFICATE_VERIFY_FAILED" in tls_handshake(secure, "SASL_SSL", trust=other)


def test_plaintext_sent_to_a_tls_port_is_refused(secure: SecureBroker) -> None:
    client = RawClient(secure.bootstrap("SASL_SSL"))
    try:
        client.send_raw(frame(header_v1(18, 0, 1)))
        assert client.closed_by_peer()
    finally:
        client.close()
    assert tls_handshake(secure, "SASL_SSL") == "ok"


# --- SCRAM credentials (KIP-554), re-authentication (KIP-368), certificate reload --------------


def test_scram_credentials_are_described_altered_and_deleted(secure: SecureBroker) -> None:
    admin = AdminClient({"bootstrap.servers": secure.process.bootstrap})
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(20)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192), (ScramMechanism.SCRAM_SHA_512, 8192)]
    user = unique("dave")
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"dave-secret")
    admin.alter_user_scram_credentials([upsert])[user].result(20)
    config = {**librdkafka_config(secure, "SASL_PLAINTEXT"), "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": user, "sasl.password": "dave-secret"}
    assert AdminClient(config).list_topics(timeout=20).brokers
    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])[user].result(20)
    with pytest.raises(Exception, match="RESOURCE_NOT_FOUND|does not exist"):
        admin.describe_user_scram_credentials([user])[user].result(20)
    answers = sasl_exchange(secure.bootstrap("SASL_PLAINTEXT"), "SCRAM-SHA-256",
                            f"n,,n={user},r=abc".encode())
    assert answers[-1].error_code == SASL_AUTHENTICATION_FAILED


def test_a_session_expires_without_re_authentication(secure: SecureBroker) -> None:
    client = RawClient(secure.bootstrap("SASL_PLAINTEXT"))
    try:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1)
        answer = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"),
                                SaslAuthenticateResponse, 2)
        assert answer.error_code == 0 and answer.session_lifetime_ms == 0
    finally:
        client.close()
    client = RawClient(secure.bootstrap("SASL_PLAINTEXT"))
    try:
        from kafka.net.sasl.scram import ScramClient
        scram = ScramClient("alice", "alice-scram", "SCRAM-SHA-256")
        client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), SaslHandshakeResponse, 1)
        first = client.request(SaslAuthenticateRequest(auth_bytes=scram.first_message()),
                               SaslAuthenticateResponse, 2)
        scram.process_server_first_message(first.auth_bytes)
        final = client.request(SaslAuthenticateRequest(auth_bytes=scram.final_message()),
                               SaslAuthenticateResponse, 2)
        assert final.error_code == 0 and final.session_lifetime_ms == REAUTH_MS
        scram.process_server_final_message(final.auth_bytes)

        def refused() -> bool:
            try:
                client.metadata([])
            except (ConnectionError, OSError, AssertionError):
                return True
            return False
        wait_until(refused, 30, "the expired session to be closed", interval=0.2)
    finally:
        client.close()


def test_a_client_that_re_authenticates_keeps_its_connection(secure: SecureBroker) -> None:
    """librdkafka re-authenticates (KIP-368) before its session ends: no connection of it is
    closed as expired while it produces over three session lifetimes."""
    config = {**librdkafka_config(secure, "SASL_PLAINTEXT"), "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "alice", "sasl.password": "alice-scram"}
    topic = unique("reauth")
    seen = len(secure.process.logs())
    producer = Producer(config)
    delivered: list[bool] = []
    started = time.monotonic()

    def produced_long_enough() -> bool:
        producer.produce(topic, b"x", on_delivery=lambda e, m: delivered.append(e is None))
        producer.flush(10)
        return time.monotonic() - started > 3 * REAUTH_MS / 1000
    wait_until(produced_long_enough, 60, "three session lifetimes", interval=0.2)
    assert delivered and all(delivered)
    assert "session expired" not in secure.process.logs()[seen:]


def test_a_changed_key_store_is_served_to_new_connections(secure: SecureBroker) -> None:
    pki = secure.pki

    def served_name() -> str:
        context = ssl.create_default_context(cafile=str(pki.truststore))
        with socket.create_connection(("127.0.0.1", secure.ports["SASL_SSL"]), 10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            certificate = tls.getpeercert()
        return dict(item for rdn in certificate["subject"] for item in rdn)["commonName"]
    assert served_name() == "broker"
    renewed = pki.ca.issue("broker-renewed").write(pki.directory / "renewed.pem")
    renewed.replace(pki.keystore)
    wait_until(lambda: served_name() == "broker-renewed", 30, "the renewed certificate")


# --- fuzzing the SASL frames --------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "X"]),
       tokens=st.lists(st.binary(max_size=120), max_size=3),
       junk=st.binary(max_size=64))
def test_fuzzed_sasl_frames_close_only_that_connection(secure: SecureBroker, mechanism: str,
                                                       tokens: list[bytes],
                                                       junk: bytes) -> None:
    witness = RawClient(secure.bootstrap("SASL_PLAINTEXT"))
    client = RawClient(secure.bootstrap("SASL_PLAINTEXT"))
    try:
        witness.request(SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1)
        try:
            client.request(SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse, 1)
            for token in tokens:
                client.request(SaslAuthenticateRequest(auth_bytes=token),
                               SaslAuthenticateResponse, 2)
            client.send_raw(frame(header_v1(36, 2, 99) + junk))
            client.send_raw(frame(junk))
        except (ConnectionError, OSError, AssertionError, ValueError):
            pass
        answer = witness.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"),
                                 SaslAuthenticateResponse, 2)
        assert answer.error_code == 0
        assert witness.metadata([]).brokers
    finally:
        client.close()
        witness.close()


# --- Odradek's own client (replica fetchers, coordinators, mirror, tools) -----------------------


def own_client_properties(secure: SecureBroker, listener: str, mechanism: str = "",
                          password: str = "") -> dict[str, str]:
    """Kafka client properties, as `odradek.net.kafka_client.client_security` reads them."""
    properties = {"security.protocol": listener, "ssl.truststore.type": "PEM",
                  "ssl.truststore.location": str(secure.pki.truststore)}
    if listener == "SSL":
        properties.update({"ssl.keystore.type": "PEM",
                           "ssl.keystore.location": str(secure.pki.client)})
    if mechanism:
        module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
        properties.update({"sasl.mechanism": mechanism, "sasl.jaas.config": (
            f"org.apache.kafka.common.security.{module} required "
            f'username="alice" password="{password}";')})
    return properties


def own_client_brokers(secure: SecureBroker, listener: str, properties: dict[str, str]
                       ) -> list[int]:
    async def run() -> list[int]:
        async with KafkaCluster([("127.0.0.1", secure.ports[listener])], "own-client", 10,
                                client_security(properties)) as cluster:
            response = await cluster.metadata([])
            return [broker.node_id for broker in response.brokers]
    return asyncio.run(run())


@pytest.mark.parametrize(("listener", "mechanism", "password"), [
    ("SSL", "", ""), ("SASL_PLAINTEXT", "PLAIN", "alice-secret"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice-scram"),
    ("SASL_SSL", "SCRAM-SHA-512", "alice-scram")])
def test_our_own_client_connects_over_each_protocol(secure: SecureBroker, listener: str,
                                                    mechanism: str, password: str) -> None:
    properties = own_client_properties(secure, listener, mechanism, password)
    assert own_client_brokers(secure, listener, properties)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_our_own_client_reports_a_refused_login(secure: SecureBroker, mechanism: str) -> None:
    properties = own_client_properties(secure, "SASL_SSL", mechanism, "wrong")
    with pytest.raises(KafkaClientError, match="SASL_AUTHENTICATION_FAILED|login as alice"):
        own_client_brokers(secure, "SASL_SSL", properties)


def test_our_own_client_refuses_a_broker_from_an_untrusted_ca(secure: SecureBroker,
                                                              tmp_path: Path) -> None:
    properties = {**own_client_properties(secure, "SASL_SSL", "PLAIN", "alice-secret"),
                  "ssl.truststore.location": str(Authority("Other CA").write(
                      tmp_path / "other.pem"))}
    with pytest.raises(KafkaClientError, match="CERTIFICATE_VERIFY_FAILED"):
        own_client_brokers(secure, "SASL_SSL", properties)


def test_our_own_client_re_authenticates_within_its_session(secure: SecureBroker) -> None:
    """On the listener whose SCRAM sessions last REAUTH_MS, one connection keeps answering
    over three session lifetimes: the client authenticates again in time (KIP-368)."""
    properties = own_client_properties(secure, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice-scram")

    async def run() -> int:
        async with KafkaCluster([("127.0.0.1", secure.ports["SASL_PLAINTEXT"])], "reauth", 10,
                                client_security(properties)) as cluster:
            answered = 0
            started = time.monotonic()
            while time.monotonic() - started < 3 * REAUTH_MS / 1000:
                await cluster.metadata([])
                answered += 1
                await asyncio.sleep(0.1)
            return answered
    seen = len(secure.process.logs())
    assert asyncio.run(run()) > 10
    assert "session expired" not in secure.process.logs()[seen:]


def test_the_broker_logs_no_tracebacks(secure: SecureBroker) -> None:
    assert "Traceback" not in secure.process.logs()
