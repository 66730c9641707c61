"""ACLs for real principals: a broker with a SASL_PLAINTEXT listener whose PLAIN users are
admin (a super user), alice and bob. admin grants with `odradek acls add` over SASL; alice
and bob, with confluent-kafka, get what their ACLs allow and Kafka's errors for the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.security.authorizer import STANDARD_AUTHORIZER
from tests.integration.broker_process import ODRADEK, BrokerProcess, free_port
from tests.waiting import wait_until

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
TIMEOUT = 30
TOPICS = ("orders", "team.news", "team.payroll")


@dataclass
class Secured:
    broker: BrokerProcess
    sasl_port: int
    root: Path

    def config(self, user: str) -> dict[str, str]:
        return {"bootstrap.servers": f"127.0.0.1:{self.sasl_port}",
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": f"{user}-secret"}

    def acls(self, *args: str) -> None:
        properties = self.root / "admin.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in self.config("admin").items()
                                      if k != "bootstrap.servers"))
        result = subprocess.run(
            [*ODRADEK, "acls", *args, "--bootstrap-server", f"127.0.0.1:{self.sasl_port}",
             "--command-config", str(properties)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("acls-sasl")
    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(root / "data", root / "broker.log", {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS",
        "num.partitions": "1",
    }, port=plain)
    broker.start()
    secured = Secured(broker, sasl, root)
    admin = AdminClient(secured.config("admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
        future.result(TIMEOUT)
    secured.acls("add", "--allow-principal", "User:alice", "--producer", "--topic", "orders")
    secured.acls("add", "--allow-principal", "User:bob", "--consumer", "--topic", "team.",
                 "--resource-pattern-type", "prefixed", "--group", "bob-readers")
    secured.acls("add", "--deny-principal", "User:bob", "--operation", "Read",
                 "--topic", "team.payroll")
    yield secured
    broker.stop()


def produce(config: dict[str, str], topic: str) -> KafkaError | None:
    reports: list[KafkaError | None] = []
    producer = Producer({**config, "retries": 0})
    producer.produce(topic, b"v", on_delivery=lambda error, _: reports.append(error))
    producer.flush(TIMEOUT)
    return reports[0]


def end_offset(secured: Secured, topic: str) -> int:
    consumer = Consumer({**secured.config("admin"), "group.id": "admin-probe"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT)[1])
    finally:
        consumer.close()


def test_a_producer_writes_where_its_acls_allow_and_nowhere_else(secured: Secured) -> None:
    assert produce(secured.config("alice"), "orders") is None
    before = end_offset(secured, "orders")
    refused = produce(secured.config("bob"), "orders")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert end_offset(secured, "orders") == before


def read(secured: Secured, user: str, topic: str) -> list[Any]:
    """What the consumer got: messages, or the error the broker answered."""
    consumer = Consumer({**secured.config(user), "group.id": "bob-readers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[Any] = []

    def polled() -> bool:
        message = consumer.poll(0.5)
        if message is not None:
            got.append(message.error() or message.value())
        return bool(got)

    try:
        wait_until(polled, TIMEOUT, f"{user} reading {topic}")
    finally:
        consumer.close()
    return got


def test_deny_overrides_a_prefixed_allow(secured: Secured) -> None:
    assert produce(secured.config("admin"), "team.news") is None
    assert produce(secured.config("admin"), "team.payroll") is None
    assert read(secured, "bob", "team.news") == [b"v"]
    (error,) = read(secured, "bob", "team.payroll")
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_shows_each_principal_only_what_it_may_describe(secured: Secured) -> None:
    def topics(user: str) -> list[str]:
        listed = AdminClient(secured.config(user)).list_topics(timeout=TIMEOUT).topics
        return sorted(t for t in listed if not t.startswith("__"))

    assert topics("alice") == ["orders"]
    assert topics("bob") == ["team.news", "team.payroll"]  # a DENY of READ leaves DESCRIBE
    assert topics("admin") == sorted(TOPICS)


def test_a_refused_scram_description_of_named_users_reaches_librdkafka_intact(
        secured: Secured) -> None:
    """Each named user is refused with CLUSTER_AUTHORIZATION_FAILED. In a subprocess: a
    top-level error code on this response crashes librdkafka (confluent-kafka 2.16)."""
    code = ("import json, sys\n"
            "from confluent_kafka.admin import AdminClient\n"
            "admin = AdminClient(json.loads(sys.argv[1]))\n"
            "futures = admin.describe_user_scram_credentials(['alice', 'bob'])\n"
            "for user, future in sorted(futures.items()):\n"
            "    print(user, future.exception(30).args[0].name())\n")
    result = subprocess.run([sys.executable, "-c", code, json.dumps(secured.config("bob"))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == ["alice CLUSTER_AUTHORIZATION_FAILED",
                                             "bob CLUSTER_AUTHORIZATION_FAILED"]
