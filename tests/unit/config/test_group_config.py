"""Kafka's group configs (odradek/config/group.py): GroupConfig.CONFIG_DEF's names, types and
defaults, GroupConfig.validate's messages against the broker's bounds, the effective values the
coordinators read, and share.auto.offset.reset with Java's Duration.parse."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kio.schema.errors import ErrorCode

from odradek.config import kafka_catalogue as kafka
from odradek.config.group import (
    BOUNDS,
    GROUP_CONFIGS,
    AutoOffsetReset,
    auto_offset_reset,
    duration_ms,
    group_config,
    validate_group_configs,
)
from odradek.config.kafka_configs import (
    BROKER_CONFIGS,
    BrokerConfig,
    ConfigType,
    InvalidConfigError,
)
from odradek.group.consumer_handlers import SESSION_TIMER
from odradek.metadata.image import ClusterMetadata, MetadataError
from odradek.metadata.records import ConfigRecord
from tests.unit.group.test_group_consumer import GROUP, Harness

BROKER = BrokerConfig({})


def test_the_catalogue_is_kafka_4_3_groupconfig() -> None:
    assert list(GROUP_CONFIGS) == [
        "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
        "consumer.assignment.interval.ms", "share.session.timeout.ms",
        "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
        "share.delivery.count.limit", "share.partition.max.record.locks",
        "share.auto.offset.reset", "share.isolation.level", "share.renew.acknowledge.enable",
        "share.assignment.interval.ms", "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms"]
    for definition in GROUP_CONFIGS.values():
        if definition.synonym is not None:
            # every synonym is one of Kafka's broker configs, and supplies the default
            assert kafka.BROKER[definition.synonym][0] == "INT"
            assert str(definition.default) == kafka.BROKER[definition.synonym][1]
    assert {n: d.default for n, d in GROUP_CONFIGS.items() if d.synonym is None} == {
        "share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted",
        "share.renew.acknowledge.enable": True}
    assert GROUP_CONFIGS["share.renew.acknowledge.enable"].type is ConfigType.BOOLEAN


def test_every_bound_is_a_broker_config_odradek_documents() -> None:
    """The bounds are Kafka's broker configs (type, default, range from its catalogue), with
    Kafka's documentation, so that DescribeConfigs of a broker documents them."""
    bounds = {name for low, high in BOUNDS.values() for name in (low, high) if name}
    assert len(bounds) == 25
    for name in bounds:
        assert BROKER_CONFIGS[name].doc, name
        assert str(BROKER_CONFIGS[name].default) == kafka.BROKER[name][1], name


def refusal(overrides: dict[str, str], broker: BrokerConfig = BROKER) -> str:
    with pytest.raises(InvalidConfigError) as raised:
        validate_group_configs(overrides, broker)
    return str(raised.value)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"no.such.config": "1"}, "Unknown group config name: no.such.config"),
    ({"share.record.lock.duration.ms": "abc"},
     "Invalid value abc for configuration share.record.lock.duration.ms: "
     "Not a number of type INT"),
    ({"share.record.lock.duration.ms": "500"},
     "Invalid value 500 for configuration share.record.lock.duration.ms: "
     "Value must be at least 1000"),
    ({"share.record.lock.duration.ms": "5000"},
     "share.record.lock.duration.ms must be greater than or equal to "
     "group.share.min.record.lock.duration.ms"),
    ({"share.record.lock.duration.ms": "70000"},
     "share.record.lock.duration.ms must be less than or equal to "
     "group.share.max.record.lock.duration.ms"),
    ({"share.delivery.count.limit": "11"},
     "share.delivery.count.limit must be less than or equal to "
     "group.share.max.delivery.count.limit"),
    ({"share.partition.max.record.locks": "99"},
     "Invalid value 99 for configuration share.partition.max.record.locks: "
     "Value must be at least 100"),
    ({"consumer.session.timeout.ms": "44999"},
     "consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ({"consumer.heartbeat.interval.ms": "15001"},
     "consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ({"share.auto.offset.reset": "none"},
     "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for "
     "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or "
     "of the format 'by_duration:<PnDTnHnMn.nS>'."),
    ({"share.auto.offset.reset": "by_duration:-PT1H"},
     "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
     "`by_duration:-PT1H`"),
    ({"share.isolation.level": "READ_COMMITTED"},
     "Invalid value READ_COMMITTED for configuration share.isolation.level: "
     "String must be one of: read_committed, read_uncommitted"),
    ({"share.renew.acknowledge.enable": "yes"},
     "Invalid value yes for configuration share.renew.acknowledge.enable: "
     "Expected value to be either true or false"),
    ({"streams.num.standby.replicas": "3"},
     "streams.num.standby.replicas must be less than or equal to "
     "group.streams.max.standby.replicas"),
    ({"consumer.assignment.interval.ms": "15001"},
     "consumer.assignment.interval.ms must be less than or equal to "
     "group.consumer.max.assignment.interval.ms"),
])
def test_bad_values_are_refused_with_kafkas_message(overrides: dict[str, str],
                                                    message: str) -> None:
    assert refusal(overrides).startswith(message)


