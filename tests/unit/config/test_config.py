"""Kafka's broker and topic configs: parsing, validation, aliases, .properties files, dynamic
changes and the broker synonyms that supply topic defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.config.kafka_configs import (
    ALL_TOPIC_CONFIGS,
    BROKER_CONFIGS,
    INT_MAX,
    LONG_MAX,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigDef,
    ConfigSource,
    ConfigType,
    InvalidConfigError,
    Value,
    effective_topic_config,
    format_value,
    load_properties,
    parse_value,
    validate_dynamic_broker_configs,
    validate_topic_configs,
)


def definition(kind: ConfigType, default: Value = None) -> ConfigDef:
    return ConfigDef("test.config", kind, default, "A config for tests.")


# --- parse_value per type ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [
        (ConfigType.BOOLEAN, "true", True),
        (ConfigType.BOOLEAN, " FALSE ", False),
        (ConfigType.BOOLEAN, "True", True),
        (ConfigType.INT, "42", 42),
        (ConfigType.INT, " -7 ", -7),
        (ConfigType.INT, str(INT_MAX), INT_MAX),
        (ConfigType.INT, str(-INT_MAX - 1), -INT_MAX - 1),
        (ConfigType.SHORT, "32767", 32767),
        (ConfigType.SHORT, "-32768", -32768),
        (ConfigType.LONG, str(LONG_MAX), LONG_MAX),
        (ConfigType.LONG, str(-LONG_MAX - 1), -LONG_MAX - 1),
        (ConfigType.DOUBLE, "0.25", 0.25),
        (ConfigType.DOUBLE, "3", 3.0),
        (ConfigType.LIST, "a, b ,,c", ["a", "b", "c"]),
        (ConfigType.LIST, "", []),
        (ConfigType.STRING, "  spaced  ", "spaced"),
        (ConfigType.PASSWORD, "s3cret", "s3cret"),
        (ConfigType.CLASS, "org.example.Thing", "org.example.Thing"),
    ],
)
def test_parse_value(kind: ConfigType, raw: str, expected: Value) -> None:
    value = parse_value(definition(kind), raw)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("kind", "raw"),
    [
        (ConfigType.BOOLEAN, "yes"),
        (ConfigType.BOOLEAN, "1"),
        (ConfigType.BOOLEAN, ""),
        (ConfigType.INT, "4.2"),
        (ConfigType.INT, "ten"),
        (ConfigType.INT, ""),
        (ConfigType.INT, "1_000"),  # Java's Integer.parseInt refuses underscores
        (ConfigType.INT, str(INT_MAX + 1)),
        (ConfigType.INT, str(-INT_MAX - 2)),
        (ConfigType.SHORT, "32768"),
        (ConfigType.SHORT, "-32769"),
        (ConfigType.LONG, str(LONG_MAX + 1)),
        (ConfigType.DOUBLE, "half"),
        (ConfigType.DOUBLE, "1_0.5"),
    ],
)
def test_parse_value_rejects(kind: ConfigType, raw: str) -> None:
    with pytest.raises(InvalidConfigError, match="test.config"):
        parse_value(definition(kind), raw)


def test_null_only_for_strings_without_default() -> None:
    assert parse_value(definition(ConfigType.STRING), None) is None
    assert parse_value(definition(ConfigType.PASSWORD), None) is None
    with pytest.raises(InvalidConfigError, match="Null value"):
        parse_value(definition(ConfigType.STRING, "x"), None)
    with pytest.raises(InvalidConfigError, match="Null value"):
        parse_value(definition(ConfigType.INT), None)
    with pytest.raises(InvalidConfigError, match="Null value"):
        parse_value(definition(ConfigType.LIST), None)


# --- validators ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("log.segment.bytes", "14", "13"),
        ("log.retention.ms", "-1", "-2"),
        ("min.insync.replicas", "1", "0"),
        ("num.partitions", "1", "0"),
        ("log.cleaner.min.cleanable.ratio", "0", "-0.1"),
        ("compression.type", "zstd", "brotli"),
        ("log.message.timestamp.type", "LogAppendTime", "logappendtime"),
        ("log.cleanup.policy", "compact, delete", "compact,archive"),
        ("log.cleanup.policy", "delete", ""),
        ("process.roles", "broker", "worker"),
    ],
)
def test_broker_validators(name: str, good: str, bad: str) -> None:
    parse_value(BROKER_CONFIGS[name], good)
    with pytest.raises(InvalidConfigError, match=name):
        parse_value(BROKER_CONFIGS[name], bad)


def test_topic_configs_share_their_synonyms_validation() -> None:
    assert validate_topic_configs({"segment.bytes": "14"}) == {"segment.bytes": 14}
    with pytest.raises(InvalidConfigError, match="segment.bytes"):
        validate_topic_configs({"segment.bytes": "13"})
    with pytest.raises(InvalidConfigError, match="cleanup.policy"):
        validate_topic_configs({"cleanup.policy": "shred"})


def test_validate_topic_configs_parses_and_refuses_unknown_names() -> None:
    parsed = validate_topic_configs({"retention.ms": "1000", "cleanup.policy": "compact,delete",
                                     "unclean.leader.election.enable": "true",
                                     "min.cleanable.dirty.ratio": "0.1"})
    assert parsed == {"retention.ms": 1000, "cleanup.policy": ["compact", "delete"],
                      "unclean.leader.election.enable": True, "min.cleanable.dirty.ratio": 0.1}
    with pytest.raises(InvalidConfigError, match="retention.hours"):
        validate_topic_configs({"retention.hours": "1"})
    with pytest.raises(InvalidConfigError, match="log.retention.ms"):
        validate_topic_configs({"log.retention.ms": "1"})  # a broker name, not a topic name


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "true"), (False, "false"), (["a", "b"], "a,b"), ([], ""), (5, "5"), (0.5, "0.5"),
     ("x", "x"), (None, None)],
)
def test_format_value(value: Value, text: str | None) -> None:
    assert format_value(value) == text


# --- broker config: unknown names, aliases -------------------------------------------------


def test_defaults_when_nothing_is_set() -> None:
    config = BrokerConfig({})
    assert config.integer("num.partitions") == 1
    assert config["auto.create.topics.enable"] is True
    assert config.text("log.cleanup.policy") == "delete"
    assert config.text("cluster.id") == ""
    assert config.source("num.partitions") is ConfigSource.DEFAULT_CONFIG


def test_static_values_are_parsed() -> None:
    config = BrokerConfig({"node.id": "3", "log.cleanup.policy": "compact,delete",
                           "auto.create.topics.enable": "false"})
    assert config.integer("node.id") == 3
    assert config["log.cleanup.policy"] == ["compact", "delete"]
    assert config["auto.create.topics.enable"] is False
    assert config.source("node.id") is ConfigSource.STATIC_BROKER_CONFIG


def test_unknown_names_are_refused_all_at_once() -> None:
    with pytest.raises(InvalidConfigError, match="log.retention.days, zookeeper.connect"):
        BrokerConfig({"zookeeper.connect": "x", "log.retention.days": "1", "node.id": "1"})


def test_bad_static_value_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="num.partitions"):
        BrokerConfig({"num.partitions": "0"})


@pytest.mark.parametrize(
    ("raw", "retention_ms"),
    [
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.minutes": "5"}, 300_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "5"}, 300_000),
        ({"log.retention.minutes": "5", "log.retention.ms": "42"}, 42),
        ({"log.retention.hours": "1", "log.retention.ms": "42"}, 42),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-1"}, -1),
        ({}, 604_800_000),
    ],
)
def test_retention_aliases(raw: dict[str, str], retention_ms: int) -> None:
    """Kafka: log.retention.ms beats .minutes beats .hours; negative means no limit."""
    config = BrokerConfig(raw)
    assert config.integer("log.retention.ms") == retention_ms
    expected_source = ConfigSource.STATIC_BROKER_CONFIG if raw else ConfigSource.DEFAULT_CONFIG
    assert config.source("log.retention.ms") is expected_source


def test_roll_hours_alias() -> None:
    assert BrokerConfig({"log.roll.hours": "2"}).integer("log.roll.ms") == 7_200_000
    with pytest.raises(InvalidConfigError, match="log.roll.ms"):
        BrokerConfig({"log.roll.hours": "0"})


def test_bad_alias_value() -> None:
    with pytest.raises(InvalidConfigError, match="log.retention.hours"):
        BrokerConfig({"log.retention.hours": "a day"})


def test_log_dirs() -> None:
    assert BrokerConfig({}).log_dirs() == [Path("./data")]
    assert BrokerConfig({"log.dir": "/var/k"}).log_dirs() == [Path("/var/k")]
    assert BrokerConfig({"log.dirs": "/a, /b", "log.dir": "/c"}).log_dirs() == [Path("/a"),
                                                                                Path("/b")]


# --- .properties files ---------------------------------------------------------------------


def test_load_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   node.id = 2\n"
        "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://:9093\n"
        "log.dirs: /data/a,/data/b\n"
        "broker.rack:zone=a\n"
        "cluster.id=\n"
        "\t# indented comment\n"
    )
    assert load_properties(path) == {
        "node.id": "2",
        "listeners": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://:9093",
        "log.dirs": "/data/a,/data/b",
        "broker.rack": "zone=a",
        "cluster.id": "",
    }


@pytest.mark.parametrize("line", ["just-a-key", "=value", ":value"])
def test_load_properties_refuses_lines_without_a_key(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(f"node.id=1\n{line}\n")
    with pytest.raises(InvalidConfigError, match=":2:"):
        load_properties(path)


def test_properties_file_feeds_broker_config(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("log.retention.hours=48\nnum.partitions: 6\n")
    config = BrokerConfig(load_properties(path))
    assert config.integer("log.retention.ms") == 48 * 3_600_000
    assert config.integer("num.partitions") == 6


# --- dynamic broker configs ----------------------------------------------------------------


def test_set_dynamic_overrides_static_and_delete_restores_it() -> None:
    config = BrokerConfig({"log.retention.ms": "1000"})
    config.set_dynamic({"log.retention.ms": "2000"})
    assert config.integer("log.retention.ms") == 2000
    assert config.source("log.retention.ms") is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    config.set_dynamic({"log.retention.ms": None})
    assert config.integer("log.retention.ms") == 1000
    assert config.source("log.retention.ms") is ConfigSource.STATIC_BROKER_CONFIG


def test_deleting_a_dynamic_value_without_static_returns_the_default() -> None:
    config = BrokerConfig({})
    config.set_dynamic({"message.max.bytes": "2000000"})
    assert config.integer("message.max.bytes") == 2_000_000
    config.set_dynamic({"message.max.bytes": None})
    assert config.integer("message.max.bytes") == 1048588
    assert config.source("message.max.bytes") is ConfigSource.DEFAULT_CONFIG


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"log.retention.ms": "5", "node.id": "4"}, "dynamically: Set.node.id"),
        ({"log.retention.ms": "5", "log.cleaner.threads": "-1"}, "log.cleaner.threads"),
        ({"log.retention.ms": "5", "socket.request.max.bytes": None}, "dynamically"),
        ({"log.retention.ms": "5", "sasl.kerberos.min.time.before.relogin": "1"},
         "default cluster level"),
    ],
)
def test_set_dynamic_is_all_or_nothing(changes: dict[str, str | None], message: str) -> None:
    config = BrokerConfig({"log.retention.ms": "1000"})
    with pytest.raises(InvalidConfigError, match=message):
        config.set_dynamic(changes)
    assert config.integer("log.retention.ms") == 1000
    assert config.source("log.retention.ms") is ConfigSource.STATIC_BROKER_CONFIG
    assert config.dynamic_default_raw == {}


def test_per_broker_dynamic_beats_cluster_default_beats_static() -> None:
    config = BrokerConfig({"node.id": "1", "log.retention.ms": "1000"})
    config.set_dynamic({"log.retention.ms": "2000"}, "")
    config.set_dynamic({"log.retention.ms": "3000"}, "1")

    assert config.integer("log.retention.ms") == 3000
    assert config.source("log.retention.ms") is ConfigSource.DYNAMIC_BROKER_CONFIG
    # Kafka: log.retention.ms has no default of its own; log.retention.hours supplies it.
    assert config.synonyms("log.retention.ms") == [
        ("log.retention.ms", ConfigSource.DYNAMIC_BROKER_CONFIG, "3000"),
        ("log.retention.ms", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, "2000"),
        ("log.retention.ms", ConfigSource.STATIC_BROKER_CONFIG, "1000"),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG, "168"),
    ]
    assert config.topic_defaults()["retention.ms"] == 3000

    config.set_dynamic({"log.retention.ms": None}, "1")
    assert (config.integer("log.retention.ms"), config.source("log.retention.ms")) == (
        2000, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    config.set_dynamic({"log.retention.ms": None}, "")
    assert (config.integer("log.retention.ms"), config.source("log.retention.ms")) == (
        1000, ConfigSource.STATIC_BROKER_CONFIG)


def test_deleting_the_cluster_default_keeps_the_per_broker_value() -> None:
    config = BrokerConfig({"node.id": "4"})
    config.set_dynamic({"log.segment.bytes": "2048"}, "4")
    config.set_dynamic({"log.segment.bytes": "4096"}, "")
    config.set_dynamic({"log.segment.bytes": None}, "")

    assert config.integer("log.segment.bytes") == 2048
    assert config.synonyms("log.segment.bytes") == [
        ("log.segment.bytes", ConfigSource.DYNAMIC_BROKER_CONFIG, "2048"),
        ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG, "1073741824"),
    ]


def test_synonyms_leave_out_a_default_of_none() -> None:
    config = BrokerConfig({})
    assert config.synonyms("broker.rack") == []
    assert config.synonyms("cluster.id") == []
    assert BrokerConfig({"broker.rack": "r1"}).synonyms("broker.rack") == [
        ("broker.rack", ConfigSource.STATIC_BROKER_CONFIG, "r1")]


@pytest.mark.parametrize("resource_name", ["2", "01", "x"])
def test_other_brokers_configs_are_validated_and_ignored(resource_name: str) -> None:
    config = BrokerConfig({"node.id": "1"})
    config.set_dynamic({"log.retention.ms": "5"}, resource_name)
    assert config.dynamic_layer(resource_name) is None
    assert config.source("log.retention.ms") is ConfigSource.DEFAULT_CONFIG
    assert (config.dynamic_broker_raw, config.dynamic_default_raw) == ({}, {})
    with pytest.raises(InvalidConfigError, match="Cannot update these configs dynamically"):
        config.set_dynamic({"node.id": "2"}, resource_name)


def test_dynamic_layer_by_resource_name() -> None:
    config = BrokerConfig({"node.id": "3"})
    config.set_dynamic({"message.max.bytes": "2"}, "")
    config.set_dynamic({"message.max.bytes": "4"}, "3")
    assert config.dynamic_layer("") == {"message.max.bytes": "2"}
    assert config.dynamic_layer("3") == {"message.max.bytes": "4"}
    assert config.integer("message.max.bytes") == 4


def test_set_dynamic_per_broker_is_all_or_nothing() -> None:
    config = BrokerConfig({"node.id": "1"})
    config.set_dynamic({"log.retention.ms": "7"}, "1")
    with pytest.raises(InvalidConfigError, match="message.max.bytes"):
        config.set_dynamic({"log.retention.ms": "8", "message.max.bytes": "-1"}, "1")
    assert config.dynamic_broker_raw == {"log.retention.ms": "7"}
    assert config.integer("log.retention.ms") == 7


LAYER_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["", "1"]),
        st.sampled_from(["log.retention.ms", "log.cleanup.policy"]),
        st.sampled_from([None, "5", "6"]),
    ),
    max_size=12,
)


@given(changes=LAYER_CHANGES, static=st.booleans())
def test_value_source_and_synonyms_agree_with_a_model_of_the_layers(
    changes: list[tuple[str, str, str | None]], static: bool
) -> None:
    config = BrokerConfig({"node.id": "1", **({"log.retention.ms": "9"} if static else {})})
    model: dict[str, dict[str, str]] = {"1": {}, "": {}}
    for resource_name, name, raw in changes:
        value = None if raw is None else raw if name == "log.retention.ms" else "compact"
        config.set_dynamic({name: value}, resource_name)
        if value is None:
            model[resource_name].pop(name, None)
        else:
            model[resource_name][name] = value
    defaults = {"log.retention.ms": ("log.retention.hours", "168", "604800000"),
                "log.cleanup.policy": ("log.cleanup.policy", "delete", "delete")}
    for name, (default_name, default, effective) in defaults.items():
        layers = [(ConfigSource.DYNAMIC_BROKER_CONFIG, model["1"].get(name)),
                  (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, model[""].get(name)),
                  (ConfigSource.STATIC_BROKER_CONFIG, config.static_raw.get(name))]
        expected = [(name, source, raw) for source, raw in layers if raw is not None]
        # Kafka drops the synonyms before the first under the config's own name.
        assert config.synonyms(name) == ([*expected, (default_name, ConfigSource.DEFAULT_CONFIG,
                                                      default)]
                                         if expected or default_name == name else [])
        assert config.source(name) is (expected[0][1] if expected
                                        else ConfigSource.DEFAULT_CONFIG)
        assert config.text(name) == (expected[0][2] if expected else effective)


def test_validate_dynamic_broker_configs_returns_the_values_being_set() -> None:
    parsed = validate_dynamic_broker_configs({"log.retention.ms": "5", "log.cleanup.policy":
                                              "compact", "message.max.bytes": None})
    assert parsed == {"log.retention.ms": 5, "log.cleanup.policy": ["compact"]}


# --- topic defaults come from broker synonyms ----------------------------------------------

KAFKA_TOPIC_DEFAULTS: dict[str, Value] = {
    "cleanup.policy": ["delete"],
    "compression.type": "producer",
    "delete.retention.ms": 86_400_000,
    "file.delete.delay.ms": 60_000,
    "index.interval.bytes": 4096,
    "max.message.bytes": 1_048_588,
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": 0.5,
    "min.compaction.lag.ms": 0,
    "min.insync.replicas": 1,
    "preallocate": False,
    "retention.bytes": -1,
    "retention.ms": 604_800_000,
    "segment.bytes": 1_073_741_824,
    "segment.index.bytes": 10_485_760,
    "segment.jitter.ms": 0,
    "segment.ms": 604_800_000,
    "unclean.leader.election.enable": False,
}


def test_topic_defaults_are_kafkas() -> None:
    defaults = BrokerConfig({}).topic_defaults()
    assert set(defaults) == set(ALL_TOPIC_CONFIGS)
    assert {name: defaults[name] for name in KAFKA_TOPIC_DEFAULTS} == KAFKA_TOPIC_DEFAULTS


def test_topic_defaults_follow_static_and_dynamic_broker_values() -> None:
    config = BrokerConfig({"log.retention.hours": "1", "log.cleanup.policy": "compact",
                           "message.max.bytes": "500"})
    defaults = config.topic_defaults()
    assert defaults["retention.ms"] == 3_600_000
    assert defaults["cleanup.policy"] == ["compact"]
    assert defaults["max.message.bytes"] == 500
    config.set_dynamic({"log.retention.ms": "60000", "log.segment.bytes": "1048576"})
    defaults = config.topic_defaults()
    assert defaults["retention.ms"] == 60_000
    assert defaults["segment.bytes"] == 1_048_576


def test_effective_topic_config_overlays_overrides() -> None:
    config = BrokerConfig({"log.retention.ms": "1000"})
    effective = effective_topic_config(config, {"cleanup.policy": "compact",
                                                "segment.ms": "5000"})
    assert effective["cleanup.policy"] == ["compact"]
    assert effective["segment.ms"] == 5000
    assert effective["retention.ms"] == 1000
    with pytest.raises(InvalidConfigError):
        effective_topic_config(config, {"retention.ms": "soon"})


TOPIC_ONLY = {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
"""Topic configs without a broker synonym, as in Kafka."""


def test_every_topic_config_names_an_existing_broker_synonym_of_the_same_type() -> None:
    for name, topic_def in TOPIC_CONFIGS.items():
        if name in TOPIC_ONLY:
            assert topic_def.synonym is None
            continue
        assert topic_def.synonym in BROKER_CONFIGS, name
        broker_def = BROKER_CONFIGS[topic_def.synonym]
        assert (topic_def.type, topic_def.default) == (broker_def.type, broker_def.default), name


def test_throttled_replica_lists_take_star_or_partition_broker_entries() -> None:
    assert validate_topic_configs({"leader.replication.throttled.replicas": "0:1,1:2"}) == {
        "leader.replication.throttled.replicas": ["0:1", "1:2"]}
    assert validate_topic_configs({"follower.replication.throttled.replicas": "*"})
    with pytest.raises(InvalidConfigError):
        validate_topic_configs({"leader.replication.throttled.replicas": "0-1"})
    assert BrokerConfig({}).topic_defaults()["follower.replication.throttled.replicas"] == []
