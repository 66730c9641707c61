"""Admin APIs against a real broker, driven by confluent-kafka (librdkafka) and kafka-python:
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster, DeleteRecords,
DescribeLogDirs and DescribeTopicPartitions.

librdkafka 2.x answers `describe_cluster` and `describe_topics` from Metadata requests, so
DescribeCluster (key 60) and DescribeTopicPartitions (key 75) are driven by kafka-python. Where
no high-level client call can express a request (the cluster-default broker resource "",
include_documentation, endpoint types), the request is built with kafka-python's protocol
classes and sent over its own connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)
from kafka import TopicPartition
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import KafkaAdminClient
from kafka.errors import PolicyViolationError, UnknownTopicOrPartitionError
from kafka.protocol.admin import (
    AlterConfigsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

from odradek.cli.main import DEV_DEFAULTS
from odradek.config.kafka_configs import LISTED_BROKER_CONFIGS, LISTED_TOPIC_CONFIGS, TOPIC_CONFIGS
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, numbered, produce_values, unique

NODE_ID = 1
TIMEOUT = 15.0
TOPIC_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
DYNAMIC_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG.value
DYNAMIC_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
STATIC = ConfigSource.STATIC_BROKER_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value
INVALID_REQUEST = 42
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# --- helpers -------------------------------------------------------------------------------


def admin_for(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def admin(broker: BrokerProcess) -> AdminClient:
    return admin_for(broker)


@pytest.fixture
def kadmin(broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


def describe_topic(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    result: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(TIMEOUT)
    return result


def describe_broker(admin: AdminClient) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.BROKER, str(NODE_ID))
    result: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(TIMEOUT)
    return result


def source(entry: ConfigEntry) -> int:
    """librdkafka hands sources back as plain ints, the constructor takes ConfigSource."""
    value = entry.source
    return int(value.value if isinstance(value, ConfigSource) else value)


def synonyms(entry: ConfigEntry) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, source(s)) for s in entry.synonyms.values()]


def incremental(admin: AdminClient, topic: str, *ops: tuple[str, str | None, AlterConfigOpType],
                validate_only: bool = False) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops
    ])
    futures = admin.incremental_alter_configs([resource], validate_only=validate_only)
    futures[resource].result(TIMEOUT)


def kafka_error(excinfo: pytest.ExceptionInfo[KafkaException]) -> KafkaError:
    error: KafkaError = excinfo.value.args[0]
    return error


def send(client: KafkaAdminClient, request: Any) -> Any:
    """One request over kafka-python's own connection, for what its high-level API cannot say."""

    async def call() -> Any:
        return await client._manager.send(request, node_id=NODE_ID)

    return client._manager.run(call)


def layered(client: KafkaAdminClient, resource_type: str, name: str,
            key: str) -> tuple[str, str, list[tuple[str, str]]]:
    """A config's value, source and synonyms (source, value), read with kafka-python (librdkafka
    keys synonyms by name, so it cannot show a broker config's layers)."""
    entry = client.describe_configs(
        [KConfigResource(resource_type, name, [key])], include_synonyms=True,
        config_filter="all",
    )[resource_type.lower()][name][key]
    return (entry["value"], entry["config_source"],
            [(s["source"], s["value"]) for s in entry["synonyms"]])


def broker_default_configs(client: KafkaAdminClient) -> dict[str, Any]:
    response = send(client, DescribeConfigsRequest(
        resources=[(4, "", None)], include_synonyms=True, include_documentation=False))
    (result,) = response.results
    assert result.error_code == 0
    return {c.name: c for c in result.configs}


def log_dir_sizes(client: KafkaAdminClient, topics: Any = None) -> dict[tuple[str, int], int]:
    (entry,) = client.describe_log_dirs(topics)
    (log_dir,) = entry["log_dirs"]
    return {
        (t["name"], p["partition_index"]): p["partition_size"]
        for t in log_dir["topics"]
        for p in t["partitions"]
    }


# --- DescribeConfigs -------------------------------------------------------------------------


