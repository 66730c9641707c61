"""The two brokers under comparison, configured alike: Apache Kafka 4.3.1 (one combined KRaft
node from the jars) and `odradek dev`, each with a PLAINTEXT listener (User:ANONYMOUS, a
super user), a SASL_PLAINTEXT listener with PLAIN users, and Kafka's StandardAuthorizer."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from tests.integration.apache_kafka import ApacheKafka
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.jvm.conformance.runner import Target

JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_alice="alice-secret";')
COMMON = {
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    # set statically in Kafka's own server.properties (scripts/apache_kafka.sh), so that
    # topic configs take them from a STATIC_BROKER_CONFIG synonym on both
    "log.retention.hours": "168",
    "log.segment.bytes": "1073741824",
}


@contextmanager
def running_pair(root: Path) -> Iterator[tuple[Target, Target]]:
    """Both brokers started side by side, serving until the context ends."""
    kafka_ports, odradek_ports = (free_port(), free_port()), (free_port(), free_port())
    kafka = ApacheKafka(root / "kafka", root / "kafka.log", port=kafka_ports[0])
    kafka.overrides = {
        **COMMON,
        "listeners": f"PLAINTEXT://127.0.0.1:{kafka_ports[0]},SASL_PLAINTEXT://127.0.0.1:"
                     f"{kafka_ports[1]},CONTROLLER://127.0.0.1:{kafka.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{kafka_ports[0]},"
                                f"SASL_PLAINTEXT://127.0.0.1:{kafka_ports[1]}",
    }
    odradek = BrokerProcess(root / "odradek", root / "odradek.log", {
        **COMMON, "inter.broker.listener.name": "PLAINTEXT",
        "listeners": f"PLAINTEXT://127.0.0.1:{odradek_ports[0]},"
                     f"SASL_PLAINTEXT://127.0.0.1:{odradek_ports[1]}"}, port=odradek_ports[0])
    with ThreadPoolExecutor(2) as pool:
        started = [pool.submit(kafka.start), pool.submit(odradek.start)]
        errors = [future.exception() for future in started]
    try:
        for error in errors:
            if error is not None:
                raise error
        yield (Target("kafka", kafka.bootstrap, f"127.0.0.1:{kafka_ports[1]}"),
               Target("odradek", odradek.bootstrap, f"127.0.0.1:{odradek_ports[1]}"))
    finally:
        for broker in (kafka, odradek):
            if broker.alive():
                broker.kill()
