"""A replicated cluster secured inside as well as outside: StandardAuthorizer, an inter-broker
listener on SASL_SSL (SCRAM-SHA-512 as `broker`, bootstrapped by `storage format --add-scram`,
and mutual TLS), the controllers' gRPC on mutual TLS, and a client listener on SASL_SSL. An
idempotent acks=all producer (alice, with ACLs only on her topic) loses and duplicates nothing
when the partition leader is killed mid-stream; the killed broker rejoins the ISR over the
secure listener, and a transaction commits across another kill. A broker with a wrong
inter-broker password is refused and stays out of the ISR while the others serve.

The brokers' first listener is PLAINTEXT only for `odradek cluster`'s readiness probe: with
the authorizer and no ACL for ANONYMOUS, nothing can be done on it."""

from __future__ import annotations

import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.certificates import Authority
from tests.integration.broker_process import free_port
from tests.integration.cluster import TIMEOUT, Cluster, running_cluster
from tests.integration.test_startup_config import start_expecting_failure
from tests.waiting import wait_until

TOPIC = "payments"
TXN_TOPIC = "ledger"
BROKER_SECRET = "broker-secret"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="broker" password="{password}";')
TXN_REPLICAS = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
"""Each broker leads one partition, so that whichever one coordinates the transaction, after
a kill one partition's leader is another broker: its markers cross the inter-broker
listener."""
TXN_PARTITIONS = len(TXN_REPLICAS)
REFUSED_LOGIN_LOG = r"fetching from broker \d+ .*SASL_AUTHENTICATION_FAILED"
NOT_A_BROKER_LOG = rf"{TOPIC}-0: fetch from \d+ failed: TOPIC_AUTHORIZATION_FAILED"


@dataclass
class SecureCluster:
    cluster: Cluster
    ca: Path

    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n['listeners']['CLIENT']}"
                        for n in self.cluster.layout["nodes"] if n["role"] == "broker")

    def client(self, user: str, password: str, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap(), "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(self.ca), "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": user, "sasl.password": password, **extra}

    def admin(self) -> AdminClient:
        return AdminClient(self.client("admin", "admin-secret"))

    def alice(self, **extra: Any) -> dict[str, Any]:
        return self.client("alice", "alice-secret", **extra)

    def partition(self, topic: str, index: int = 0) -> Any:
        return self.admin().list_topics(topic, timeout=TIMEOUT).topics[topic].partitions[index]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureCluster]:
    pki = tmp_path_factory.mktemp("pki")
    ca = Authority()
    truststore = ca.write(pki / "ca.pem")
    keystore = ca.issue("broker").write(pki / "broker.pem")
    overrides = {
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL,INTERNAL:SASL_SSL,CONTROLLER:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config":
            JAAS.format(password=BROKER_SECRET),
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.controller.ssl.client.auth": "required",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:broker;User:admin",
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "2000",
        "replica.fetch.backoff.ms": "200",
    }
    scram = [f"SCRAM-SHA-512=[name=broker,password={BROKER_SECRET}]",
             "SCRAM-SHA-512=[name=admin,password=admin-secret]"]
    with running_cluster(tmp_path_factory.mktemp("cluster"), 1, 3, overrides,
                         listeners=["PLAINTEXT", "CLIENT", "INTERNAL"],
                         add_scram=scram) as cluster:
        secure = SecureCluster(cluster, truststore)
        _grant_alice(secure.admin())
        yield secure


def _grant_alice(admin: AdminClient) -> None:
    upsert = UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret")
    admin.alter_user_scram_credentials([upsert])["alice"].result(TIMEOUT)
    allow = AclPermissionType.ALLOW
    acls = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice",
                       "*", operation, allow)
            for topic in (TOPIC, TXN_TOPIC)
            for operation in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)]
    acls += [AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED,
                        "User:alice", "*", AclOperation.READ, allow),
             AclBinding(ResourceType.TRANSACTIONAL_ID, "alice-", ResourcePatternType.PREFIXED,
                        "User:alice", "*", AclOperation.WRITE, allow)]
    for future in admin.create_acls(acls).values():
        future.result(TIMEOUT)
    mirrored = {"min.insync.replicas": "2"}
    topics = [NewTopic(TOPIC, 1, 3, config=mirrored),
              NewTopic(TXN_TOPIC, len(TXN_REPLICAS), replica_assignment=TXN_REPLICAS,
                       config=mirrored)]
    for future in admin.create_topics(topics, request_timeout=TIMEOUT).values():
        future.result(TIMEOUT)