def test_describe_topic_configs_lists_every_config_with_sources_and_synonyms(
    broker: BrokerProcess, admin: AdminClient,
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), config={"retention.ms": "3600000"})

    configs = describe_topic(admin, topic)

    assert set(configs) == LISTED_TOPIC_CONFIGS
    retention = configs["retention.ms"]
    assert retention.value == "3600000"
    assert source(retention) == TOPIC_CONFIG
    assert not retention.is_read_only and not retention.is_sensitive
    # As Kafka: log.retention.ms has no default of its own (log.retention.hours supplies it).
    assert synonyms(retention) == [("retention.ms", "3600000", TOPIC_CONFIG)]
    segment = configs["segment.bytes"]
    assert (segment.value, source(segment)) == ("1073741824", DEFAULT)
    assert synonyms(segment) == [("log.segment.bytes", "1073741824", DEFAULT)]


def test_describe_configs_reports_types_and_filters_keys(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    result = kadmin.describe_configs(
        [KConfigResource("TOPIC", topic, ["retention.ms", "cleanup.policy", "no.such.config"])],
        include_synonyms=True, config_filter="all",
    )

    configs = result["topic"][topic]
    assert set(configs) == {"retention.ms", "cleanup.policy"}
    assert configs["retention.ms"]["config_type"] == "LONG"
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    assert configs["cleanup.policy"]["value"] == "delete"
    assert configs["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"


def test_describe_configs_of_unknown_topic_is_unknown_topic_or_partition(
    admin: AdminClient,
) -> None:
    with pytest.raises(KafkaException) as excinfo:
        describe_topic(admin, "no-such-topic-" + uuid.uuid4().hex)
    assert kafka_error(excinfo).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_broker_configs(
    broker: BrokerProcess, admin: AdminClient, kadmin: KafkaAdminClient
) -> None:
    configs = describe_broker(admin)
    # librdkafka keys synonyms by name, so the broker's layers are read with kafka-python.
    layered = kadmin.describe_configs(
        [KConfigResource("BROKER", str(NODE_ID), ["metrics.port"])],
        include_synonyms=True, config_filter="all",
    )["broker"][str(NODE_ID)]

    assert set(configs) == LISTED_BROKER_CONFIGS | {"log.dir", "listeners"} | set(
        broker.overrides) | set(DEV_DEFAULTS)
    node_id = configs["node.id"]
    assert (node_id.value, node_id.is_read_only, source(node_id)) == ("1", True, DEFAULT)
    retention = configs["log.retention.ms"]  # Kafka reports null: log.retention.hours is set
    assert (retention.value, retention.is_read_only) == (None, False)
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.is_read_only, source(hours)) == ("168", True, DEFAULT)
    metrics_port = configs["metrics.port"]  # the harness sets it in the server properties
    assert (metrics_port.value, source(metrics_port)) == (str(broker.metrics_port), STATIC)
    assert layered["metrics.port"]["synonyms"] == [
        {"name": "metrics.port", "value": str(broker.metrics_port),
         "source": "STATIC_BROKER_CONFIG"},
        {"name": "metrics.port", "value": "9404", "source": "DEFAULT_CONFIG"},
    ]


def test_describe_configs_documentation_and_resource_errors(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    response = send(kadmin, DescribeConfigsRequest(
        resources=[(2, topic, ["retention.ms"]), (4, "2", None), (4, "one", None), (8, "1", None),
                   (2, "", None)],
        include_synonyms=False, include_documentation=True,
    ))

    found, other_node, not_a_number, broker_logger, empty_topic = response.results
    (retention,) = found.configs
    assert retention.documentation == TOPIC_CONFIGS["retention.ms"].doc
    assert retention.config_type == 5  # LONG
    assert retention.synonyms == []
    assert other_node.error_code == INVALID_REQUEST
    assert other_node.error_message == (
        "Unexpected broker id, expected 1 or empty string, but received 2")
    assert not_a_number.error_code == INVALID_REQUEST
    assert "must be an integer" in not_a_number.error_message
    assert broker_logger.error_code == INVALID_REQUEST
    assert empty_topic.error_code == 17  # INVALID_TOPIC_EXCEPTION


def test_describe_configs_with_an_unknown_resource_type_fails_every_resource(
    kadmin: KafkaAdminClient,
) -> None:
    response = send(kadmin, DescribeConfigsRequest(
        resources=[(4, "1", None), (99, "x", None)], include_synonyms=False))

    assert [r.error_code for r in response.results] == [INVALID_REQUEST, INVALID_REQUEST]
    assert all(r.configs == [] for r in response.results)


# --- AlterConfigs (legacy) ---------------------------------------------------------------


def test_alter_configs_replaces_the_whole_override_set(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"),
                         config={"retention.ms": "1000000", "segment.ms": "100000"})
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "2000000"})

    admin.alter_configs([resource])[resource].result(TIMEOUT)

    configs = describe_topic(admin, topic)
    assert (configs["retention.ms"].value, source(configs["retention.ms"])) == (
        "2000000", TOPIC_CONFIG)
    assert (configs["segment.ms"].value, source(configs["segment.ms"])) == ("604800000", DEFAULT)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms"),
        ("retention.ms", "-7", "Invalid value -7 for configuration retention.ms"),
        ("cleanup.policy", "shred", "Invalid value shred for configuration cleanup.policy"),
        ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    ],
)
def test_alter_configs_refuses_bad_configs_with_invalid_config(
    broker: BrokerProcess, admin: AdminClient, name: str, value: str, message: str
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), config={"retention.ms": "1000000"})
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={name: value})

    with pytest.raises(KafkaException) as excinfo:
        admin.alter_configs([resource])[resource].result(TIMEOUT)

    error = kafka_error(excinfo)
    assert error.code() == KafkaError.INVALID_CONFIG
    assert message in error.str()
    assert describe_topic(admin, topic)["retention.ms"].value == "1000000"


