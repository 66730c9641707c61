"""`odradek configs` as a subprocess against a real 1-controller, 2-broker cluster: topic
configs set and deleted, one broker's dynamic configs (sent to that broker through another's
bootstrap) and the cluster-wide default, each checked with confluent-kafka's describe_configs;
and its failures, each one line on stderr."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from tests.integration.broker_process import ODRADEK
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import TIMEOUT, Cluster, running_cluster
from tests.integration.tool_runs import one_line_failure

CLEANER_THREADS = "log.cleaner.threads"  # a broker config Kafka lets each broker override


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tools-configs"), 1, 2, {}) as cluster:
        yield cluster


@pytest.fixture
def bootstrap(cluster: Cluster) -> str:
    """Broker 1 only: requests about broker 2 must be forwarded to it by the tool."""
    return cluster.broker_bootstrap("broker-1")


def configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, "configs", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=60)


def ok(bootstrap: str, *args: str) -> str:
    result = configs(bootstrap, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout




def described(bootstrap: str, kind: ResourceType, name: str) -> dict[str, tuple[str, str]]:
    """Each config's value and source, as confluent-kafka describes them."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(kind, name)
    entries = client.describe_configs([resource])[resource].result(TIMEOUT)
    return {name: (entry.value, ConfigSource(entry.source).name)
            for name, entry in entries.items()}


def test_topic_configs_set_described_and_deleted(bootstrap: str, tmp_path: Path) -> None:
    topic = create_topic(bootstrap, unique("cfg"))
    assert ok(bootstrap, "alter", "--topic", topic, "--add-config",
              "retention.ms=1000,cleanup.policy=[compact,delete]") == (
        f"Completed updating config for topic {topic}.\n")
    current = described(bootstrap, ResourceType.TOPIC, topic)
    assert current["retention.ms"] == ("1000", "DYNAMIC_TOPIC_CONFIG")
    assert current["cleanup.policy"] == ("compact,delete", "DYNAMIC_TOPIC_CONFIG")

    lines = ok(bootstrap, "describe", "--entity-type", "topics", "--entity-name",
               topic).splitlines()
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    assert lines[1:] == [
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        # As Kafka: log.retention.ms has no default of its own (log.retention.hours has).
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}"]
    everything = ok(bootstrap, "describe", "--topic", topic, "--all").splitlines()
    assert everything[0] == f"All configs for topic {topic} are:"
    assert sorted(line.split("=", 1)[0].strip() for line in everything[1:]) == sorted(current)

    ok(bootstrap, "alter", "--topic", topic, "--delete-config", "retention.ms")
    source = described(bootstrap, ResourceType.TOPIC, topic)
    assert source["retention.ms"][1] == "DEFAULT_CONFIG"
    assert source["cleanup.policy"] == ("compact,delete", "DYNAMIC_TOPIC_CONFIG")

    properties = tmp_path / "topic.properties"
    properties.write_text("segment.ms=3600000\nmax.message.bytes=65536\n")
    ok(bootstrap, "alter", "--topic", topic, "--add-config-file", str(properties),
       "--delete-config", "cleanup.policy")
    after = described(bootstrap, ResourceType.TOPIC, topic)
    assert after["segment.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert after["max.message.bytes"] == ("65536", "DYNAMIC_TOPIC_CONFIG")
    assert after["cleanup.policy"][1] == "DEFAULT_CONFIG"

    (entity,) = json.loads(ok(bootstrap, "describe", "--topic", topic, "--json"))
    assert (entity["entity_type"], entity["entity_name"]) == ("topics", topic)
    assert {c["name"]: (c["value"], c["source"]) for c in entity["configs"]} == {
        "max.message.bytes": ("65536", "DYNAMIC_TOPIC_CONFIG"),
        "segment.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG")}
    every_topic = ok(bootstrap, "describe", "--entity-type", "topics").splitlines()
    assert f"Dynamic configs for topic {topic} are:" in every_topic


