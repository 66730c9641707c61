"""Kafka's config catalogue, judged by Kafka itself: the committed table equals what the pinned
Kafka's classes say, and DescribeConfigs, IncrementalAlterConfigs (Kafka's Admin client) and
AlterConfigs (kafka-python) answer the same on Apache Kafka and on `odradek dev`, entry by
entry, except for the differences tests/config_differences.py lists with their reasons.

Both brokers run with the same static configs (Kafka's own single-node server.properties); one
Java program per broker runs every check and reports them as JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import AlterConfigsRequest

from tests.config_differences import (
    APPLIED_AT_START,
    CLUSTER_DEFAULTS,
    ODRADEK_ONLY,
    SMALL_SEGMENTS,
    VALUE_DIFFERENCES,
)
from tests.integration.apache_kafka import ApacheKafka
from tests.integration.broker_process import BrokerProcess, free_port
from tests.jvm_toolchain import run_java
from tests.kafka_catalogue import TABLE, dump, render

NODE_ID = 1
KAFKA_SERVER_PROPERTIES = {
    "num.network.threads": "3", "num.io.threads": "8", "socket.send.buffer.bytes": "102400",
    "socket.receive.buffer.bytes": "102400", "socket.request.max.bytes": "104857600",
    "num.partitions": "1", "num.recovery.threads.per.data.dir": "1",
    "offsets.topic.replication.factor": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1", "log.retention.hours": "168",
    "log.segment.bytes": "1073741824", "log.retention.check.interval.ms": "300000",
    "process.roles": "broker,controller", "node.id": str(NODE_ID),
    "inter.broker.listener.name": "PLAINTEXT", "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                      "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
}
"""scripts/apache_kafka.sh's server.properties (Kafka's own), but for addresses and paths: given
to `odradek dev` too, which now takes every Kafka config."""

ENGINE = "org.apache.kafka.common.security.ssl.DefaultSslEngineFactory"
"""A class Kafka can load: Kafka refuses a CLASS config naming a class it cannot load, which
Odradek, without a JVM, cannot check (CLASS_NAMES in tests/config_differences.py)."""

ALTERS = [
    # (label, resource, operations); each is sent with validateOnly, so nothing changes.
    ("kerberos relogin per broker", "broker", "SET sasl.kerberos.min.time.before.relogin=58000"),
    ("kerberos relogin at the default", "default",
     "SET sasl.kerberos.min.time.before.relogin=58000"),
    ("a cluster-wide config Odradek ignores", "default", "SET background.threads=12"),
    ("a per-broker config Odradek ignores", "broker", f"SET ssl.engine.factory.class={ENGINE}"),
    ("a listener override per broker", "broker",
     f"SET listener.name.plaintext.ssl.engine.factory.class={ENGINE}"),
    ("a listener override at the default", "default",
     f"SET listener.name.plaintext.ssl.engine.factory.class={ENGINE}"),
    ("a cluster-level listener override", "default",
     "SET listener.name.plaintext.num.network.threads=4"),
    ("an unknown name per broker", "broker", "SET some.plugin.config=x"),
    ("an unknown name at the default", "default", "SET some.plugin.config=x"),
    ("a throttle rate", "broker", "SET leader.replication.throttled.rate=1000"),
    ("a negative throttle rate", "broker", "SET leader.replication.throttled.rate=-5"),
    ("a read-only config", "broker", "SET num.partitions=3"),
    ("the node id", "default", "SET node.id=7"),
    ("a read-only config Odradek ignores", "broker", "SET queued.max.requests=100"),
    ("a cluster-wide config Odradek ignores, per broker", "broker", "SET num.replica.fetchers=2"),
    ("a value that is not a number", "broker", "SET background.threads=many"),
    ("a value out of range", "default", "SET background.threads=0"),
    ("an own config out of range", "default", "SET message.max.bytes=-1"),
    ("an own dynamic config", "default", "SET message.max.bytes=2000000"),
    ("APPEND to an int", "broker", "APPEND background.threads=2"),
    ("DELETE an unset config", "default", "DELETE background.threads"),
    ("a topic config Odradek ignores", "topic:catalogue-plain", "SET compression.gzip.level=5"),
    ("a compression level out of range", "topic:catalogue-plain",
     "SET compression.zstd.level=23"),
    ("remote storage without tiered storage", "topic:catalogue-plain",
     "SET remote.storage.enable=true"),
    ("an unknown topic config", "topic:catalogue-plain", "SET no.such.config=1"),
    ("a topic timestamp type", "topic:catalogue-plain", "SET message.timestamp.type=Later"),
    ("a local retention below -2", "topic:catalogue-plain", "SET local.retention.ms=-3"),
    ("a small segment", "topic:catalogue-plain", "SET segment.bytes=1000"),
]
ALTER_DIFFERENCES = {
    "a small segment": SMALL_SEGMENTS,
}
"""Alter checks whose outcome differs, with the reason."""

LEGACY_ALTERS = [
    # (label, resource type, resource name, configs): AlterConfigs v1 with validate_only.
    ("kerberos relogin per broker", 4, str(NODE_ID),
     [("sasl.kerberos.min.time.before.relogin", "58000")]),
    # Legacy AlterConfigs replaces the cluster default's whole set, and Kafka refuses to drop
    # its min.insync.replicas there (tests/config_differences.py CLUSTER_DEFAULTS).
    ("kerberos relogin at the default", 4, "", [("sasl.kerberos.min.time.before.relogin", "1"),
                                               ("min.insync.replicas", "1")]),
    ("a cluster-wide config Odradek ignores", 4, "", [("background.threads", "12"),
                                                     ("min.insync.replicas", "1")]),
    ("an unknown name", 4, str(NODE_ID), [("some.plugin.config", "x")]),
    ("a read-only config", 4, str(NODE_ID), [("num.partitions", "3")]),
    ("a value out of range", 4, "", [("background.threads", "0"),
                                     ("min.insync.replicas", "1")]),
    ("a topic config Odradek ignores", 2, "catalogue-plain", [("compression.gzip.level", "5")]),
    ("an unknown topic config", 2, "catalogue-plain", [("no.such.config", "1")]),
]

GROUP = "group:catalogue-group"
"""A group that never has a member: Kafka describes and keeps configs for such groups."""
GROUP_ALTERS = [
    # (label, resource, operations): with validateOnly; each outcome with its message.
    ("group configs that are valid", GROUP,
     "SET share.auto.offset.reset=by_duration:PT1H;SET share.isolation.level=read_committed"),
    ("a group lock duration below the broker's minimum", GROUP,
     "SET share.record.lock.duration.ms=5000"),
    ("a group lock duration below GroupConfig's", GROUP, "SET share.record.lock.duration.ms=500"),
    ("a group delivery limit above the broker's maximum", GROUP,
     "SET share.delivery.count.limit=11"),
    ("a group config that is not a number", GROUP, "SET share.delivery.count.limit=many"),
    ("a group config that is not a boolean", GROUP, "SET share.renew.acknowledge.enable=yes"),
    ("a share reset of none", GROUP, "SET share.auto.offset.reset=none"),
    ("a share isolation level in capitals", GROUP, "SET share.isolation.level=READ_COMMITTED"),
    ("an unknown group config", GROUP, "SET no.such.config=1"),
    ("APPEND to a group config", GROUP, "APPEND share.isolation.level=read_committed"),
    ("DELETE an unset group config", GROUP, "DELETE share.isolation.level"),
    ("a consumer session timeout above the broker's maximum", GROUP,
     "SET consumer.session.timeout.ms=60001"),
    ("a streams standby count above the broker's maximum", GROUP,
     "SET streams.num.standby.replicas=3"),
]

APPLIED = [
    # Changes applied for real, then described on both brokers. A Kafka broker applies them
    # one after the other, so waiting for the last of each resource sees the earlier ones.
    "alter|set at the default|default|false|SET background.threads=12;SET other.plugin=y",
    "alter|set per broker|broker|false|SET sasl.kerberos.min.time.before.relogin=58000;"
    "SET some.plugin.config=x",
    "alter|set on a topic|topic:catalogue-plain|false|SET compression.gzip.level=5",
    "describe-when|default after|default|other.plugin|DYNAMIC_DEFAULT_BROKER_CONFIG",
    "describe-when|broker after|broker|some.plugin.config|DYNAMIC_BROKER_CONFIG",
    "describe-when|topic after|topic:catalogue-plain|compression.gzip.level|DYNAMIC_TOPIC_CONFIG",
    f"alter|set on a group|{GROUP}|false|SET share.auto.offset.reset=earliest;"
    "SET share.record.lock.duration.ms=45000",
    f"describe-when|group after|{GROUP}|share.auto.offset.reset|DYNAMIC_GROUP_CONFIG",
]


def checks() -> str:
    lines = [
        "create|create plain|catalogue-plain|",
        "create|create with overrides|catalogue-override|retention.ms=3600000,"
        "cleanup.policy=compact,compression.gzip.level=5,local.retention.bytes=-2",
        "create|create with a bad level|catalogue-bad|compression.zstd.level=99",
        "create|create with an unknown config|catalogue-unknown|no.such.config=1",
        "describe|broker|broker",
        "describe|default|default",
        # A Kafka broker learns of a created topic asynchronously: wait for it.
        "describe-when|topic plain|topic:catalogue-plain|retention.ms|DEFAULT_CONFIG",
        "describe-when|topic with overrides|topic:catalogue-override|retention.ms|"
        "DYNAMIC_TOPIC_CONFIG",
    ]
    lines += [f"alter|{label}|{resource}|true|{ops}" for label, resource, ops in ALTERS]
    lines.append(f"describe|group before|{GROUP}")
    lines += [f"alter-message|{label}|{resource}|true|{ops}"
              for label, resource, ops in GROUP_ALTERS]
    return "\n".join(lines + APPLIED) + "\n"


def legacy_alters(bootstrap: str) -> dict[str, int]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)

    def error_code(kind: int, name: str, configs: list[tuple[str, str]]) -> int:
        request = AlterConfigsRequest(resources=[(kind, name, configs)], validate_only=True)

        async def call() -> Any:
            return await client._manager.send(request, node_id=NODE_ID)

        code: int = client._manager.run(call).responses[0].error_code
        return code

    try:
        return {label: error_code(kind, name, configs)
                for label, kind, name, configs in LEGACY_ALTERS}
    finally:
        client.close()


def run_checks(bootstrap: str) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(run_java(
        "odradek.jvm.catalogue.ConfigChecks", bootstrap, input=checks(), timeout=300).stdout)
    results["legacy"] = legacy_alters(bootstrap)
    return results


@pytest.fixture(scope="module")
def kafka_results(apache_kafka: ApacheKafka) -> dict[str, Any]:
    return run_checks(apache_kafka.bootstrap)


@pytest.fixture(scope="module")
def odradek(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("odradek")
    port = free_port()
    broker = BrokerProcess(root / "data", root / "broker.log", port=port, overrides={
        **KAFKA_SERVER_PROPERTIES, "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(root / "data" / "logs")})
    broker.start()
    yield broker
    if broker.alive():
        broker.stop()


@pytest.fixture(scope="module")
def odradek_results(odradek: BrokerProcess) -> dict[str, Any]:
    return run_checks(odradek.bootstrap)


def test_the_committed_catalogue_is_the_pinned_kafkas() -> None:
    """After a Kafka upgrade: python -m tests.kafka_catalogue, then review the diff."""
    assert TABLE.read_text() == render(dump())


def normalised(value: str | None) -> str | None:
    return None if value is None else re.sub(r":\d+", ":<port>", value)


def fields(entry: dict[str, Any], compare_values: bool) -> dict[str, Any]:
    kept = {k: entry[k] for k in ("read_only", "sensitive", "type")}
    if compare_values:
        kept.update(value=normalised(entry["value"]), source=entry["source"],
                    synonyms=[[n, normalised(v), s] for n, v, s in entry["synonyms"]])
    return kept


def differences(kafka: dict[str, Any], odradek: dict[str, Any],
                allowed: dict[str, str]) -> dict[str, Any]:
    """Entry by entry: the fields that differ, except for the allowed names' values."""
    out: dict[str, Any] = {}
    for name in sorted(set(kafka) | set(odradek)):
        if name not in kafka or name not in odradek:
            if name not in ODRADEK_ONLY:
                out[name] = "only on Kafka" if name in kafka else "only on Odradek"
            continue
        if name in APPLIED_AT_START:
            assert odradek[name]["read_only"], name
            odradek = {**odradek, name: {**odradek[name], "read_only": kafka[name]["read_only"]}}
        compare = name not in allowed
        theirs, ours = fields(kafka[name], compare), fields(odradek[name], compare)
        if theirs != ours:
            out[name] = {"kafka": theirs, "odradek": ours}
    return out