def test_alter_configs_of_unknown_topic(admin: AdminClient) -> None:
    topic = "no-such-topic-" + uuid.uuid4().hex
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "1000"})

    with pytest.raises(KafkaException) as excinfo:
        admin.alter_configs([resource])[resource].result(TIMEOUT)

    assert kafka_error(excinfo).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_alter_configs_validate_only_leaves_nothing_changed(
    broker: BrokerProcess, admin: AdminClient, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    result = kadmin.alter_configs(
        [KConfigResource("TOPIC", topic, {"retention.ms": "5000"})],
        validate_only=True, incremental=False,
    )

    assert result == {"topic": {topic: "OK"}}
    retention = describe_topic(admin, topic)["retention.ms"]
    assert (retention.value, source(retention)) == ("604800000", DEFAULT)


def test_legacy_alter_configs_through_kafka_python(
    broker: BrokerProcess, admin: AdminClient, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    ok = kadmin.alter_configs(
        [KConfigResource("TOPIC", topic, {"retention.ms": "7000"})], incremental=False)
    bad = kadmin.alter_configs(
        [KConfigResource("TOPIC", topic, {"retention.ms": "x"})], incremental=False,
        raise_on_unknown=False)

    assert ok == {"topic": {topic: "OK"}}
    assert "InvalidConfigurationError" in bad["topic"][topic]
    assert describe_topic(admin, topic)["retention.ms"].value == "7000"


def test_alter_configs_rejects_malformed_resources(
    broker: BrokerProcess, admin: AdminClient, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    duplicated = send(kadmin, AlterConfigsRequest(
        resources=[(2, topic, [("retention.ms", "1")]), (2, topic, [("retention.ms", "2")])],
        validate_only=False))
    repeated_key = send(kadmin, AlterConfigsRequest(
        resources=[(2, topic, [("retention.ms", "1"), ("retention.ms", "2")])],
        validate_only=False))
    default_topic = send(kadmin, IncrementalAlterConfigsRequest(
        resources=[(2, "", [("retention.ms", SET, "1")])], validate_only=False))

    assert [r.error_code for r in duplicated.responses] == [INVALID_REQUEST, INVALID_REQUEST]
    assert repeated_key.responses[0].error_code == INVALID_REQUEST
    assert default_topic.responses[0].error_message == "Default topic resources are not allowed."
    assert describe_topic(admin, topic)["retention.ms"].value == "604800000"


# --- IncrementalAlterConfigs -------------------------------------------------------------


def test_incremental_alter_set_append_subtract_delete(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    incremental(admin, topic, ("retention.ms", "86400000", AlterConfigOpType.SET),
                ("cleanup.policy", "compact", AlterConfigOpType.APPEND))
    configs = describe_topic(admin, topic)
    assert (configs["retention.ms"].value, source(configs["retention.ms"])) == (
        "86400000", TOPIC_CONFIG)
    assert configs["cleanup.policy"].value == "delete,compact"

    incremental(admin, topic, ("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT),
                ("retention.ms", None, AlterConfigOpType.DELETE))
    configs = describe_topic(admin, topic)
    assert (configs["cleanup.policy"].value, source(configs["cleanup.policy"])) == (
        "compact", TOPIC_CONFIG)
    assert (configs["retention.ms"].value, source(configs["retention.ms"])) == (
        "604800000", DEFAULT)


@pytest.mark.parametrize("op", [AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT])
def test_incremental_append_or_subtract_on_a_non_list_is_invalid_config(
    broker: BrokerProcess, admin: AdminClient, op: AlterConfigOpType
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    with pytest.raises(KafkaException) as excinfo:
        incremental(admin, topic, ("retention.ms", "5", op))

    error = kafka_error(excinfo)
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "because its type is not LIST" in error.str()


def test_incremental_bad_value_is_invalid_config_and_changes_nothing(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    with pytest.raises(KafkaException) as excinfo:
        incremental(admin, topic, ("segment.ms", "5000", AlterConfigOpType.SET),
                    ("retention.ms", "soon", AlterConfigOpType.SET))

    error = kafka_error(excinfo)
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "Invalid value soon for configuration retention.ms" in error.str()
    assert source(describe_topic(admin, topic)["segment.ms"]) == DEFAULT


def test_incremental_validate_only_leaves_nothing_changed(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))

    incremental(admin, topic, ("retention.ms", "5000", AlterConfigOpType.SET),
                validate_only=True)

    assert source(describe_topic(admin, topic)["retention.ms"]) == DEFAULT


def test_changed_retention_is_described_as_topic_config_and_survives_restart(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("admin"))
    incremental(admin_for(fresh_broker), topic,
                ("retention.ms", "123456789", AlterConfigOpType.SET))

    fresh_broker.restart()

    retention = describe_topic(admin_for(fresh_broker), topic)["retention.ms"]
    assert (retention.value, source(retention)) == ("123456789", TOPIC_CONFIG)


# --- dynamic broker configs ----------------------------------------------------------------


def test_cluster_default_broker_configs(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    admin = admin_for(fresh_broker)
    topic = create_topic(fresh_broker.bootstrap, unique("admin"))
    client = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap, request_timeout_ms=10_000)
    try:
        response = send(client, IncrementalAlterConfigsRequest(
            resources=[(4, "", [("log.retention.ms", SET, "7200000"),
                                ("log.cleanup.policy", APPEND, "compact")])],
            validate_only=False))
        assert response.responses[0].error_code == 0

        defaults = broker_default_configs(client)
        assert {n: (c.value, c.config_source) for n, c in defaults.items()} == {
            "log.retention.ms": ("7200000", DYNAMIC_DEFAULT),
            "log.cleanup.policy": ("delete,compact", DYNAMIC_DEFAULT),
        }
        assert source(describe_broker(admin)["log.retention.ms"]) == DYNAMIC_DEFAULT
        layered = client.describe_configs(
            [KConfigResource("BROKER", str(NODE_ID), ["log.retention.ms"])],
            include_synonyms=True, config_filter="all",
        )["broker"][str(NODE_ID)]["log.retention.ms"]
        assert layered["synonyms"] == [
            {"name": "log.retention.ms", "value": "7200000",
             "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"},
            {"name": "log.retention.hours", "value": "168", "source": "DEFAULT_CONFIG"},
        ]
        topic_retention = describe_topic(admin, topic)["retention.ms"]
        assert (topic_retention.value, source(topic_retention)) == ("7200000", DYNAMIC_DEFAULT)

        # Legacy AlterConfigs replaces the whole set of dynamic defaults.
        response = send(client, AlterConfigsRequest(
            resources=[(4, "", [("log.retention.ms", "3600000")])], validate_only=False))
        assert response.responses[0].error_code == 0
        assert set(broker_default_configs(client)) == {"log.retention.ms"}
    finally:
        client.close()

    fresh_broker.restart()

    retention = describe_broker(admin_for(fresh_broker))["log.retention.ms"]
    assert (retention.value, source(retention)) == ("3600000", DYNAMIC_DEFAULT)


def test_broker_config_changes_that_kafka_refuses(kadmin: KafkaAdminClient) -> None:
    before = broker_default_configs(kadmin)
    per_broker_before = describe_broker_modified(kadmin)

    read_only = send(kadmin, IncrementalAlterConfigsRequest(
        resources=[(4, "", [("node.id", SET, "7")])], validate_only=False))
    bad_value = send(kadmin, AlterConfigsRequest(
        resources=[(4, "", [("log.retention.ms", "forever")])], validate_only=False))
    other_node = send(kadmin, IncrementalAlterConfigsRequest(
        resources=[(4, "2", [("log.retention.ms", SET, "1")])], validate_only=False))
    not_a_number = send(kadmin, IncrementalAlterConfigsRequest(
        resources=[(4, "1_0", [("log.retention.ms", SET, "1")])], validate_only=False))
    per_broker_read_only = kadmin.alter_configs(
        [KConfigResource("BROKER", str(NODE_ID), {"node.id": "7"})], raise_on_unknown=False)
    per_broker_bad_value = send(kadmin, AlterConfigsRequest(
        resources=[(4, str(NODE_ID), [("log.segment.bytes", "tiny")])], validate_only=False))
    validate_only = send(kadmin, IncrementalAlterConfigsRequest(
        resources=[(4, "", [("log.retention.ms", SET, "1")])], validate_only=True))
    per_broker_validate_only = kadmin.alter_configs(
        [KConfigResource("BROKER", str(NODE_ID), {"log.retention.ms": "1"})],
        validate_only=True)

    # Kafka answers INVALID_REQUEST for broker configs that fail validation (KAFKA-13609).
    assert read_only.responses[0].error_code == INVALID_REQUEST
    assert "node.id" in read_only.responses[0].error_message
    assert bad_value.responses[0].error_code == INVALID_REQUEST
    assert "Invalid value forever" in bad_value.responses[0].error_message
    assert other_node.responses[0].error_code == INVALID_REQUEST
    assert other_node.responses[0].error_message == (
        "Unexpected broker id, expected 1, but received 2")
    assert not_a_number.responses[0].error_message == "Node id must be an integer, but it is: 1_0"
    assert "InvalidRequestError: Cannot update these configs dynamically: Set(node.id)" in (
        per_broker_read_only["broker"]["1"])
    assert per_broker_bad_value.responses[0].error_code == INVALID_REQUEST
    assert "Invalid value tiny" in per_broker_bad_value.responses[0].error_message
    assert validate_only.responses[0].error_code == 0
    assert per_broker_validate_only == {"broker": {"1": "OK"}}
    assert broker_default_configs(kadmin).keys() == before.keys()
    assert describe_broker_modified(kadmin) == per_broker_before


def describe_broker_modified(client: KafkaAdminClient) -> dict[str, Any]:
    """This broker's per-broker dynamic configs (kafka-python's "modified" filter)."""
    configs: dict[str, Any] = client.describe_configs(
        [KConfigResource("BROKER", str(NODE_ID))])["broker"][str(NODE_ID)]
    return configs


def test_per_broker_configs_through_confluent(fresh_broker: BrokerProcess) -> None:
    """Per-broker over cluster default over static over default, as Kafka layers them; a topic
    without an override inherits the winning layer and reports its source."""
    fresh_broker.overrides["log.retention.ms"] = "86400000"
    fresh_broker.start()
    admin = admin_for(fresh_broker)
    topic = create_topic(fresh_broker.bootstrap, unique("admin"))
    this_broker = ConfigResource(ResourceType.BROKER, str(NODE_ID), incremental_configs=[
        ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    chain = [
        ("DYNAMIC_BROKER_CONFIG", "3600000"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "7200000"),
        ("STATIC_BROKER_CONFIG", "86400000"),
        ("DEFAULT_CONFIG", "168"),  # log.retention.hours: log.retention.ms has no default
    ]
    client = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap, request_timeout_ms=10_000)
    try:
        response = send(client, IncrementalAlterConfigsRequest(
            resources=[(4, "", [("log.retention.ms", SET, "7200000")])], validate_only=False))
        assert response.responses[0].error_code == 0

        admin.incremental_alter_configs([this_broker])[this_broker].result(TIMEOUT)

        retention = describe_broker(admin)["log.retention.ms"]
        assert (retention.value, source(retention)) == ("3600000", DYNAMIC_BROKER)
        assert layered(client, "BROKER", str(NODE_ID), "log.retention.ms") == (
            "3600000", "DYNAMIC_BROKER_CONFIG", chain)
        topic_retention = describe_topic(admin, topic)["retention.ms"]
        assert (topic_retention.value, source(topic_retention)) == ("3600000", DYNAMIC_BROKER)
        # A topic without an override lists its broker synonym's layers.
        assert layered(client, "TOPIC", topic, "retention.ms") == (
            "3600000", "DYNAMIC_BROKER_CONFIG", chain)
        # The cluster-default resource still lists only its own layer.
        assert broker_default_configs(client)["log.retention.ms"].value == "7200000"
    finally:
        client.close()

    fresh_broker.restart()
    admin = admin_for(fresh_broker)
    client = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap, request_timeout_ms=10_000)
    try:
        assert layered(client, "BROKER", str(NODE_ID), "log.retention.ms") == (
            "3600000", "DYNAMIC_BROKER_CONFIG", chain)
        topic_retention = describe_topic(admin, topic)["retention.ms"]
        assert (topic_retention.value, source(topic_retention)) == ("3600000", DYNAMIC_BROKER)

        delete = ConfigResource(ResourceType.BROKER, str(NODE_ID), incremental_configs=[
            ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
        admin.incremental_alter_configs([delete])[delete].result(TIMEOUT)

        assert layered(client, "BROKER", str(NODE_ID), "log.retention.ms") == (
            "7200000", "DYNAMIC_DEFAULT_BROKER_CONFIG", chain[1:])
        topic_retention = describe_topic(admin, topic)["retention.ms"]
        assert (topic_retention.value, source(topic_retention)) == ("7200000", DYNAMIC_DEFAULT)

        response = send(client, IncrementalAlterConfigsRequest(
            resources=[(4, "", [("log.retention.ms", DELETE, None)])], validate_only=False))
        assert response.responses[0].error_code == 0
        retention = describe_broker(admin)["log.retention.ms"]
        assert (retention.value, source(retention)) == ("86400000", STATIC)
        topic_retention = describe_topic(admin, topic)["retention.ms"]
        assert (topic_retention.value, source(topic_retention)) == ("86400000", STATIC)
    finally:
        client.close()


def test_per_broker_configs_through_kafka_python(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    client = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap, request_timeout_ms=10_000)
    this_broker = str(NODE_ID)
    try:
        legacy = client.alter_configs(
            [KConfigResource("BROKER", this_broker, {"log.retention.ms": "5000",
                                                     "log.segment.bytes": "1048576"})],
            incremental=False)
        incremental_ = client.alter_configs([KConfigResource("BROKER", this_broker, {
            "log.cleanup.policy": ("APPEND", "compact"),
            "log.segment.bytes": ("DELETE", None),
        })])
        after_incremental = describe_broker_modified(client)
        # Legacy AlterConfigs replaces this broker's whole set (here: leaves only one config).
        replaced = send(client, AlterConfigsRequest(
            resources=[(4, this_broker, [("message.max.bytes", "3000")])], validate_only=False))

        assert legacy == {"broker": {this_broker: "OK"}}
        assert incremental_ == {"broker": {this_broker: "OK"}}
        assert {n: (c["value"], c["config_source"]) for n, c in after_incremental.items()} == {
            "log.retention.ms": ("5000", "DYNAMIC_BROKER_CONFIG"),
            "log.cleanup.policy": ("delete,compact", "DYNAMIC_BROKER_CONFIG"),
        }
        assert replaced.responses[0].error_code == 0
        assert {n: (c["value"], c["config_source"])
                for n, c in describe_broker_modified(client).items()} == {
            "message.max.bytes": ("3000", "DYNAMIC_BROKER_CONFIG"),
        }
        assert layered(client, "BROKER", this_broker, "log.retention.ms") == (
            None, "DEFAULT_CONFIG", [])
    finally:
        client.close()


# --- DescribeCluster -----------------------------------------------------------------------


def test_describe_cluster(broker: BrokerProcess, kadmin: KafkaAdminClient) -> None:
    cluster = kadmin.describe_cluster()

    meta = (broker.data_dir / "meta.properties").read_text()
    assert f"cluster.id={cluster['cluster_id']}" in meta
    assert cluster["controller_id"] == NODE_ID
    assert cluster["brokers"] == [{"broker_id": NODE_ID, "host": "127.0.0.1",
                                   "port": broker.port, "rack": None, "is_fenced": False}]
    assert set(cluster["authorized_operations"]) == {
        "CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
        "ALTER", "DESCRIBE",
    }


def test_describe_cluster_endpoint_types_and_omitted_operations(kadmin: KafkaAdminClient) -> None:
    brokers = send(kadmin, DescribeClusterRequest(include_cluster_authorized_operations=False))
    controllers = send(kadmin, DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=2))
    unknown = send(kadmin, DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=9))

    assert brokers.error_code == 0
    assert brokers.authorized_operations is None  # -2147483648: not requested
    assert controllers.error_code == 114  # MISMATCHED_ENDPOINT_TYPE
    assert unknown.error_code == 115  # UNSUPPORTED_ENDPOINT_TYPE


# --- DeleteRecords -------------------------------------------------------------------------


def test_delete_records_moves_the_low_watermark(broker: BrokerProcess, admin: AdminClient) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), partitions=2)
    produce_values(broker.bootstrap, topic, numbered(100))

    futures = admin.delete_records([CTopicPartition(topic, 0, 40)])
    deleted = next(iter(futures.values())).result(TIMEOUT)

    assert deleted.low_watermark == 40
    earliest = admin.list_offsets({CTopicPartition(topic, 0): OffsetSpec.earliest()})
    assert next(iter(earliest.values())).result(TIMEOUT).offset == 40


def test_delete_records_to_the_high_watermark_and_below_the_start(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))
    produce_values(broker.bootstrap, topic, numbered(30))

    to_end = kadmin.delete_records({TopicPartition(topic, 0): -1})
    below_start = kadmin.delete_records({TopicPartition(topic, 0): 5})

    assert to_end[TopicPartition(topic, 0)]["low_watermark"] == 30
    assert below_start[TopicPartition(topic, 0)]["low_watermark"] == 30


def test_delete_records_above_the_high_watermark_is_offset_out_of_range(
    broker: BrokerProcess, admin: AdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))
    produce_values(broker.bootstrap, topic, numbered(10))

    futures = admin.delete_records([CTopicPartition(topic, 0, 11)])

    with pytest.raises(KafkaException) as excinfo:
        next(iter(futures.values())).result(TIMEOUT)
    assert kafka_error(excinfo).code() == KafkaError.OFFSET_OUT_OF_RANGE


def test_delete_records_of_unknown_partition_and_compacted_topic(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"))
    compacted = create_topic(broker.bootstrap, unique("admin"),
                             config={"cleanup.policy": "compact"})

    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.delete_records({TopicPartition(topic, 7): 0}, partition_leader_id=NODE_ID)
    with pytest.raises(PolicyViolationError):
        kadmin.delete_records({TopicPartition(compacted, 0): 0}, partition_leader_id=NODE_ID)


def test_delete_records_removes_whole_segments(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), config={"segment.bytes": "1024"})
    produce_values(broker.bootstrap, topic, numbered(60), **{"batch.num.messages": 1})
    directory = broker.data_dir / f"{topic}-0"
    first_segment = directory / f"{0:020d}.log"
    size_before = log_dir_sizes(kadmin, {topic: [0]})[(topic, 0)]
    assert first_segment.exists()

    kadmin.delete_records({TopicPartition(topic, 0): 50})

    assert not first_segment.exists()
    assert log_dir_sizes(kadmin, {topic: [0]})[(topic, 0)] < size_before


# --- DescribeLogDirs -----------------------------------------------------------------------


def test_describe_log_dirs(broker: BrokerProcess, kadmin: KafkaAdminClient) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), partitions=3)
    produce_values(broker.bootstrap, topic, numbered(20), 1)

    (entry,) = kadmin.describe_log_dirs()
    (log_dir,) = entry["log_dirs"]
    some = log_dir_sizes(kadmin, {topic: [1, 2]})

    assert entry["broker"] == NODE_ID
    assert log_dir["error_code"] == 0
    assert Path(log_dir["log_dir"]) == broker.data_dir.resolve()
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    partitions = {
        p["partition_index"]: p
        for t in log_dir["topics"] if t["name"] == topic
        for p in t["partitions"]
    }
    assert sorted(partitions) == [0, 1, 2]
    assert partitions[0]["partition_size"] == 0
    assert partitions[1]["partition_size"] > 20 * 100
    assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in partitions.values())
    assert some == {(topic, 1): partitions[1]["partition_size"], (topic, 2): 0}


