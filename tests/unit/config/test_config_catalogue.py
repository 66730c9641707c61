"""Kafka's config catalogue (odradek/config/kafka_catalogue.py, generated from Kafka's own
classes) in Odradek's config layer: every Kafka config is accepted, validated and described as
Kafka does, and Odradek's own definitions agree with Kafka's except where
tests/config_differences.py says why not."""

from __future__ import annotations

import pytest

from odradek.config import kafka_catalogue as kafka
from odradek.config.catalogue import broker_synonyms, java_double, kafka_validator, update_mode
from odradek.config.kafka_configs import (
    ALL_TOPIC_CONFIGS,
    BROKER_CONFIGS,
    LISTED_BROKER_CONFIGS,
    LISTED_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigSource,
    ConfigType,
    InvalidConfigError,
    broker_config_def,
    format_value,
    validate_dynamic_broker_configs,
    validate_topic_configs,
)
from tests.config_differences import APPLIED_AT_START, ODRADEK_ONLY, OWN_DEFAULTS


def test_the_catalogue_is_kafka_4() -> None:
    assert kafka.KAFKA_VERSION.startswith("4.")
    assert len(kafka.BROKER) > 300 and len(kafka.TOPIC) > 30


@pytest.mark.parametrize("name", sorted(BROKER_CONFIGS))
def test_own_broker_configs_agree_with_kafka(name: str) -> None:
    entry = kafka.BROKER.get(name) or kafka.BROKER_DYNAMIC_ONLY.get(name)
    definition = BROKER_CONFIGS[name]
    if entry is None:
        assert name in ODRADEK_ONLY
        return
    type_name, default, _, _, mode, _ = entry
    assert definition.type.name == type_name
    assert (format_value(definition.default) == default) != (name in OWN_DEFAULTS)
    assert (definition.read_only == (mode == "read-only")) != (name in APPLIED_AT_START)


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_own_topic_configs_agree_with_kafka(name: str) -> None:
    type_name, default, _, _, synonym, _ = kafka.TOPIC[name]
    definition = TOPIC_CONFIGS[name]
    assert (definition.type.name, format_value(definition.default), definition.synonym) == (
        type_name, default, synonym)


def test_every_kafka_config_is_known() -> None:
    assert set(kafka.BROKER) | set(kafka.BROKER_DYNAMIC_ONLY) <= {
        n for n in [*kafka.BROKER, *kafka.BROKER_DYNAMIC_ONLY] if broker_config_def(n)}
    assert set(kafka.TOPIC) <= set(ALL_TOPIC_CONFIGS)
    # Internal configs and those outside the broker's ConfigDef are listed only once set.
    assert "producer.id.expiration.check.interval.ms" not in LISTED_BROKER_CONFIGS
    assert "leader.replication.throttled.rate" not in LISTED_BROKER_CONFIGS
    assert "internal.segment.bytes" not in LISTED_TOPIC_CONFIGS
    assert {"sasl.kerberos.min.time.before.relogin", "num.network.threads",
            "metrics.port"} <= LISTED_BROKER_CONFIGS


def test_a_config_odradek_does_not_act_on_is_accepted_per_broker() -> None:
    """librdkafka's admin test 0081 sets sasl.kerberos.min.time.before.relogin."""
    config = BrokerConfig({"node.id": "1"})
    config.set_dynamic({"sasl.kerberos.min.time.before.relogin": "58000"}, "1")
    assert config["sasl.kerberos.min.time.before.relogin"] == 58000
    assert config.described_value("sasl.kerberos.min.time.before.relogin") == "58000"
    assert config.synonyms("sasl.kerberos.min.time.before.relogin") == [
        ("sasl.kerberos.min.time.before.relogin", ConfigSource.DYNAMIC_BROKER_CONFIG, "58000"),
        ("sasl.kerberos.min.time.before.relogin", ConfigSource.DEFAULT_CONFIG, "60000")]
    assert broker_config_def("sasl.kerberos.min.time.before.relogin").type is ConfigType.LONG
    with pytest.raises(InvalidConfigError, match="default cluster level"):
        config.set_dynamic({"sasl.kerberos.min.time.before.relogin": "58000"}, "")


@pytest.mark.parametrize(
    ("changes", "cluster_default", "message"),
    [
        ({"num.io.threads": "4"}, True, None),
        ({"background.threads": "0"}, True, "at least 1"),
        ({"num.io.threads": "many"}, True, "Not a number of type INT"),
        ({"num.network.threads": "x", "auto.create.topics.enable": "false"}, True,
         r"dynamically: Set\(auto.create.topics.enable\)"),
        ({"num.partitions": "3"}, False, r"dynamically: Set\(num.partitions\)"),
        ({"ssl.keystore.location": "/k"}, False, "dynamically"),
        ({"ssl.engine.factory.class": "x"}, False, None),
        ({"listener.name.external.ssl.engine.factory.class": "x"}, False, None),
        ({"listener.name.external.ssl.engine.factory.class": "x"}, True, "default cluster"),
        ({"listener.name.external.num.network.threads": "4"}, True, None),
        # Odradek applies max.connections at start only, per listener too.
        ({"listener.name.external.max.connections": "10"}, True, "dynamically"),
        ({"listener.name.external.ssl.keystore.location": "/k"}, False, "dynamically"),
        ({"some.plugin.config": "x"}, True, None),
        ({"leader.replication.throttled.rate": "-5"}, True, "at least 0"),
    ],
)
def test_dynamic_validation_is_kafkas(changes: dict[str, str | None], cluster_default: bool,
                                      message: str | None) -> None:
    if message is None:
        validate_dynamic_broker_configs(changes, cluster_default)
    else:
        with pytest.raises(InvalidConfigError, match=message):
            validate_dynamic_broker_configs(changes, cluster_default)


