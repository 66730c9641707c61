"""The JVM toolchain itself: Kafka's Admin client, at the pinned version, sees an Odradek
broker and a real Apache Kafka broker started from the jars."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.integration.apache_kafka import ApacheKafka
from tests.integration.broker_process import BrokerProcess
from tests.jvm_toolchain import JVM, run_java

KAFKA_VERSION = re.search(r"<kafka.version>(.+)</kafka.version>",
                          (JVM / "pom.xml").read_text()).group(1)  # type: ignore[union-attr]


def describe(bootstrap: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(
        run_java("odradek.jvm.DescribeCluster", bootstrap).stdout)
    return result


def test_java_admin_describes_odradek(broker: BrokerProcess) -> None:
    seen = describe(broker.bootstrap)
    assert seen["client_version"] == KAFKA_VERSION
    meta = (Path(broker.data_dir) / "meta.properties").read_text()
    assert f"cluster.id={seen['cluster_id']}" in meta
    assert seen["brokers"] == [1]
    assert seen["controller"] == 1  # KRaft: a broker stands in for the controller (KIP-590)


def test_apache_kafka_starts_from_the_jars(apache_kafka: ApacheKafka) -> None:
    seen = describe(apache_kafka.bootstrap)
    assert seen["client_version"] == KAFKA_VERSION
    assert seen["brokers"] == [1]
    assert seen["controller"] == 1
    meta = (apache_kafka.data_dir / "logs" / "meta.properties").read_text()
    assert f"cluster.id={seen['cluster_id']}" in meta
