"""Group configs (ConfigResource type GROUP, KIP-848/KIP-932) on a real `odradek dev`, driven by
confluent-kafka's AdminClient: set with IncrementalAlterConfigs on a group that has no members,
described with their sources, a bad value refused with Kafka's message, validate_only changing
nothing, APPEND refused, deleted back to the broker's default, and kept across a restart (the
ConfigRecords are in the metadata log); the consumer group coordinator gives a group's members
its own consumer.heartbeat.interval.ms."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from odradek.net.kafka_client import KafkaCluster
from odradek.protocol.codec import build_request
from tests.integration.broker_process import BrokerProcess
from tests.waiting import wait_until

TIMEOUT = 30
GROUP = "share-configs"
"""A group that never has a member: Kafka keeps configs for such groups too."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root: Path = tmp_path_factory.mktemp("group-configs")
    broker = BrokerProcess(root / "data", root / "broker.log",
                           {"group.share.record.lock.duration.ms": "20000"})
    broker.start()
    yield broker
    if broker.alive():
        broker.stop()


def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def alter(broker: BrokerProcess, *ops: tuple[str, str | None, AlterConfigOpType],
          validate_only: bool = False, group: str = GROUP) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
    client = admin(broker)
    futures = client.incremental_alter_configs([resource], validate_only=validate_only,
                                               request_timeout=TIMEOUT)
    futures[resource].result(TIMEOUT)


def refusal(broker: BrokerProcess, *ops: tuple[str, str | None, AlterConfigOpType]
            ) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        alter(broker, *ops)
    error: KafkaError = raised.value.args[0]
    return error


