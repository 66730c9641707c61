"""`odradek mirror` between two `odradek dev` clusters, east and west, each with
StandardAuthorizer and a SASL_SSL listener with SCRAM-SHA-512 users (admin a super user),
the mirror configured as MM2 is (`<alias>.security.protocol`, `<alias>.ssl.*`,
`<alias>.sasl.*`): records are mirrored, topic ACLs synced by MirrorSourceConnector's rules
and a consumer with only the synced ACL reads the remote topic; a wrong password is
reported and the clusters keep serving; `sync.topic.acls.enabled=false` syncs nothing; and
between clusters without authorizers the mirror copies data and says once that ACLs are not
synced. The tests' own setup (topics, ACLs, SCRAM users) uses each broker's PLAINTEXT
listener, where ANONYMOUS is a super user."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
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
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from odradek.security.authorizer import STANDARD_AUTHORIZER
from tests.certificates import Authority
from tests.integration.broker_process import ODRADEK, BrokerProcess, free_port
from tests.integration.clients import unique
from tests.integration.mirror_process import (
    MirrorProcess,
    assert_refused_in_one_line,
    properties,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.mirror
TIMEOUT = 60.0
USERS = {"admin": "admin-secret", "reader": "reader-secret", "alice": "alice-secret"}
Acl = tuple[str, str, str, str, str, str]
"""(pattern type, topic, principal, host, operation, permission), as the tests compare."""


def jaas(user: str, password: str) -> str:
    return ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{user}" password="{password}";')


@dataclass
class SecureCluster:
    broker: BrokerProcess
    sasl_port: int
    truststore: Path

    @property
    def plain(self) -> str:
        return self.broker.bootstrap

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def librdkafka(self, user: str) -> dict[str, str]:
        """A confluent-kafka client of `user` on the SASL_SSL listener."""
        return {"bootstrap.servers": self.sasl, "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
                "sasl.password": USERS[user], "ssl.ca.location": str(self.truststore)}

    def mirror_configs(self, alias: str, password: str = USERS["admin"]) -> dict[str, str]:
        """The cluster in an MM2 file, as MM2's users write it."""
        return {f"{alias}.bootstrap.servers": self.sasl,
                f"{alias}.security.protocol": "SASL_SSL",
                f"{alias}.sasl.mechanism": "SCRAM-SHA-512",
                f"{alias}.sasl.jaas.config": jaas("admin", password),
                f"{alias}.ssl.truststore.type": "PEM",
                f"{alias}.ssl.truststore.location": str(self.truststore)}

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.plain})

    def topic_acls(self) -> set[Acl]:
        admin = self.admin()
        found = admin.describe_acls(AclBindingFilter(
            ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(TIMEOUT)
        return {(b.resource_pattern_type.name, b.name, b.principal, b.host, b.operation.name,
                 b.permission_type.name) for b in found}


def _secure_cluster(root: Path, truststore: Path, keystore: Path) -> SecureCluster:
    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(root / "data", root / "broker.log", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
        "num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
    }, port=plain)
    broker.start()
    cluster = SecureCluster(broker, sasl, truststore)
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(
        ScramMechanism.SCRAM_SHA_512, 4096), password.encode())
        for user, password in USERS.items()]
    admin = cluster.admin()
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(TIMEOUT)
    return cluster


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, SecureCluster]]:
    pki = tmp_path_factory.mktemp("pki")
    ca = Authority()
    truststore = ca.write(pki / "ca.pem")
    keystore = ca.issue("broker").write(pki / "broker.pem")
    started: dict[str, SecureCluster] = {}
    try:
        for alias in ("east", "west"):
            started[alias] = _secure_cluster(tmp_path_factory.mktemp(alias), truststore,
                                             keystore)
        yield started
    finally:
        for cluster in started.values():
            cluster.broker.stop()


def create_topics(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(TIMEOUT)


def produce(config: dict[str, str], topic: str, count: int) -> list[bytes]:
    values = [f"{topic}-{i}".encode() for i in range(count)]
    producer = Producer(config)
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT) == 0
    return values


