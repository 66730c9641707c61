"""Kafka's group configs (GroupConfig; ConfigResource type GROUP): what an admin sets per group
with IncrementalAlterConfigs, its validation against the broker's bounds, and each group's
effective values. Without IO: the broker's values come in as a mapping.

- `GROUP_CONFIGS`: every config of Kafka 4.3.1's GroupConfig.CONFIG_DEF, with its type, Kafka's
  static default, validator, documentation and `synonym`: the broker config that supplies its
  default (`share.record.lock.duration.ms` -> `group.share.record.lock.duration.ms`), None for
  the three that have none (`share.auto.offset.reset`, `share.isolation.level`,
  `share.renew.acknowledge.enable`).
- `validate_group_configs(overrides, broker)`: Kafka's GroupConfig.validate, run by the
  controller on a group's overrides as they would be after a change; raises InvalidConfigError
  with Kafka's messages (an unknown name, a bad value, a value outside the broker's
  `group.*.min.*`/`group.*.max.*` bounds, a session timeout not above the heartbeat interval).
- The read API of the coordinators: `group_config(overrides, broker)` is a group's
  `EffectiveGroupConfig`, a frozen dataclass with one attribute per config (dots as underscores:
  `share_record_lock_duration_ms`, `share_auto_offset_reset`, ...). An override counts clamped
  into the broker's current bounds (GroupConfigManager's evaluate: bounds may have changed
  since it was set); an unset config is its synonym's broker value, else Kafka's default. The
  broker serves it per group id as `Broker.group_config(group_id)`.
  `auto_offset_reset(text)` reads `share.auto.offset.reset` (`earliest`, `latest`,
  `by_duration:<ISO-8601 duration>`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Protocol

from odradek.config import kafka_catalogue as kafka
from odradek.config.catalogue import kafka_validator
from odradek.config.kafka_configs import (
    ConfigDef,
    ConfigType,
    InvalidConfigError,
    Validator,
    Value,
    parse_value,
)

AUTO_OFFSET_RESET_CHOICES = "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'"
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


class BrokerValues(Protocol):
    """A broker's current config values by name (BrokerConfig is one)."""

    def __getitem__(self, name: str) -> Value: ...


def duration_ms(text: str) -> int:
    """Java's Duration.parse (`PnDTnHnMn.nS`, e.g. `PT1H`, `P1DT30M`, `PT0.5S`) in whole
    milliseconds; raises ValueError on anything else."""
    match = _DURATION.fullmatch(text)
    if match is None or match[3] == "T" or not any(match[i] for i in (2, 3)):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    whole_ms = sum(int(part or 0) * unit for part, unit in (
        (days, 86_400_000), (hours, 3_600_000), (minutes, 60_000), (seconds, 1000)))
    fraction_ms = int((fraction or "").ljust(9, "0")) // 1_000_000
    if seconds and seconds.startswith("-"):
        fraction_ms = -fraction_ms
    total = whole_ms + fraction_ms
    return -total if sign == "-" else total


@dataclass(frozen=True, slots=True)
class AutoOffsetReset:
    """A share group's `share.auto.offset.reset`: `earliest`, `latest`, or `by_duration` with
    how far back from now the start offset is looked up by timestamp."""

    strategy: str
    duration_ms: int | None = None


def auto_offset_reset(text: str) -> AutoOffsetReset:
    """ShareGroupAutoOffsetResetStrategy.fromString; raises ValueError (`none` too)."""
    if text in ("earliest", "latest"):
        return AutoOffsetReset(text)
    if text.startswith("by_duration:"):
        duration = duration_ms(text[len("by_duration:"):])
        if duration < 0:
            raise ValueError("Negative duration is not supported in by_duration offset reset "
                             "strategy.")
        return AutoOffsetReset("by_duration", duration)
    raise ValueError(f"Unknown auto offset reset strategy: {text}")


def _valid_reset(value: Value) -> str | None:
    assert isinstance(value, str)
    try:
        auto_offset_reset(value)
    except ValueError:
        return (f"Invalid value `{value}` for configuration share.auto.offset.reset. "
                f"The value must be either {AUTO_OFFSET_RESET_CHOICES}.")
    return None


def _range(text: str) -> Validator:
    check = kafka_validator(text)
    assert check is not None
    return check


def _int(name: str, at_least: int, doc: str, synonym: str) -> ConfigDef:
    """An INT group config; its default is its broker synonym's (GroupCoordinatorConfig's)."""
    default = int(kafka.BROKER[synonym][1] or 0)
    return ConfigDef(name, ConfigType.INT, default, doc, _range(f"[{at_least},...]"), synonym)