def _full_isr(secure: SecureCluster, topic: str, partitions: int = 1) -> bool:
    return all(len(secure.partition(topic, p).isrs) == 3 for p in range(partitions))


def _read_all(secure: SecureCluster, topic: str, group: str, committed: bool = False,
              partition: int = 0) -> list[tuple[int, bytes]]:
    """The partition's records up to its end (read_committed: up to its last record before
    the commit marker that ends it)."""
    consumer = Consumer(secure.alice(**{
        "group.id": group, "enable.auto.commit": False,
        "isolation.level": "read_committed" if committed else "read_uncommitted"}))
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                             timeout=TIMEOUT)[1] - committed
        consumer.assign([TopicPartition(topic, partition, 0)])
        records: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 60
        while (not records or records[-1][0] + 1 < end) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    records.append((message.offset(), message.value()))
        return records
    finally:
        consumer.close()


def test_acknowledged_writes_survive_a_leader_kill_on_a_secure_cluster(
        secure: SecureCluster) -> None:
    cluster = secure.cluster
    wait_until(lambda: _full_isr(secure, TOPIC), what="a full ISR", ignoring=Exception)
    acked: dict[int, int | None] = {}
    failed: list[str] = []
    stop = threading.Event()

    def report(error: Any, message: Any) -> None:
        if error is not None:
            failed.append(str(error))
        else:
            acked[int(message.value())] = message.offset()

    def produce() -> int:
        """Produces until `stop`; returns how many records the final flush left undelivered."""
        producer = Producer(secure.alice(**{
            "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": 30000, "request.timeout.ms": 5000}))
        sequence = 0
        while not stop.is_set():
            producer.produce(TOPIC, str(sequence).encode(), on_delivery=report)
            sequence += 1
            producer.poll(0)
            if sequence % 50 == 0:
                time.sleep(0.01)
        return producer.flush(60)

    with ThreadPoolExecutor(1) as pool:
        producing = pool.submit(produce)
        try:
            wait_until(lambda: len(acked) >= 500, what="acknowledged records before the kill")
            victim = f"broker-{secure.partition(TOPIC).leader}"
            cluster.stop(victim, kill=True)
            before = len(acked)
            wait_until(lambda: len(acked) >= before + 500, timeout=60,
                       what="acknowledged records after the kill")
            cluster.start(victim)
            wait_until(lambda: _full_isr(secure, TOPIC), timeout=60,
                       what=f"{victim} back in the ISR", ignoring=Exception)
            rejoined = len(acked)
            wait_until(lambda: len(acked) >= rejoined + 200,
                       what="acknowledged records with the full ISR again")
        finally:
            stop.set()
        unflushed = producing.result(90)  # a producer that failed fails the test here
    assert unflushed == 0, f"{unflushed} records undelivered after the final flush"
    assert not failed, failed[:5]

    records = _read_all(secure, TOPIC, "alice-check")
    offsets = [offset for offset, _ in records]
    assert offsets == sorted(set(offsets))
    read = {int(value): offset for offset, value in records}
    assert len(read) == len(records), "a record was written twice"
    # an offset None is librdkafka's implicit ack (test_replication_faults.Ledger): anywhere
    lost = {s: o for s, o in acked.items() if s not in read or o not in (None, read[s])}
    assert not lost, f"{len(lost)} acknowledged records lost or moved, e.g. {list(lost)[:5]}"