def described(broker: BrokerProcess, group: str = GROUP) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.GROUP, group)
    client = admin(broker)
    entries: dict[str, ConfigEntry] = client.describe_configs(
        [resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT)
    return entries


def values(broker: BrokerProcess) -> dict[str, tuple[str | None, str]]:
    return {name: (entry.value, ConfigSource(entry.source).name)
            for name, entry in described(broker).items()}


SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


def test_a_group_without_configs_is_described_with_the_brokers_defaults(
    broker: BrokerProcess
) -> None:
    found = values(broker)
    assert len(found) == 17
    assert found["share.auto.offset.reset"] == ("latest", "DEFAULT_CONFIG")
    assert found["share.isolation.level"] == ("read_uncommitted", "DEFAULT_CONFIG")
    assert found["share.delivery.count.limit"] == ("5", "DEFAULT_CONFIG")
    # from the broker's static group.share.record.lock.duration.ms
    assert found["share.record.lock.duration.ms"] == ("20000", "STATIC_BROKER_CONFIG")
    entry = described(broker)["share.record.lock.duration.ms"]
    assert (entry.is_read_only, entry.is_sensitive) == (False, False)


def test_set_describe_delete_and_refusals(broker: BrokerProcess) -> None:
    alter(broker, ("share.auto.offset.reset", "earliest", SET),
          ("share.record.lock.duration.ms", "15000", SET),
          ("share.isolation.level", "read_committed", SET))
    found = values(broker)
    assert found["share.auto.offset.reset"] == ("earliest", "GROUP_CONFIG")
    assert found["share.record.lock.duration.ms"] == ("15000", "GROUP_CONFIG")
    assert found["share.isolation.level"] == ("read_committed", "GROUP_CONFIG")
    assert found["share.delivery.count.limit"] == ("5", "DEFAULT_CONFIG")

    # below group.share.min.record.lock.duration.ms (15000): Kafka's controller's words
    error = refusal(broker, ("share.record.lock.duration.ms", "5000", SET))
    assert error.code() == KafkaError.INVALID_CONFIG
    assert error.str() == ("share.record.lock.duration.ms must be greater than or equal to "
                           "group.share.min.record.lock.duration.ms")
    error = refusal(broker, ("share.auto.offset.reset", "none", SET))
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "The value must be either 'earliest', 'latest' or of the format" in error.str()
    error = refusal(broker, ("no.such.config", "1", SET))
    assert error.str() == "Unknown group config name: no.such.config"
    error = refusal(broker, ("share.auto.offset.reset", "latest", AlterConfigOpType.APPEND))
    assert error.code() == KafkaError.INVALID_CONFIG
    assert error.str() == ("Can't APPEND to key share.auto.offset.reset because its type is "
                           "not LIST.")

    alter(broker, ("share.delivery.count.limit", "3", SET), validate_only=True)
    assert values(broker)["share.delivery.count.limit"] == ("5", "DEFAULT_CONFIG")

    alter(broker, ("share.record.lock.duration.ms", None, DELETE))
    found = values(broker)
    assert found["share.record.lock.duration.ms"] == ("20000", "STATIC_BROKER_CONFIG")
    assert found["share.auto.offset.reset"] == ("earliest", "GROUP_CONFIG")


def test_group_configs_survive_a_restart(broker: BrokerProcess) -> None:
    alter(broker, ("share.auto.offset.reset", "by_duration:PT1H", SET),
          ("consumer.session.timeout.ms", "50000", SET), group="kept")
    before = {n: (e.value, e.source) for n, e in described(broker, "kept").items()}
    assert before["consumer.session.timeout.ms"] == ("50000", ConfigSource.GROUP_CONFIG.value)
    broker.restart(hard=True)
    after = {n: (e.value, e.source) for n, e in described(broker, "kept").items()}
    assert after == before


def request(broker: BrokerProcess, key: int, version: int, body: dict[str, Any]) -> Any:
    host, port = broker.bootstrap.rsplit(":", 1)

    async def send() -> Any:
        async with KafkaCluster([(host, int(port))], "group-configs-test", TIMEOUT) as cluster:
            return await cluster.send(build_request(key, version, body))

    return asyncio.run(send())


def consumer_heartbeat(broker: BrokerProcess, group: str) -> Any:
    """A new member's first ConsumerGroupHeartbeat (KIP-848) to the one broker."""
    return request(broker, 68, 0, {
        "group_id": group, "member_id": "", "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout": timedelta(seconds=30),
        "subscribed_topic_names": ["t"], "server_assignor": None, "topic_partitions": []})


def test_the_coordinator_gives_members_the_groups_heartbeat_interval(
    broker: BrokerProcess
) -> None:
    alter(broker, ("consumer.heartbeat.interval.ms", "7000", SET), group="paced")
    answers: list[Any] = []
    wait_until(lambda: answers.append(consumer_heartbeat(broker, "paced"))
               or answers[-1].error_code == 0, TIMEOUT,
               lambda: f"a heartbeat answered without error: {answers[-1:]}")
    assert answers[-1].heartbeat_interval == timedelta(milliseconds=7000)
    assert consumer_heartbeat(broker, "unpaced").heartbeat_interval == timedelta(
        milliseconds=5000)


def test_list_config_resources_names_the_groups_with_configs(broker: BrokerProcess) -> None:
    """ListConfigResources (KIP-1142): v1 lists the groups that have configs (no group here
    has a member); v0, ListClientMetricsResources, lists client metrics subscriptions only
    (none); a type the version does not serve is UNSUPPORTED_VERSION."""
    alter(broker, ("share.delivery.count.limit", "4", SET), group="listed")
    alter(broker, ("share.delivery.count.limit", "3", SET), group="listed-too")
    listed = request(broker, 74, 1, {"resource_types": [32]})
    assert listed.error_code == 0
    names = {(r.resource_name, r.resource_type) for r in listed.config_resources}
    assert {("listed", 32), ("listed-too", 32)} <= names
    assert {kind for _, kind in names} == {32}
    everything = request(broker, 74, 1, {"resource_types": []})
    assert {(str(1), 4), ("listed", 32)} <= {
        (r.resource_name, r.resource_type) for r in everything.config_resources}
    assert request(broker, 74, 0, {}).config_resources == ()
    assert request(broker, 74, 0, {}).error_code == 0
    assert request(broker, 74, 1, {"resource_types": [99]}).error_code == 35


def test_legacy_alter_configs_replaces_a_groups_whole_set(broker: BrokerProcess) -> None:
    """AlterConfigs (v0-2): the request's configs become the group's only ones."""
    alter(broker, ("share.delivery.count.limit", "4", SET), group="legacy")
    resource = ConfigResource(ResourceType.GROUP, "legacy",
                              set_config={"share.isolation.level": "read_committed"})
    client = admin(broker)
    client.alter_configs([resource], request_timeout=TIMEOUT)[resource].result(TIMEOUT)
    found = {name: (entry.value, ConfigSource(entry.source).name)
             for name, entry in described(broker, "legacy").items()}
    assert found["share.isolation.level"] == ("read_committed", "GROUP_CONFIG")
    assert found["share.delivery.count.limit"] == ("5", "DEFAULT_CONFIG")