def entries(results: dict[str, Any], label: str) -> dict[str, Any]:
    assert results[label]["error"] == "NONE", results[label]
    found: dict[str, Any] = results[label]["entries"]
    return found


def kafka_entries(results: dict[str, Any], label: str) -> dict[str, Any]:
    """Kafka's entries without the cluster-wide defaults only Kafka writes (CLUSTER_DEFAULTS):
    the entries of the cluster-default resource, and the layer in other entries' synonyms."""
    found = {}
    for name, entry in entries(results, label).items():
        synonyms = [s for s in entry["synonyms"]
                    if not (s[0] in CLUSTER_DEFAULTS and s[2] == "DYNAMIC_DEFAULT_BROKER_CONFIG")]
        if synonyms != entry["synonyms"] and label not in ("default", "default after"):
            entry = {**entry, "synonyms": synonyms,
                     "source": synonyms[0][2] if synonyms else "DEFAULT_CONFIG"}
        if synonyms or entry["source"] != "DYNAMIC_DEFAULT_BROKER_CONFIG":
            found[name] = entry
    return found


def test_broker_configs_are_described_as_kafka_describes_them(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any]
) -> None:
    kafka, odradek = kafka_entries(kafka_results, "broker"), entries(odradek_results, "broker")
    assert len(kafka) > 300
    assert differences(kafka, odradek, VALUE_DIFFERENCES) == {}