def test_a_transaction_commits_across_a_leader_kill(secure: SecureCluster) -> None:
    cluster = secure.cluster
    wait_until(lambda: _full_isr(secure, TXN_TOPIC, TXN_PARTITIONS), what="a full ISR",
               ignoring=Exception)
    producer = Producer(secure.alice(**{"transactional.id": "alice-ledger",
                                        "transaction.timeout.ms": 60000}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    sent = [f"{batch}{n}".encode() for batch in "ab" for n in range(30)]
    for value in sent[:30]:
        producer.produce(TXN_TOPIC, value, partition=int(value[1:]) % TXN_PARTITIONS)
    assert producer.flush(TIMEOUT) == 0
    victim = f"broker-{secure.partition(TXN_TOPIC).leader}"
    cluster.stop(victim, kill=True)
    for value in sent[30:]:
        producer.produce(TXN_TOPIC, value, partition=int(value[1:]) % TXN_PARTITIONS)
    producer.commit_transaction(60)
    cluster.start(victim)
    wait_until(lambda: _full_isr(secure, TXN_TOPIC, TXN_PARTITIONS), timeout=60,
               what=f"{victim} back in the ISR", ignoring=Exception)

    for partition in range(TXN_PARTITIONS):
        values = [value for _, value in _read_all(secure, TXN_TOPIC, "alice-txn", True,
                                                  partition)]
        assert values == [v for v in sent if int(v[1:]) % TXN_PARTITIONS == partition]


@pytest.mark.parametrize(("login", "refusal"), [
    ('username="broker" password="not-it"', REFUSED_LOGIN_LOG),
    ('username="alice" password="alice-secret"', NOT_A_BROKER_LOG),
], ids=["wrong-password", "not-cluster-action"])
def test_a_broker_refused_by_the_others_cannot_replicate(
        secure: SecureCluster, login: str, refusal: str) -> None:
    """A wrong password, or a principal without CLUSTER_ACTION (alice may read the topic,
    but not as a follower): the broker stays out of the ISR and the others serve."""
    cluster = secure.cluster
    wait_until(lambda: _full_isr(secure, TOPIC), what="a full ISR", ignoring=Exception)
    leader = secure.partition(TOPIC).leader
    outcast = next(f"broker-{i}" for i in (1, 2, 3) if i != leader)
    config = Path(cluster.node(outcast)["config"])
    good = config.read_text()
    log = Path(cluster.node(outcast)["log"])
    cluster.stop(outcast)
    config.write_text(good.replace(f'username="broker" password="{BROKER_SECRET}"', login))
    seen = len(log.read_text(errors="replace"))
    try:
        cluster.start(outcast)
        wait_until(lambda: re.search(refusal, log.read_text(errors="replace")[seen:]),
                   timeout=60, what=f"{refusal} in the broker's log")
        producer = Producer(secure.alice(acks="all", **{"enable.idempotence": True}))
        for n in range(20):
            producer.produce(TOPIC, f"while-refused-{n}".encode())
        assert producer.flush(TIMEOUT) == 0  # the other two keep serving
        partition = secure.partition(TOPIC)
        assert int(outcast.split("-")[1]) not in partition.isrs, partition
    finally:
        cluster.stop(outcast)
        config.write_text(good)
        cluster.start(outcast)
    wait_until(lambda: _full_isr(secure, TOPIC), timeout=60,
               what=f"{outcast} back in the ISR as the broker", ignoring=Exception)


@pytest.mark.parametrize(("overrides", "message"), [
    ({}, "sasl.mechanism.inter.broker.protocol GSSAPI is not supported on inter-broker "
         "listener INTERNAL (SASL_PLAINTEXT)"),
    ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"},
     "listener.name.internal.scram-sha-512.sasl.jaas.config: sasl.jaas.config is required"),
])
def test_a_sasl_inter_broker_listener_without_a_usable_login_stops_startup(
        tmp_path: Path, overrides: dict[str, str], message: str) -> None:
    settings = {"listeners": f"PLAINTEXT://127.0.0.1:{free_port()},"
                             f"INTERNAL://127.0.0.1:{free_port()}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
                                                  "INTERNAL:SASL_PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512", **overrides}
    output = start_expecting_failure(
        tmp_path / "data", *(arg for key, value in settings.items()
                             for arg in ("--override", f"{key}={value}")))
    assert message in output


def test_the_active_controller_exports_offsets_read_over_the_secure_listener(
        secure: SecureCluster) -> None:
    """Kafka Exporter's offsets come from ListOffsets the controller sends to the brokers'
    inter-broker listener, logged in as the brokers are."""
    controller = secure.cluster.node("controller-1")
    producer = Producer(secure.alice())
    producer.produce(TOPIC, b"counted")
    assert producer.flush(TIMEOUT) == 0

    def newest_offset() -> float | None:
        url = f"http://127.0.0.1:{controller['metrics_port']}/metrics"
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            text = response.read().decode()
        return next((sample.value for family in text_string_to_metric_families(text)
                     for sample in family.samples
                     if sample.name == "kafka_topic_partition_current_offset"
                     and sample.labels.get("topic") == TOPIC), None)

    wait_until(lambda: (newest_offset() or 0) > 0, what="the exporter's offset of the topic")