def test_unknown_dynamic_configs_are_kept_and_described_as_unknown() -> None:
    config = BrokerConfig({"node.id": "1"})
    config.set_dynamic({"some.plugin.config": "x"}, "")
    assert "some.plugin.config" in config.described_names()
    assert config.described_value("some.plugin.config") == "x"
    assert broker_config_def("some.plugin.config") is None


def test_kafka_configs_are_accepted_in_server_properties() -> None:
    config = BrokerConfig({"num.network.threads": "3", "log.retention.hours": "48",
                           "listener.name.external.ssl.engine.factory.class": "x"})
    assert config["num.network.threads"] == 3
    assert config.integer("log.retention.ms") == 48 * 3_600_000
    with pytest.raises(InvalidConfigError, match="num.network.threads"):
        BrokerConfig({"num.network.threads": "0"})
    with pytest.raises(InvalidConfigError, match="listener.name.external.log.dir"):
        BrokerConfig({"listener.name.external.log.dir": "/x"})


def test_described_values_follow_kafkas_names() -> None:
    """Kafka reports log.retention.ms as null when only log.retention.hours is set, and lists
    the synonyms from the first under the config's own name."""
    config = BrokerConfig({"log.retention.hours": "48"})
    assert config.described_value("log.retention.ms") is None
    assert config.synonyms("log.retention.ms") == []
    assert config.described_value("log.retention.hours") == "48"
    assert config.synonyms("log.retention.hours") == [
        ("log.retention.hours", ConfigSource.STATIC_BROKER_CONFIG, "48"),
        ("log.retention.hours", ConfigSource.DEFAULT_CONFIG, "168")]
    assert config.described_value("log.cleaner.io.max.bytes.per.second") == (
        "1.7976931348623157E308")
    assert config.described_value("ssl.keystore.password") is None


@pytest.mark.parametrize(
    ("raw", "accepted"),
    [
        ({"compression.gzip.level": "5"}, True),
        ({"compression.gzip.level": "10"}, True),  # "[1,...,9] or -1": not checked here
        ({"compression.zstd.level": "23"}, False),
        ({"local.retention.ms": "-3"}, False),
        ({"remote.storage.enable": "false"}, True),
        ({"remote.storage.enable": "true"}, False),
        ({"no.such.topic.config": "1"}, False),
    ],
)
def test_topic_configs_odradek_does_not_act_on(raw: dict[str, str | None],
                                               accepted: bool) -> None:
    if accepted:
        assert set(validate_topic_configs(raw)) == set(raw)
    else:
        with pytest.raises(InvalidConfigError):
            validate_topic_configs(raw)


def test_topic_defaults_come_from_kafkas_broker_synonyms() -> None:
    defaults = BrokerConfig({"log.local.retention.ms": "5000"}).topic_defaults()
    assert defaults["local.retention.ms"] == 5000
    assert defaults["compression.zstd.level"] == 3
    assert defaults["remote.storage.enable"] is False


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (0.9, "0.9"), (10.0, "10.0"), (1e7, "1.0E7"), (0.0001, "1.0E-4"),
     (1.7976931348623157e308, "1.7976931348623157E308"), (0.0, "0.0"), (-2.5e10, "-2.5E10")],
)
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


def test_kafka_validators() -> None:
    at_least_one = kafka_validator("[1,...]")
    between = kafka_validator("[0,...,0.5]")
    choices = kafka_validator("[compact, delete]")
    assert at_least_one is not None and between is not None and choices is not None
    assert (at_least_one(1), at_least_one(0)) == (None, "Value must be at least 1")
    assert (between(0.5), between(0.6)) == (None, "Value must be no more than 0.5")
    assert (choices(["compact"]), choices(["gone"])) == (
        None, "String must be one of: compact, delete")
    assert kafka_validator("non-empty string") is None
    assert kafka_validator("[1,...,9] or -1") is None


def test_update_modes_and_synonyms() -> None:
    assert update_mode("ssl.keystore.location") == "per-broker"
    assert update_mode("log.cleaner.threads") == "cluster-wide"
    assert update_mode("node.id") == "read-only"
    assert update_mode("leader.replication.throttled.rate") == "cluster-wide"
    assert broker_synonyms("log.roll.hours") == ("log.roll.ms", "log.roll.hours")
    assert broker_synonyms("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config") == (
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", "sasl.jaas.config")
    assert broker_synonyms("message.max.bytes") == ("message.max.bytes",)