def test_the_cluster_default_resource_is_described_as_kafka_describes_it(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any]
) -> None:
    kafka = kafka_entries(kafka_results, "default")
    assert differences(kafka, entries(odradek_results, "default"), {}) == {}


@pytest.mark.parametrize("label", ["topic plain", "topic with overrides"])
def test_topic_configs_are_described_as_kafka_describes_them(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    kafka, odradek = kafka_entries(kafka_results, label), entries(odradek_results, label)
    assert "compression.gzip.level" in kafka and "internal.segment.bytes" not in kafka
    assert differences(kafka, odradek, {}) == {}


@pytest.mark.parametrize("label", ["create plain", "create with overrides",
                                   "create with a bad level", "create with an unknown config"])
def test_create_topics_validates_configs_as_kafka(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    assert odradek_results[label] == kafka_results[label]


@pytest.mark.parametrize("label", [label for label, _, _ in ALTERS])
def test_incremental_alter_configs_answers_as_kafka(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    if label in ALTER_DIFFERENCES:
        assert odradek_results[label] != kafka_results[label]
    else:
        assert odradek_results[label] == kafka_results[label]


@pytest.mark.parametrize("label", [label for label, _, _, _ in LEGACY_ALTERS])
def test_legacy_alter_configs_answers_as_kafka(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    assert odradek_results["legacy"][label] == kafka_results["legacy"][label]


def test_kafkas_answers_are_the_expected_ones(kafka_results: dict[str, Any]) -> None:
    """What the comparisons above rest on: Kafka accepts the configs librdkafka's admin test
    sets and refuses read-only ones, so that agreeing with it means accepting and refusing."""
    alters = {label: kafka_results[label] for label, _, _ in ALTERS}
    assert alters["kerberos relogin per broker"] == "NONE"
    assert alters["kerberos relogin at the default"] == "INVALID_REQUEST"
    assert alters["a read-only config"] == "INVALID_REQUEST"
    assert alters["an unknown topic config"] == "INVALID_CONFIG"
    assert kafka_results["legacy"]["kerberos relogin per broker"] == 0


@pytest.mark.parametrize(("label", "config"), [
    ("broker after", "sasl.kerberos.min.time.before.relogin"),
    ("broker after", "some.plugin.config"),
    ("default after", "background.threads"),
    ("default after", "other.plugin"),
    ("topic after", "compression.gzip.level"),
])
def test_applied_changes_are_described_as_kafka_describes_them(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str, config: str
) -> None:
    kafka, odradek = kafka_entries(kafka_results, label), entries(odradek_results, label)
    assert kafka[config]["source"].startswith("DYNAMIC_")
    assert fields(odradek[config], True) == fields(kafka[config], True)


@pytest.mark.parametrize("label", ["group before", "group after"])
def test_group_configs_are_described_as_kafka_describes_them(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    """Every config of GroupConfig, its value, source and synonyms (the broker's layers of
    its synonym), before and after the group has configs of its own."""
    kafka, odradek = entries(kafka_results, label), entries(odradek_results, label)
    assert len(kafka) == 17
    assert differences(kafka, odradek, {}) == {}


@pytest.mark.parametrize("label", [label for label, _, _ in GROUP_ALTERS])
def test_group_config_changes_are_validated_as_kafka_validates_them(
    kafka_results: dict[str, Any], odradek_results: dict[str, Any], label: str
) -> None:
    """The outcome and the message: Kafka's controller's GroupConfig.validate."""
    assert odradek_results[label] == kafka_results[label]