def test_the_session_timeout_must_exceed_the_heartbeat_interval() -> None:
    loose = BrokerConfig({"group.share.min.session.timeout.ms": "1000",
                          "group.share.min.heartbeat.interval.ms": "1000"})
    assert refusal({"share.session.timeout.ms": "5000"}, loose) == (
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
    validate_group_configs({"share.session.timeout.ms": "5001"}, loose)


def test_good_values_pass_and_bounds_follow_the_broker() -> None:
    validate_group_configs({
        "share.record.lock.duration.ms": "15000", "share.delivery.count.limit": "2",
        "share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
        "share.renew.acknowledge.enable": "FALSE", "consumer.session.timeout.ms": "60000"},
        BROKER)
    validate_group_configs({"share.auto.offset.reset": "by_duration:P1DT2H"}, BROKER)
    wider = BrokerConfig({"group.share.min.record.lock.duration.ms": "1000"})
    validate_group_configs({"share.record.lock.duration.ms": "5000"}, wider)


def test_effective_values_for_the_coordinators() -> None:
    plain = group_config({}, BROKER)
    assert (plain.consumer_session_timeout_ms, plain.share_record_lock_duration_ms,
            plain.share_delivery_count_limit, plain.share_auto_offset_reset,
            plain.share_isolation_level, plain.share_read_committed) == (
        45000, 30000, 5, "latest", "read_uncommitted", False)
    static = BrokerConfig({"group.share.record.lock.duration.ms": "20000"})
    assert group_config({}, static).share_record_lock_duration_ms == 20000
    assert group_config({"share.record.lock.duration.ms": "16000",
                         "share.isolation.level": "read_committed",
                         "share.auto.offset.reset": "by_duration:PT1M"}, static) == replace(
        group_config({}, static), share_record_lock_duration_ms=16000,
        share_isolation_level="read_committed", share_auto_offset_reset="by_duration:PT1M")
    # bounds narrowed since the override was set: the override counts clamped into them
    narrowed = BrokerConfig({"group.share.min.record.lock.duration.ms": "25000"})
    assert group_config({"share.record.lock.duration.ms": "16000"},
                        narrowed).share_record_lock_duration_ms == 25000
    reset = group_config({"share.auto.offset.reset": "by_duration:PT1M"}, BROKER).share_reset
    assert reset == AutoOffsetReset("by_duration", 60_000)


@pytest.mark.parametrize(("text", "millis"), [
    ("PT1H", 3_600_000), ("P2D", 172_800_000), ("PT0.5S", 500), ("pt1m", 60_000),
    ("P1DT1H1M1.001S", 90_061_001), ("-PT6H", -21_600_000), ("PT-6H3M", -21_420_000),
    ("PT1,25S", 1250),
])
def test_durations_parse_as_java_does(text: str, millis: int) -> None:
    assert duration_ms(text) == millis


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "PT1", "P1H", "PT1.S1"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        duration_ms(text)


def test_auto_offset_reset() -> None:
    assert auto_offset_reset("earliest") == AutoOffsetReset("earliest")
    assert auto_offset_reset("by_duration:PT0S") == AutoOffsetReset("by_duration", 0)
    for text in ("none", "by_duration", "by_duration:", "Earliest", "by_duration:-PT1S"):
        with pytest.raises(ValueError):
            auto_offset_reset(text)


def test_the_image_keeps_group_configs_as_the_controller_writes_them() -> None:
    """ClusterMetadata: alter_group_configs validates the group's configs as they would be
    and returns ConfigRecords (type 32) that replay into `group_configs` and survive a
    snapshot (to_records); deleting the last config forgets the group."""
    image = ClusterMetadata()
    records = image.alter_group_configs("g", {"share.auto.offset.reset": "earliest",
                                              "share.delivery.count.limit": "3"}, BROKER)
    assert records == [ConfigRecord(32, "g", "share.auto.offset.reset", "earliest"),
                       ConfigRecord(32, "g", "share.delivery.count.limit", "3")]
    for record in records:
        image.replay(record)
    restored = ClusterMetadata()
    for record in image.to_records():
        restored.replay(record)
    assert restored.group_configs == {"g": {"share.auto.offset.reset": "earliest",
                                            "share.delivery.count.limit": "3"}}
    with pytest.raises(MetadataError) as raised:  # validated merged with what is set
        image.alter_group_configs("g", {"share.delivery.count.limit": "11"}, BROKER)
    assert raised.value.error_code == ErrorCode.invalid_config
    with pytest.raises(MetadataError) as raised:
        image.alter_group_configs("", {}, BROKER)
    assert (raised.value.error_code, raised.value.message) == (
        ErrorCode.invalid_request, "Default group resources are not allowed.")
    for record in image.alter_group_configs("g", {"share.auto.offset.reset": None,
                                                  "share.delivery.count.limit": None}, BROKER):
        image.replay(record)
    assert image.group_configs == {}


def test_the_consumer_group_coordinator_reads_the_groups_own_timeouts() -> None:
    """KIP-848 heartbeats: the interval given to members and the session deadline come from
    the group's consumer.heartbeat.interval.ms and consumer.session.timeout.ms when it has
    them (GroupMetadataManager.consumerGroupSessionTimeoutMs), else from the broker's."""
    own = {GROUP: group_config({"consumer.session.timeout.ms": "50000",
                                "consumer.heartbeat.interval.ms": "6000"}, BROKER)}
    h = Harness()
    h.ctx.group_configs = lambda group_id: own.get(group_id) or group_config({}, BROKER)
    response = h.join("a", assignor="range")
    assert response.heartbeat_interval_ms == 6000
    assert h.ctx.timers.deadline((SESSION_TIMER, GROUP, "a")) == h.ctx.now_ms + 50000
    own.clear()
    h.ctx.now_ms += 1000
    response = h.send("a", 1)
    assert response.heartbeat_interval_ms == 5000
    assert h.ctx.timers.deadline((SESSION_TIMER, GROUP, "a")) == h.ctx.now_ms + 45000