def read(config: dict[str, str], topic: str, count: int) -> list[bytes]:
    """`count` records of partition 0 from its start, by assignment (no group ACL needed);
    a broker error fails at once."""
    consumer = Consumer({**config, "group.id": unique("reader"), "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is None:
            return
        assert message.error() is None, message.error()
        got.append(message.value())

    try:
        wait_until(lambda: len(got) >= count, TIMEOUT, lambda: f"{count} of {topic}: {got}",
                   between=poll)
    finally:
        consumer.close()
    return got


def read_without_group(cluster: SecureCluster, user: str, topic: str, count: int
                       ) -> list[bytes]:
    """kafka-python, with no group, so that a TOPIC READ ACL is all `user` needs."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.sasl, security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=user,
        sasl_plain_password=USERS[user], ssl_cafile=str(cluster.truststore), group_id=None,
        enable_auto_commit=False, auto_offset_reset="earliest",
        isolation_level="read_committed")
    consumer.assign([KafkaTopicPartition(topic, 0)])
    got: list[bytes] = []
    try:
        wait_until(lambda: len(got) >= count, TIMEOUT, lambda: f"{count} of {topic}: {got}",
                   between=lambda: got.extend(record.value for records in consumer.poll(
                       200).values() for record in records))
    finally:
        consumer.close()
    return got


def add_acls(cluster: SecureCluster, *acls: Acl) -> None:
    bindings = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType[pattern], principal,
                           host, AclOperation[operation], AclPermissionType[permission])
                for pattern, topic, principal, host, operation, permission in acls]
    admin = cluster.admin()
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT)


def secure_mirror(root: Path, clusters: dict[str, SecureCluster], topics: str,
                  west_password: str = USERS["admin"], **settings: str) -> MirrorProcess:
    config = properties({alias: cluster.sasl for alias, cluster in clusters.items()}, **{
        **clusters["east"].mirror_configs("east"),
        **clusters["west"].mirror_configs("west", west_password),
        "east->west.enabled": "true", "emit.heartbeats.enabled": "false",
        "topics": topics, "sync.topic.acls.interval.seconds": "1", **settings})
    return MirrorProcess(root, config).start()


def test_records_and_topic_acls_are_mirrored_over_sasl_ssl(
        clusters: dict[str, SecureCluster], tmp_path: Path) -> None:
    east, west = clusters["east"], clusters["west"]
    create_topics(east.plain, "orders", "payments", "private")
    add_acls(east,
             ("LITERAL", "orders", "User:reader", "*", "READ", "ALLOW"),
             ("LITERAL", "orders", "User:alice", "*", "WRITE", "ALLOW"),
             ("LITERAL", "orders", "User:bob", "*", "DESCRIBE", "DENY"),
             ("LITERAL", "payments", "User:alice", "*", "ALL", "ALLOW"),
             ("PREFIXED", "orders", "User:carol", "*", "READ", "ALLOW"),
             ("LITERAL", "private", "User:reader", "*", "READ", "ALLOW"))
    values = produce(east.librdkafka("admin"), "orders", 5)
    mirror = secure_mirror(tmp_path, clusters, "orders, payments")
    try:
        expected = {("LITERAL", "east.orders", "User:reader", "*", "READ", "ALLOW"),
                    ("LITERAL", "east.orders", "User:bob", "*", "DESCRIBE", "DENY"),
                    ("LITERAL", "east.payments", "User:alice", "*", "READ", "ALLOW")}
        wait_until(lambda: expected <= west.topic_acls(), TIMEOUT,
                   lambda: f"synced ACLs: {west.topic_acls()}\n{mirror.logs()[-3000:]}")
        assert west.topic_acls() == expected
        assert read_without_group(west, "reader", "east.orders", 5) == values
        assert mirror.health()[0] == 200
        status = subprocess.run([*ODRADEK, "mirror", "status", "--json", "--config",
                                 str(mirror.config_path)], capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert status.returncode == 0, status.stderr
        (flow,) = json.loads(status.stdout)["flows"]
        assert {row["target_topic"] for row in flow["partitions"]} == {"east.orders",
                                                                        "east.payments"}
    finally:
        mirror.stop()
    refused: list[KafkaError | None] = []
    producer = Producer({**west.librdkafka("alice"), "retries": 0})
    producer.produce("east.payments", b"x", on_delivery=lambda e, _: refused.append(e))
    producer.flush(TIMEOUT)
    assert refused[0] is not None
    assert refused[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # ALL became READ


def test_a_wrong_password_is_reported_and_the_clusters_keep_serving(
        clusters: dict[str, SecureCluster], tmp_path: Path) -> None:
    east, west = clusters["east"], clusters["west"]
    create_topics(east.plain, "refused")
    mirror = secure_mirror(tmp_path, clusters, "refused", west_password="wrong")
    try:
        wait_until(lambda: mirror.health()[0] == 503 and "west" in mirror.health()[1]
                   and "uthentication" in mirror.health()[1], TIMEOUT,
                   lambda: f"{mirror.health()}\n{mirror.logs()[-3000:]}")
        assert mirror.alive()
        assert "cluster west is unreachable" in mirror.logs()
        assert "uthentication failed" in mirror.logs()
        values = produce(west.librdkafka("admin"), unique("still-serving"), 2)
        assert len(values) == 2
        assert produce(east.librdkafka("admin"), "refused", 1)
    finally:
        mirror.stop()


def test_no_acls_are_synced_when_sync_topic_acls_is_disabled(
        clusters: dict[str, SecureCluster], tmp_path: Path) -> None:
    east, west = clusters["east"], clusters["west"]
    create_topics(east.plain, "audit")
    add_acls(east, ("LITERAL", "audit", "User:reader", "*", "READ", "ALLOW"))
    values = produce(east.librdkafka("admin"), "audit", 3)
    mirror = secure_mirror(tmp_path, clusters, "audit",
                           **{"sync.topic.acls.enabled": "false"})
    try:
        assert read(west.librdkafka("admin"), "east.audit", 3) == values
        assert not [acl for acl in west.topic_acls() if acl[1] == "east.audit"]
    finally:
        mirror.stop()


def test_without_authorizers_data_is_copied_and_acl_sync_is_off_logged_once(
        tmp_path: Path) -> None:
    brokers = {alias: BrokerProcess(tmp_path / alias / "data", tmp_path / f"{alias}.log",
                                    {"group.initial.rebalance.delay.ms": "0"})
               for alias in ("east", "west")}
    for broker in brokers.values():
        broker.start()
    mirror = None
    try:
        create_topics(brokers["east"].bootstrap, "plain")
        values = produce({"bootstrap.servers": brokers["east"].bootstrap}, "plain", 3)
        config = properties({alias: b.bootstrap for alias, b in brokers.items()}, **{
            "east->west.enabled": "true", "topics": "plain",
            "sync.topic.acls.interval.seconds": "1"})
        mirror = MirrorProcess(tmp_path / "mirror", config, ["--log-level", "DEBUG"]).start()
        assert read({"bootstrap.servers": brokers["west"].bootstrap}, "east.plain", 3) == values
        wait_until(lambda: mirror.logs().count("still no ACL authorizer on east") >= 2,
                   TIMEOUT, lambda: mirror.logs()[-3000:])
        assert mirror.logs().count("no ACL authorizer is configured on the source cluster "
                                   "east, so no topic ACL syncing will take place") == 1
    finally:
        if mirror is not None:
            mirror.stop()
        for broker in brokers.values():
            broker.stop()


@pytest.mark.parametrize(("lines", "message"), [
    (["west.security.protocol = SASL_TLS"], "west: security.protocol SASL_TLS is not one of"),
    (["west.security.protocol = SASL_SSL", "west.sasl.mechanism = SCRAM-SHA-512"],
     "west: sasl.jaas.config is required for SASL mechanism SCRAM-SHA-512"),
    (["east.security.protocol = SASL_PLAINTEXT", "east.sasl.mechanism = PLAIN",
      "east.consumer.sasl.jaas.config = nonsense"], "east.consumer: sasl.jaas.config"),
])
def test_bad_security_configs_are_one_line_errors(tmp_path: Path, lines: list[str],
                                                  message: str) -> None:
    assert_refused_in_one_line(tmp_path, lines, message)