# --- DescribeTopicPartitions -------------------------------------------------------------


def test_describe_topic_partitions_paginates_with_a_cursor(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    base = f"pages-{uuid.uuid4().hex[:8]}"
    second = create_topic(broker.bootstrap, f"{base}-b", partitions=2)
    first = create_topic(broker.bootstrap, f"{base}-a", partitions=5)
    topics = [second, first]  # the broker orders topics by name

    pages = []
    cursor = None
    while True:
        page = kadmin.describe_topic_partitions(topics, response_partition_limit=3, cursor=cursor)
        pages.append([(t["name"], [p["partition_index"] for p in t["partitions"]])
                      for t in page["topics"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break

    assert pages == [
        [(first, [0, 1, 2])],
        [(first, [3, 4]), (second, [0])],
        [(second, [1])],
    ]


def test_describe_topic_partitions_details_and_errors(
    broker: BrokerProcess, kadmin: KafkaAdminClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("admin"), partitions=2)
    missing = "no-such-topic-" + uuid.uuid4().hex

    result = kadmin.describe_topic_partitions([topic, missing, "bad name!"])
    by_name = {t["name"]: t for t in result["topics"]}
    bad_cursor = kadmin.describe_topic_partitions(
        [topic], cursor={"topic_name": missing, "partition_index": 0})

    described = by_name[topic]
    assert described["error_code"] == 0 and not described["is_internal"]
    assert described["topic_authorized_operations"] == sum(
        1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))  # READ ... ALTER_CONFIGS
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in described["partitions"]] == [(0, 1, [1], [1]), (1, 1, [1], [1])]
    assert by_name[missing]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert by_name["bad name!"]["error_code"] == 17  # INVALID_TOPIC_EXCEPTION
    assert result["next_cursor"] is None
    assert [t["error_code"] for t in bad_cursor["topics"]] == [INVALID_REQUEST]


def test_confluent_describe_topics(broker: BrokerProcess, admin: AdminClient) -> None:
    """librdkafka answers describe_topics from Metadata; it must agree with the topic."""
    topic = create_topic(broker.bootstrap, unique("admin"), partitions=3)
    missing = "no-such-topic-" + uuid.uuid4().hex

    futures = admin.describe_topics(TopicCollection([topic, missing]))

    description = futures[topic].result(TIMEOUT)
    assert [p.id for p in description.partitions] == [0, 1, 2]
    assert all(p.leader.id == NODE_ID for p in description.partitions)
    with pytest.raises(KafkaException) as excinfo:
        futures[missing].result(TIMEOUT)
    assert kafka_error(excinfo).code() == KafkaError.UNKNOWN_TOPIC_OR_PART