_ISOLATION_LEVELS = "[read_committed, read_uncommitted]"

GROUP_CONFIGS: dict[str, ConfigDef] = {definition.name: definition for definition in (
    _int("consumer.session.timeout.ms", 1, "The timeout to detect client failures when "
         "using the consumer group protocol.", "group.consumer.session.timeout.ms"),
    _int("consumer.heartbeat.interval.ms", 1, "The heartbeat interval given to the "
         "members of a consumer group.", "group.consumer.heartbeat.interval.ms"),
    _int("consumer.assignment.interval.ms", 0, "The interval between assignment updates "
         "for a consumer group.", "group.consumer.assignment.interval.ms"),
    _int("share.session.timeout.ms", 1, "The timeout to detect client failures when "
         "using the share group protocol.", "group.share.session.timeout.ms"),
    _int("share.heartbeat.interval.ms", 1, "The heartbeat interval given to the members "
         "of a share group.", "group.share.heartbeat.interval.ms"),
    _int("share.record.lock.duration.ms", 1000, "The record acquisition lock duration "
         "in milliseconds for share groups.", "group.share.record.lock.duration.ms"),
    _int("share.delivery.count.limit", 2, "The maximum number of delivery attempts for a "
         "record delivered to a share group.", "group.share.delivery.count.limit"),
    _int("share.partition.max.record.locks", 100, "Share-group record lock limit per "
         "share-partition.", "group.share.partition.max.record.locks"),
    ConfigDef("share.auto.offset.reset", ConfigType.STRING, "latest", "The strategy to "
              "initialize the share-partition start offset. <ul><li>earliest: automatically "
              "reset the offset to the earliest offset</li><li>latest: automatically reset the "
              "offset to the latest offset</li><li>by_duration:&lt;duration&gt;: automatically "
              "reset the offset to a configured duration from the current timestamp. "
              "&lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). Negative "
              "duration is not allowed.</li><li>anything else: throw exception to the share "
              "consumer.</li></ul>", _valid_reset),
    ConfigDef("share.isolation.level", ConfigType.STRING, "read_uncommitted", "Controls how to "
              "read records written transactionally. If set to \"read_committed\", the share "
              "group will only deliver transactional records which have been committed. If set "
              "to \"read_uncommitted\", the share group will return all messages, even "
              "transactional messages which have been aborted. Non-transactional records will "
              "be returned unconditionally in either mode.", _range(_ISOLATION_LEVELS)),
    ConfigDef("share.renew.acknowledge.enable", ConfigType.BOOLEAN, True, "Whether the renew "
              "acknowledge type is enabled for the share group."),
    _int("share.assignment.interval.ms", 0, "The interval between assignment updates "
         "for a share group.", "group.share.assignment.interval.ms"),
    _int("streams.session.timeout.ms", 1, "The timeout to detect client failures when "
         "using the streams group protocol.", "group.streams.session.timeout.ms"),
    _int("streams.heartbeat.interval.ms", 1, "The heartbeat interval given to the "
         "members.", "group.streams.heartbeat.interval.ms"),
    _int("streams.num.standby.replicas", 0, "The number of standby replicas for each task.",
         "group.streams.num.standby.replicas"),
    _int("streams.initial.rebalance.delay.ms", 0, "The amount of time the group "
         "coordinator will wait for more streams clients to join a new group before performing "
         "the first rebalance. A longer delay means potentially fewer rebalances.",
         "group.streams.initial.rebalance.delay.ms"),
    _int("streams.assignment.interval.ms", 0, "The interval between assignment updates "
         "for a streams group.", "group.streams.assignment.interval.ms"),
)}
"""GroupConfig.CONFIG_DEF, in its order (the order Kafka validates in)."""