def test_one_brokers_configs_and_the_cluster_default(bootstrap: str) -> None:
    default = described(bootstrap, ResourceType.BROKER, "1")[CLEANER_THREADS][0]
    try:
        assert ok(bootstrap, "alter", "--broker-defaults", "--add-config",
                  f"{CLEANER_THREADS}=2") == (
            "Completed updating default config for brokers in the cluster.\n")
        assert ok(bootstrap, "alter", "--entity-type", "brokers", "--entity-name", "2",
                  "--add-config", f"{CLEANER_THREADS}=3") == (
            "Completed updating config for broker 2.\n")
        assert described(bootstrap, ResourceType.BROKER, "1")[CLEANER_THREADS] == (
            "2", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        assert described(bootstrap, ResourceType.BROKER, "2")[CLEANER_THREADS] == (
            "3", "DYNAMIC_BROKER_CONFIG")

        assert ok(bootstrap, "describe", "--broker", "2").splitlines() == [
            "Dynamic configs for broker 2 are:",
            f"  {CLEANER_THREADS}=3 sensitive=false synonyms={{"
            f"DYNAMIC_BROKER_CONFIG:{CLEANER_THREADS}=3, "
            f"DYNAMIC_DEFAULT_BROKER_CONFIG:{CLEANER_THREADS}=2, "
            f"DEFAULT_CONFIG:{CLEANER_THREADS}={default}}}"]
        assert ok(bootstrap, "describe", "--entity-type", "brokers",
                  "--entity-default").splitlines() == [
            "Default configs for brokers in the cluster are:",
            f"  {CLEANER_THREADS}=2 sensitive=false synonyms={{"
            f"DYNAMIC_DEFAULT_BROKER_CONFIG:{CLEANER_THREADS}=2}}"]
        headers = [line for line in ok(bootstrap, "describe", "--entity-type", "brokers")
                   .splitlines() if not line.startswith(" ")]
        assert headers == ["Dynamic configs for broker 1 are:",
                           "Dynamic configs for broker 2 are:",
                           "Default configs for brokers in the cluster are:"]
        every = ok(bootstrap, "describe", "--broker", "1", "--all", "--json")
        (entity,) = json.loads(every)
        threads = next(c for c in entity["configs"] if c["name"] == CLEANER_THREADS)
        assert (threads["value"], threads["source"]) == ("2", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        assert len(entity["configs"]) == len(described(bootstrap, ResourceType.BROKER, "1"))
    finally:
        ok(bootstrap, "alter", "--broker", "2", "--delete-config", CLEANER_THREADS)
        ok(bootstrap, "alter", "--broker-defaults", "--delete-config", CLEANER_THREADS)
    for broker in ("1", "2"):
        assert described(bootstrap, ResourceType.BROKER, broker)[CLEANER_THREADS] == (
            default, "DEFAULT_CONFIG")


def test_group_configs_set_described_and_deleted(cluster: Cluster, bootstrap: str) -> None:
    """A group with no members: set through broker 1, described on broker 2 (every broker
    holds the group configs of the metadata log), refused with the controller's message."""
    group = f"cfg-group-{uuid.uuid4().hex[:8]}"
    assert ok(bootstrap, "alter", "--entity-type", "groups", "--entity-name", group,
              "--add-config", "share.auto.offset.reset=earliest,"
              "consumer.session.timeout.ms=50000") == (
        f"Completed updating config for group {group}.\n")
    other = cluster.broker_bootstrap("broker-2")
    assert described(other, ResourceType.GROUP, group)["share.auto.offset.reset"] == (
        "earliest", "GROUP_CONFIG")
    assert ok(bootstrap, "describe", "--group", group).splitlines() == [
        f"Dynamic configs for group {group} are:",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:"
        "group.consumer.session.timeout.ms=45000}",
        "  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}"]
    # every group: those with configs but no members too (ListConfigResources)
    assert f"Dynamic configs for group {group} are:" in ok(
        bootstrap, "describe", "--entity-type", "groups").splitlines()
    line = one_line_failure(configs(bootstrap, "alter", "--group", group, "--add-config",
                                    "consumer.session.timeout.ms=1000"), "configs")
    assert line == (f"odradek configs: group {group}: INVALID_CONFIG: consumer.session."
                    "timeout.ms must be greater than or equal to group.consumer.min.session."
                    "timeout.ms")
    ok(bootstrap, "alter", "--group", group, "--delete-config", "consumer.session.timeout.ms")
    assert described(other, ResourceType.GROUP, group)["consumer.session.timeout.ms"] == (
        "45000", "DEFAULT_CONFIG")


@pytest.mark.parametrize(("args", "expected"), [
    (["describe", "--topic", "no-such-topic"], "UNKNOWN_TOPIC_OR_PARTITION"),
    (["alter", "--topic", "no-such-topic", "--add-config", "retention.ms=1"],
     "UNKNOWN_TOPIC_OR_PARTITION"),
    (["alter", "--topic", "{topic}", "--add-config", "no.such.config=1"],
     "INVALID_CONFIG: Unknown topic config name: no.such.config"),
    (["alter", "--topic", "{topic}", "--add-config", "retention.ms=soon"], "INVALID_CONFIG"),
    (["alter", "--broker", "1", "--add-config", "node.id=2"],
     "INVALID_REQUEST: Cannot update these configs dynamically: Set(node.id)"),
    (["alter", "--topic", "{topic}", "--add-config", "retention.ms"], "expected key=value"),
    (["alter", "--topic", "{topic}", "--delete-config", "retention.ms"],
     "Invalid config(s): retention.ms"),
    (["alter", "--topic", "{topic}", "--add-config-file", "/no/such/file"], "cannot read"),
    (["alter", "--topic", "{topic}"], "At least one of --add-config"),
    (["describe", "--broker", "7"], "broker 7 is not in the cluster's metadata"),
    (["describe", "--broker", "one"], "must be a valid integer broker id"),
    (["describe", "--entity-type", "ips"], "ips is not supported yet"),
    (["alter", "--entity-type", "clients", "--entity-name", "c", "--add-config",
      "producer_byte_rate=1k"], "Cannot parse quota configuration value for producer_byte_rate"),
])
def test_failures_are_one_line(bootstrap: str, args: list[str], expected: str) -> None:
    topic = create_topic(bootstrap, unique("cfg"))
    line = one_line_failure(configs(bootstrap, *(a.replace("{topic}", topic) for a in args)),
                            "configs")
    assert expected in line
    assert described(bootstrap, ResourceType.TOPIC, topic)["retention.ms"][1] == "DEFAULT_CONFIG"


def test_unreachable_bootstrap_server_is_one_line() -> None:
    line = one_line_failure(
        configs("127.0.0.1:1", "describe", "--topic", "t", "--timeout", "3"), "configs")
    assert "127.0.0.1:1" in line