BOUNDS: dict[str, tuple[str | None, str]] = {
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms",
                                    "group.consumer.max.session.timeout.ms"),
    "consumer.assignment.interval.ms": ("group.consumer.min.assignment.interval.ms",
                                        "group.consumer.max.assignment.interval.ms"),
    "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms",
                                    "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("group.share.min.session.timeout.ms",
                                 "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": ("group.share.min.delivery.count.limit",
                                   "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": ("group.share.min.partition.max.record.locks",
                                         "group.share.max.partition.max.record.locks"),
    "share.assignment.interval.ms": ("group.share.min.assignment.interval.ms",
                                     "group.share.max.assignment.interval.ms"),
    "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms",
                                      "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": ("group.streams.min.session.timeout.ms",
                                   "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
    "streams.assignment.interval.ms": ("group.streams.min.assignment.interval.ms",
                                       "group.streams.max.assignment.interval.ms"),
}
"""The broker configs bounding a group config (min, max), in the order GroupConfig checks
them."""
CHECKED_ONLY_WHEN_SET = frozenset({"consumer.assignment.interval.ms",
                                   "share.assignment.interval.ms",
                                   "streams.assignment.interval.ms"})
"""Bounded only when the group sets them (their broker defaults are dynamic, KAFKA-20337)."""
SESSION_OVER_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                          ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                          ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))
_BROKER_DEFAULTED = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
                     "share.session.timeout.ms", "share.heartbeat.interval.ms",
                     "share.record.lock.duration.ms", "share.delivery.count.limit",
                     "share.partition.max.record.locks", "streams.session.timeout.ms",
                     "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
                     "streams.initial.rebalance.delay.ms")
"""GroupCoordinatorConfig.extractGroupConfigMap: the broker values validation starts from."""


def _int_value(broker: BrokerValues, name: str) -> int:
    value = broker[name]
    assert isinstance(value, int)
    return value


def validate_group_configs(overrides: Mapping[str, str], broker: BrokerValues) -> None:
    """GroupConfig.validate of a group's overrides over the broker's values; raises
    InvalidConfigError with Kafka's message."""
    unknown = [name for name in overrides if name not in GROUP_CONFIGS]
    if unknown:
        raise InvalidConfigError(f"Unknown group config name: {unknown[0]}")
    values: dict[str, Value] = {}
    for name, definition in GROUP_CONFIGS.items():
        if name in overrides:
            values[name] = parse_value(definition, overrides[name])
        elif name in _BROKER_DEFAULTED:
            values[name] = _int_value(broker, definition.synonym or name)
        else:
            values[name] = definition.default
    for name, (low, high) in BOUNDS.items():
        if name in CHECKED_ONLY_WHEN_SET and name not in overrides:
            continue
        value = values[name]
        assert isinstance(value, int)
        if low is not None and value < _int_value(broker, low):
            raise InvalidConfigError(f"{name} must be greater than or equal to {low}")
        if value > _int_value(broker, high):
            raise InvalidConfigError(f"{name} must be less than or equal to {high}")
    for session, heartbeat in SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:  # type: ignore[operator]
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")


@dataclass(frozen=True, slots=True)
class EffectiveGroupConfig:
    """A group's effective configs (see the module's docstring)."""

    consumer_session_timeout_ms: int
    consumer_heartbeat_interval_ms: int
    consumer_assignment_interval_ms: int
    share_session_timeout_ms: int
    share_heartbeat_interval_ms: int
    share_record_lock_duration_ms: int
    share_delivery_count_limit: int
    share_partition_max_record_locks: int
    share_auto_offset_reset: str
    share_isolation_level: str
    share_renew_acknowledge_enable: bool
    share_assignment_interval_ms: int
    streams_session_timeout_ms: int
    streams_heartbeat_interval_ms: int
    streams_num_standby_replicas: int
    streams_initial_rebalance_delay_ms: int
    streams_assignment_interval_ms: int

    @property
    def share_read_committed(self) -> bool:
        return self.share_isolation_level == "read_committed"

    @property
    def share_reset(self) -> AutoOffsetReset:
        return auto_offset_reset(self.share_auto_offset_reset)


def effective_value(name: str, overrides: Mapping[str, str], broker: BrokerValues) -> Value:
    """One config's effective value: the override clamped into the broker's bounds, else the
    broker value of its synonym, else Kafka's default."""
    definition = GROUP_CONFIGS[name]
    if name not in overrides:
        return broker[definition.synonym] if definition.synonym else definition.default
    value = parse_value(definition, overrides[name])
    low, high = BOUNDS.get(name, (None, None))
    if isinstance(value, int) and not isinstance(value, bool):
        if low is not None:
            value = max(value, _int_value(broker, low))
        if high is not None:
            value = min(value, _int_value(broker, high))
    return value


def group_config(overrides: Mapping[str, str], broker: BrokerValues) -> EffectiveGroupConfig:
    """A group's effective configs from its overrides and the broker's values."""
    values = {field.name: effective_value(field.name.replace("_", "."), overrides, broker)
              for field in fields(EffectiveGroupConfig)}
    return EffectiveGroupConfig(**values)  # type: ignore[arg-type]
