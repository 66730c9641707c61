"""Kafka's broker and topic configs: names, types, defaults and validation, in one table.

Every default Odradek uses comes from here. Topic configs fall back to their broker synonym
(`retention.ms` -> `log.retention.ms`), as in Kafka.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from odradek.config import kafka_catalogue as kafka
from odradek.config.catalogue import (
    CLUSTER_LEVEL_LISTENER_CONFIGS,
    broker_synonyms,
    java_double,
    kafka_validator,
    listener_base,
    update_mode,
)
from odradek.replication.read_replica import RACK_AWARE_SELECTOR
from odradek.replication.throttle import valid_entry
from odradek.security.authorizer import STANDARD_AUTHORIZER, valid_super_users

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


class ConfigType(enum.IntEnum):
    """DescribeConfigs' configType values."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigs' configSource values."""

    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8
    """A group's own config (the Admin client's DYNAMIC_GROUP_CONFIG)."""


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
"""Kafka's default listener.security.protocol.map: each protocol names a listener of itself."""


class InvalidConfigError(ValueError):
    """A config name or value that Kafka would answer with INVALID_CONFIG."""


_INTEGER_BOUNDS = {ConfigType.SHORT: 32767, ConfigType.INT: INT_MAX, ConfigType.LONG: LONG_MAX}

Value = bool | int | float | str | list[str] | None
Validator = Callable[[Value], str | None]


def at_least(minimum: int | float) -> Validator:
    def check(value: Value) -> str | None:
        if value is None or value < minimum:  # type: ignore[operator]
            return f"must be at least {minimum}"
        return None

    return check


def throttled_replicas(value: Value) -> str | None:
    """`*` or partition:broker entries."""
    assert isinstance(value, list)
    bad = [entry for entry in value if not valid_entry(entry)]
    return f"expected * or partition:broker entries, got {bad}" if bad else None


def per_ip_overrides(value: Value) -> str | None:
    """`host:count` entries, comma-separated."""
    assert isinstance(value, str)
    for entry in filter(None, (item.strip() for item in value.split(","))):
        host, colon, count = entry.rpartition(":")
        if not colon or not host or not count.isdigit():
            return f"expected host:count entries, got {entry!r}"
    return None


def one_of(*choices: str) -> Validator:
    def check(value: Value) -> str | None:
        items = value if isinstance(value, list) else [value]
        bad = [item for item in items if item not in choices]
        return f"must be one of {', '.join(choices)}" if bad or not items else None

    return check


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Value
    doc: str
    validator: Validator | None = None
    synonym: str | None = None
    """For topic configs: the broker config that supplies the default."""
    read_only: bool = False
    """Broker configs that cannot be changed without a restart."""


def parse_value(definition: ConfigDef, raw: str | None) -> Value:
    """Parse a raw string as Kafka does, then validate it; raises InvalidConfigError."""
    name = definition.name
    if raw is None:
        nullable = definition.type in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS)
        if nullable and definition.default is None:
            return None
        raise InvalidConfigError(f"Null value not supported for {name}")
    text = raw.strip()
    value: Value
    try:
        match definition.type:
            case ConfigType.BOOLEAN:
                if text.lower() not in ("true", "false"):
                    raise ValueError(text)
                value = text.lower() == "true"
            case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
                if "_" in text:  # Python's int() takes 1_000; Java's parseInt does not
                    raise ValueError(text)
                value = int(text)
                bound = _INTEGER_BOUNDS[definition.type]
                if not -bound - 1 <= value <= bound:
                    raise ValueError(text)
            case ConfigType.DOUBLE:
                if "_" in text:
                    raise ValueError(text)
                value = float(text)
            case ConfigType.LIST:
                value = [item.strip() for item in text.split(",") if item.strip()]
            case _:
                value = text
    except ValueError:
        # ConfigDef.parseType's words
        words = ("Expected value to be either true or false"
                 if definition.type is ConfigType.BOOLEAN
                 else f"Not a number of type {definition.type.name}")
        raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: {words}"
                                 ) from None
    if definition.validator is not None:
        problem = definition.validator(value)
        if problem:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: {problem}")
    return value


def format_value(value: Value) -> str | None:
    """The string form Kafka reports in DescribeConfigs."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _defs(*items: ConfigDef) -> dict[str, ConfigDef]:
    return {item.name: item for item in items}


B, S, INT, L, D, LS, P = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)

def _catalogue_def(name: str, type_name: str, default: str | None, validator: str | None,
                   read_only: bool = False, synonym: str | None = None) -> ConfigDef:
    """A config Odradek does not act on, as Kafka's catalogue defines it."""
    definition = ConfigDef(name, ConfigType[type_name], None, "", kafka_validator(validator),
                           synonym, read_only)
    if default is None:
        return definition
    return replace(definition, default=parse_value(replace(definition, validator=None), default))


def _kafka_def(name: str, doc: str) -> ConfigDef:
    """A broker config of Kafka's catalogue (type, default, validator, update mode) that
    Odradek acts on, with Kafka's documentation."""
    type_name, default, _, _, mode, validator = kafka.BROKER[name]
    return replace(_catalogue_def(name, type_name, default, validator, mode == "read-only"),
                   doc=doc)


GROUP_BOUND_CONFIGS = (
    ("group.consumer.min.session.timeout.ms",
     "The minimum allowed session timeout for registered consumers."),
    ("group.consumer.max.session.timeout.ms",
     "The maximum allowed session timeout for registered consumers."),
    ("group.consumer.min.heartbeat.interval.ms",
     "The minimum heartbeat interval for registered consumers."),
    ("group.consumer.max.heartbeat.interval.ms",
     "The maximum heartbeat interval for registered consumers."),
    ("group.share.min.session.timeout.ms",
     "The minimum allowed session timeout for share group members."),
    ("group.share.max.session.timeout.ms",
     "The maximum allowed session timeout for share group members."),
    ("group.share.min.heartbeat.interval.ms",
     "The minimum heartbeat interval for share group members."),
    ("group.share.max.heartbeat.interval.ms",
     "The maximum heartbeat interval for share group members."),
    ("group.share.record.lock.duration.ms",
     "The record acquisition lock duration in milliseconds for share groups."),
    ("group.share.min.record.lock.duration.ms", "The minimum value of a group configuration "
     "for record acquisition lock duration in milliseconds."),
    ("group.share.max.record.lock.duration.ms", "The maximum value of a group configuration "
     "for record acquisition lock duration in milliseconds."),
    ("group.share.delivery.count.limit",
     "The maximum number of delivery attempts for a record delivered to a share group."),
    ("group.share.min.delivery.count.limit", "The minimum value of a group configuration for "
     "the maximum number of delivery attempts for a record delivered to a share group."),
    ("group.share.max.delivery.count.limit", "The maximum value of a group configuration for "
     "the maximum number of delivery attempts for a record delivered to a share group."),
    ("group.share.partition.max.record.locks",
     "Share-group record lock limit per share-partition."),
    ("group.share.min.partition.max.record.locks", "The minimum value of a group "
     "configuration for the record lock limit per share-partition."),
    ("group.share.max.partition.max.record.locks", "The maximum value of a group "
     "configuration for the record lock limit per share-partition."),
    ("group.consumer.min.assignment.interval.ms",
     "The minimum interval between assignment updates for a consumer group."),
    ("group.consumer.max.assignment.interval.ms",
     "The maximum interval between assignment updates for a consumer group."),
    ("group.share.min.assignment.interval.ms",
     "The minimum interval between assignment updates for a share group."),
    ("group.share.max.assignment.interval.ms",
     "The maximum interval between assignment updates for a share group."),
    ("group.streams.min.session.timeout.ms", "The minimum allowed value for the group-level "
     "configuration of streams.session.timeout.ms"),
    ("group.streams.max.session.timeout.ms", "The maximum allowed value for the group-level "
     "configuration of streams.session.timeout.ms"),
    ("group.streams.min.heartbeat.interval.ms", "The minimum allowed value for the group-level "
     "configuration of streams.heartbeat.interval.ms"),
    ("group.streams.max.heartbeat.interval.ms", "The maximum allowed value for the group-level "
     "configuration of streams.heartbeat.interval.ms"),
    ("group.streams.max.standby.replicas", "The maximum allowed value for the group-level "
     "configuration of streams.num.standby.replicas"),
    ("group.streams.min.assignment.interval.ms",
     "The minimum interval between assignment updates for a streams group."),
    ("group.streams.max.assignment.interval.ms",
     "The maximum interval between assignment updates for a streams group."),
)
"""The broker's bounds of the group configs (odradek/config/group.py), and the share ones'
defaults, that no other part of Odradek defines, with GroupCoordinatorConfig's and
ShareGroupConfig's docs."""

BROKER_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("node.id", INT, 1, "The node id of this server.", at_least(0), read_only=True),
    ConfigDef("process.roles", LS, ["broker", "controller"], "Roles of this process.",
              one_of("broker", "controller"), read_only=True),
    ConfigDef("listeners", LS, ["PLAINTEXT://127.0.0.1:9092"], "Listeners as NAME://host:port "
              "(an empty host binds every interface); names and ports unique.", read_only=True),
    ConfigDef("advertised.listeners", LS, None, "NAME://host:port of the listeners as "
              "published to clients and other brokers; a listener left out is published as "
              "it is bound. 0.0.0.0 may not be advertised.", read_only=True),
    ConfigDef("listener.security.protocol.map", S, DEFAULT_PROTOCOL_MAP, "NAME:PROTOCOL for "
              "every listener name (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL); the "
              "controller listener names map to PLAINTEXT when this is left at its default.",
              read_only=True),
    ConfigDef("inter.broker.listener.name", S, None, "The listener brokers use to reach each "
              "other (default: the one named after security.inter.broker.protocol).",
              read_only=True),
    ConfigDef("security.inter.broker.protocol", S, "PLAINTEXT", "Security protocol between "
              "brokers; only one of this and inter.broker.listener.name may be set.",
              one_of(*SECURITY_PROTOCOLS), read_only=True),
    ConfigDef("sasl.enabled.mechanisms", LS, ["GSSAPI"], "SASL mechanisms a SASL listener "
              "enables (Odradek serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512).",
              read_only=True),
    ConfigDef("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", "SASL mechanism brokers "
              "use with each other.", read_only=True),
    ConfigDef("sasl.jaas.config", P, None, "JAAS login configuration; a broker reads it per "
              "listener and mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config.",
              read_only=True),
    ConfigDef("connections.max.reauth.ms", L, 0, "Longest session of a SASL connection before "
              "it must re-authenticate (KIP-368); 0: no limit.", at_least(0), read_only=True),
    ConfigDef("connection.failed.authentication.delay.ms", INT, 100, "Delay before a "
              "connection that failed authentication is answered and closed.", at_least(0),
              read_only=True),
    ConfigDef("ssl.keystore.type", S, "JKS", "Format of the key store: PEM (KIP-651) is the one "
              "Odradek reads.", read_only=True),
    ConfigDef("ssl.keystore.location", S, None, "PEM file holding the private key and the "
              "certificate chain.", read_only=True),
    ConfigDef("ssl.keystore.password", P, None, "Password of the key store file.",
              read_only=True),
    ConfigDef("ssl.key.password", P, None, "Password of an encrypted private key.",
              read_only=True),
    ConfigDef("ssl.keystore.certificate.chain", P, None, "Certificate chain in PEM, inline.",
              read_only=True),
    ConfigDef("ssl.keystore.key", P, None, "Private key in PEM (PKCS#8), inline.",
              read_only=True),
    ConfigDef("ssl.truststore.type", S, "JKS", "Format of the trust store: PEM is the one "
              "Odradek reads.", read_only=True),
    ConfigDef("ssl.truststore.location", S, None, "PEM file of trusted CA certificates.",
              read_only=True),
    ConfigDef("ssl.truststore.password", P, None, "Password of the trust store (not used for "
              "PEM).", read_only=True),
    ConfigDef("ssl.truststore.certificates", P, None, "Trusted certificates in PEM, inline.",
              read_only=True),
    ConfigDef("ssl.client.auth", S, "none", "Client certificates: required, requested or none.",
              one_of("required", "requested", "none"), read_only=True),
    ConfigDef("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"], "TLS versions accepted.",
              one_of("TLSv1.2", "TLSv1.3"), read_only=True),
    ConfigDef("ssl.protocol", S, "TLSv1.3", "The TLS version a client prefers.",
              read_only=True),
    ConfigDef("ssl.cipher.suites", LS, [], "TLS 1.2 cipher suites (OpenSSL or IANA names); "
              "empty: the defaults.", read_only=True),
    ConfigDef("ssl.principal.mapping.rules", S, "DEFAULT", "Rules from a client certificate's "
              "distinguished name to its principal name (KIP-371).", read_only=True),
    ConfigDef("ssl.endpoint.identification.algorithm", S, "https", "How a broker as a client "
              "checks a server certificate's host name: https, or empty for no check.",
              read_only=True),
    ConfigDef("log.dirs", LS, None, "Directories holding the log data (default: log.dir).",
              read_only=True),
    ConfigDef("log.dir", LS, ["./data"], "The directory holding the log data (used when "
              "log.dirs is not set).", read_only=True),
    ConfigDef("cluster.id", S, None, "Cluster id; generated and stored in meta.properties "
              "when absent.", read_only=True),
    ConfigDef("broker.rack", S, None, "Rack of this broker.", read_only=True),
    ConfigDef("num.partitions", INT, 1, "Default partition count of auto-created topics.",
              at_least(1), read_only=True),
    ConfigDef("default.replication.factor", INT, 1, "Default replication factor.", at_least(1),
              read_only=True),
    ConfigDef("auto.create.topics.enable", B, True, "Create topics on first Metadata request.",
              read_only=True),
    ConfigDef("delete.topic.enable", B, True, "Allow DeleteTopics.", read_only=True),
    ConfigDef("message.max.bytes", INT, 1048588, "Largest record batch size allowed.", at_least(0)),
    ConfigDef("socket.request.max.bytes", INT, 104857600, "Largest request accepted.",
              at_least(1), read_only=True),
    ConfigDef("max.request.partition.size.limit", INT, 2000,
              "Most partitions a DescribeTopicPartitions response lists.", at_least(1),
              read_only=True),
    ConfigDef("log.segment.bytes", INT, 1073741824, "Size of a single log segment.", at_least(14)),
    ConfigDef("log.roll.ms", L, 604800000, "Time before a new segment is rolled.", at_least(1)),
    ConfigDef("log.roll.jitter.ms", L, 0, "Maximum jitter subtracted from log.roll.ms.",
              at_least(0)),
    ConfigDef("log.index.size.max.bytes", INT, 10485760, "Maximum size of an offset index.",
              at_least(4)),
    ConfigDef("log.index.interval.bytes", INT, 4096, "Bytes between offset index entries.",
              at_least(0)),
    ConfigDef("log.retention.ms", L, 604800000, "Time to keep a segment (-1: forever).",
              at_least(-1)),
    ConfigDef("log.retention.bytes", L, -1, "Size to keep per partition (-1: no limit)."),
    ConfigDef("log.retention.check.interval.ms", L, 300000,
              "How often the retention task runs.", at_least(1), read_only=True),
    ConfigDef("log.flush.interval.messages", L, LONG_MAX, "Messages between fsyncs.",
              at_least(1)),
    ConfigDef("log.flush.interval.ms", L, LONG_MAX, "Time between fsyncs.", at_least(0)),
    ConfigDef("log.flush.scheduler.interval.ms", L, 1000,
              "How often the flusher checks flush.ms.", at_least(1), read_only=True),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", INT, 60000,
              "How often recovery points are checkpointed.", at_least(0), read_only=True),
    ConfigDef("log.segment.delete.delay.ms", L, 60000,
              "Delay before a deleted segment's files are removed.", at_least(0)),
    ConfigDef("log.message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime.",
              one_of("CreateTime", "LogAppendTime")),
    ConfigDef("log.cleanup.policy", LS, ["delete"], "delete and/or compact.",
              one_of("delete", "compact")),
    ConfigDef("log.cleaner.delete.retention.ms", L, 86400000, "Tombstone retention.",
              at_least(0)),
    ConfigDef("log.cleaner.min.compaction.lag.ms", L, 0, "Minimum age before compaction.",
              at_least(0)),
    ConfigDef("log.cleaner.max.compaction.lag.ms", L, LONG_MAX,
              "Maximum age before compaction.", at_least(1)),
    ConfigDef("log.cleaner.min.cleanable.ratio", D, 0.5, "Dirty ratio to compact.",
              at_least(0)),
    ConfigDef("log.cleaner.enable", B, True, "Run the log cleaner for compacted topics.",
              read_only=True),
    ConfigDef("log.cleaner.threads", INT, 1, "Cleaner workers (processes here, so that "
              "cleaning never holds the broker's event loop).", at_least(0)),
    ConfigDef("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for the cleaners' "
              "offset maps (24 bytes per key), split between the workers.", at_least(0)),
    ConfigDef("log.cleaner.io.buffer.load.factor", D, 0.9, "How full an offset map may get.",
              at_least(0)),
    ConfigDef("log.cleaner.io.buffer.size", INT, 524288, "Read and write buffer of each "
              "cleaner.", at_least(0)),
    ConfigDef("log.cleaner.io.max.bytes.per.second", D, 1.7976931348623157e308,
              "Cleaner IO (read plus written) per second, per cleaner.", at_least(0)),
    ConfigDef("log.cleaner.backoff.ms", L, 15000, "Sleep of a cleaner with no log to clean.",
              at_least(0)),
    ConfigDef("log.message.timestamp.before.max.ms", L, LONG_MAX,
              "Allowed age of a record timestamp.", at_least(0)),
    ConfigDef("log.message.timestamp.after.max.ms", L, 3600000,
              "Allowed future skew of a record timestamp.", at_least(0)),
    ConfigDef("log.preallocate", B, False, "Preallocate segment files."),
    ConfigDef("compression.type", S, "producer", "Final compression of a topic's data.",
              one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")),
    ConfigDef("min.insync.replicas", INT, 1, "Replicas that must ack acks=all.", at_least(1)),
    ConfigDef("unclean.leader.election.enable", B, False, "Allow out-of-sync leaders."),
    ConfigDef("replica.lag.time.max.ms", L, 30000, "A follower that has not caught up "
              "with the leader's log end for this long leaves the ISR.", at_least(1),
              read_only=True),
    ConfigDef("authorizer.class.name", S, "", "The authorizer: "
              f"{STANDARD_AUTHORIZER} enforces the ACLs of the metadata log; empty, none.",
              one_of("", STANDARD_AUTHORIZER), read_only=True),
    ConfigDef("super.users", S, "", "Principals allowed everything, separated by ';' "
              "(User:admin;User:broker).", valid_super_users, read_only=True),
    ConfigDef("allow.everyone.if.no.acl.found", B, False, "Allow an action on a resource no "
              "ACL names.", read_only=True),
    ConfigDef("replica.selector.class", S, None, "How a leader picks the "
              "replica a consumer fetches from (KIP-392): unset keeps consumers on leaders; "
              f"{RACK_AWARE_SELECTOR} sends them to a replica in their client.rack.",
              one_of(RACK_AWARE_SELECTOR), read_only=True),
    ConfigDef("replica.fetch.wait.max.ms", INT, 500, "Longest wait of a follower's fetch "
              "for new data.", at_least(0), read_only=True),
    ConfigDef("replica.fetch.min.bytes", INT, 1, "Bytes a follower's fetch waits for.",
              at_least(1), read_only=True),
    ConfigDef("replica.fetch.max.bytes", INT, 1048576, "Bytes a follower fetches per "
              "partition at most (a larger first batch still comes whole).", at_least(0),
              read_only=True),
    ConfigDef("replica.fetch.response.max.bytes", INT, 10485760, "Bytes of one follower "
              "fetch response at most.", at_least(0), read_only=True),
    ConfigDef("replica.fetch.backoff.ms", INT, 1000, "Pause after a follower's fetch fails.",
              at_least(0), read_only=True),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high "
              "watermarks are written to replication-offset-checkpoint.", at_least(1),
              read_only=True),
    ConfigDef("leader.replication.throttled.rate", L, LONG_MAX, "Bytes/s this broker sends "
              "to throttled out-of-sync followers (leader.replication.throttled.replicas).",
              at_least(0)),
    ConfigDef("follower.replication.throttled.rate", L, LONG_MAX, "Bytes/s this broker "
              "fetches for throttled replicas (follower.replication.throttled.replicas).",
              at_least(0)),
    ConfigDef("auto.leader.rebalance.enable", B, True, "Move leadership back to preferred "
              "replicas when brokers are imbalanced.", read_only=True),
    ConfigDef("leader.imbalance.check.interval.seconds", L, 300, "How often the controller "
              "checks leader imbalance.", at_least(1), read_only=True),
    ConfigDef("leader.imbalance.per.broker.percentage", INT, 10, "Share of a broker's "
              "partitions not led by their preferred replica that triggers a rebalance.",
              at_least(0), read_only=True),
    ConfigDef("offsets.topic.num.partitions", INT, 50,
              "Partitions of __consumer_offsets (fixed once the topic exists).", at_least(1),
              read_only=True),
    ConfigDef("offsets.topic.replication.factor", ConfigType.SHORT, 3,
              "Replication factor of __consumer_offsets.", at_least(1), read_only=True),
    ConfigDef("offsets.topic.segment.bytes", INT, 104857600,
              "Segment size of __consumer_offsets.", at_least(1), read_only=True),
    ConfigDef("offsets.commit.timeout.ms", INT, 5000, "How long a group coordinator's write "
              "waits for every replica of __consumer_offsets before it fails.", at_least(1),
              read_only=True),
    ConfigDef("request.timeout.ms", INT, 30000, "How long the broker's own requests to "
              "other brokers (transaction markers and verification) wait for an answer.",
              at_least(1), read_only=True),
    ConfigDef("transaction.state.log.num.partitions", INT, 50,
              "Partitions of __transaction_state (fixed once the topic exists).", at_least(1),
              read_only=True),
    ConfigDef("transaction.state.log.replication.factor", ConfigType.SHORT, 3,
              "Replication factor of __transaction_state.", at_least(1), read_only=True),
    ConfigDef("transaction.state.log.min.isr", INT, 2,
              "min.insync.replicas of __transaction_state.", at_least(1), read_only=True),
    ConfigDef("transaction.state.log.segment.bytes", INT, 104857600,
              "Segment size of __transaction_state.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.state.topic.num.partitions", INT, 50,
              "Partitions of __share_group_state (fixed once the topic exists).", at_least(1),
              read_only=True),
    ConfigDef("share.coordinator.state.topic.replication.factor", ConfigType.SHORT, 3,
              "Replication factor of __share_group_state.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.state.topic.min.isr", ConfigType.SHORT, 2,
              "min.insync.replicas of __share_group_state.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.state.topic.segment.bytes", INT, 104857600,
              "Segment size of __share_group_state.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.snapshot.update.records.per.snapshot", INT, 500,
              "ShareUpdate records the share coordinator writes for a share-partition between "
              "two ShareSnapshot records.", at_least(0), read_only=True),
    ConfigDef("share.coordinator.state.topic.prune.interval.ms", INT, 300000, "How often the "
              "share coordinator deletes the records of __share_group_state no share-partition "
              "needs any more.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.cold.partition.snapshot.interval.ms", INT, 300000, "How "
              "often the share coordinator writes a snapshot of the share-partitions whose "
              "state has not been written since for as long.", at_least(1), read_only=True),
    ConfigDef("share.coordinator.write.timeout.ms", INT, 5000, "How long a share "
              "coordinator's write waits for every replica of __share_group_state before it "
              "fails.", at_least(1), read_only=True),
    ConfigDef("transaction.max.timeout.ms", INT, 900000, "Largest transaction.timeout.ms a "
              "producer may ask for.", at_least(1), read_only=True),
    ConfigDef("transactional.id.expiration.ms", INT, 604800000, "How long the coordinator "
              "keeps an idle transactional id.", at_least(1), read_only=True),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000,
              "How often transactions past their timeout are looked for and aborted.",
              at_least(1), read_only=True),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000,
              "How often expired transactional ids are removed.", at_least(1), read_only=True),
    ConfigDef("transaction.partition.verification.enable", B, True, "Partition leaders ask "
              "the transaction coordinator whether a transactional batch belongs to an "
              "ongoing transaction before appending it (KIP-890).", read_only=True),
    ConfigDef("producer.id.expiration.ms", INT, 86400000, "How long a partition remembers an "
              "idle producer's sequence numbers.", at_least(1), read_only=True),
    ConfigDef("producer.id.expiration.check.interval.ms", INT, 600000,
              "How often idle producers are forgotten.", at_least(1), read_only=True),
    ConfigDef("offsets.retention.minutes", INT, 10080, "Minutes a group's committed offsets "
              "are kept after it becomes empty (or after the commit, for standalone "
              "consumers).", at_least(1), read_only=True),
    ConfigDef("offsets.retention.check.interval.ms", L, 600000,
              "How often expired offsets are looked for.", at_least(1), read_only=True),
    ConfigDef("offset.metadata.max.bytes", INT, 4096,
              "Largest metadata string of an offset commit.", read_only=True),
    ConfigDef("group.initial.rebalance.delay.ms", INT, 3000, "How long a new classic group "
              "waits for more members before its first rebalance.", at_least(0),
              read_only=True),
    ConfigDef("group.min.session.timeout.ms", INT, 6000,
              "Smallest session timeout a classic member may ask for.", read_only=True),
    ConfigDef("group.max.session.timeout.ms", INT, 1800000,
              "Largest session timeout a classic member may ask for.", read_only=True),
    ConfigDef("group.max.size", INT, 2147483647, "Most members of a classic group.",
              at_least(1), read_only=True),
    *(_kafka_def(name, doc) for name, doc in GROUP_BOUND_CONFIGS),
    ConfigDef("group.consumer.session.timeout.ms", INT, 45000,
              "Session timeout of consumer-protocol (KIP-848) members.", at_least(1),
              read_only=True),
    ConfigDef("group.consumer.heartbeat.interval.ms", INT, 5000,
              "Heartbeat interval given to consumer-protocol members.", at_least(1),
              read_only=True),
    ConfigDef("group.consumer.max.size", INT, 2147483647,
              "Most members of a consumer-protocol group.", at_least(1), read_only=True),
    ConfigDef("group.consumer.assignors", LS, ["uniform", "range"], "Server-side assignors "
              "of consumer-protocol groups; the first is the default.", read_only=True),
    ConfigDef("group.share.session.timeout.ms", INT, 45000, "The timeout to detect client "
              "failures when using the share group protocol.", at_least(1), read_only=True),
    ConfigDef("group.share.heartbeat.interval.ms", INT, 5000, "The heartbeat interval given "
              "to the members of a share group.", at_least(1), read_only=True),
    ConfigDef("group.share.max.size", INT, 200, "The maximum number of members that a single "
              "share group can accommodate.", at_least(1), read_only=True),
    ConfigDef("group.share.assignors", LS, ["simple"], "The server-side assignors as a list "
              "of names; the list must contain only a single entry which is used by all "
              "groups. The supported built-in assignors are: simple.", one_of("simple"),
              read_only=True),
    ConfigDef("group.share.max.share.sessions", INT, 2000, "The maximum number of share "
              "sessions per broker.", at_least(1), read_only=True),
    ConfigDef("metrics.port", INT, 9404, "Port of the Prometheus /metrics endpoint "
              "(-1 disables it; 0 picks a free port).", at_least(-1), read_only=True),
    ConfigDef("controller.quorum.voters", LS, [], "The controller quorum as id@host:port "
              "entries; unset in `odradek dev`, whose one controller serves on the CONTROLLER "
              "listener (an ephemeral loopback port when none is configured).", read_only=True),
    ConfigDef("controller.listener.names", LS, ["CONTROLLER"], "Names of the listeners the "
              "controller serves gRPC on.", read_only=True),
    ConfigDef("controller.quorum.election.timeout.ms", INT, 1000, "Longest time without a "
              "leader before a voter starts an election (randomised up to twice this).",
              at_least(100), read_only=True),
    ConfigDef("controller.quorum.request.timeout.ms", INT, 2000, "Deadline of every call "
              "to the controller quorum.", at_least(1), read_only=True),
    ConfigDef("controller.quorum.retry.backoff.ms", INT, 20, "First backoff before a failed "
              "call to the controllers is retried; it doubles up to 1 s.", at_least(0),
              read_only=True),
    ConfigDef("broker.session.timeout.ms", INT, 9000, "A broker whose heartbeats stop for "
              "this long is fenced.", at_least(1), read_only=True),
    ConfigDef("broker.heartbeat.interval.ms", INT, 2000, "Interval of broker heartbeats to "
              "the controller.", at_least(1), read_only=True),
    ConfigDef("metadata.log.dir", S, None, "Directory of the metadata log (default: the first "
              "log directory).", read_only=True),
    ConfigDef("metadata.log.max.record.bytes.between.snapshots", L, 20971520, "Bytes "
              "appended to the metadata log before the controller takes a new snapshot.",
              at_least(1), read_only=True),
    ConfigDef("quota.window.num", INT, 11, "The number of samples to retain in memory for "
              "client quotas.", at_least(1), read_only=True),
    ConfigDef("quota.window.size.seconds", INT, 1, "The time span of each sample for client "
              "quotas.", at_least(1), read_only=True),
    ConfigDef("controller.quota.window.num", INT, 11, "The number of samples to retain in "
              "memory for controller mutation quotas.", at_least(1), read_only=True),
    ConfigDef("controller.quota.window.size.seconds", INT, 1, "The time span of each sample "
              "for controller mutation quotas.", at_least(1), read_only=True),
    ConfigDef("max.connections", INT, INT_MAX, "Connections the broker accepts at a time; "
              "further connections wait to be served (the inter-broker listener is exempt).",
              at_least(0), read_only=True),
    ConfigDef("max.connections.per.ip", INT, INT_MAX, "Connections accepted from one IP "
              "address; further ones are closed.", at_least(0), read_only=True),
    ConfigDef("max.connections.per.ip.overrides", S, "", "host:count or ip:count entries "
              "overriding max.connections.per.ip, e.g. hostName:100,127.0.0.1:200.",
              per_ip_overrides, read_only=True),
    ConfigDef("connections.max.idle.ms", L, 600000, "Idle connections are closed after this "
              "many milliseconds.", at_least(1), read_only=True),
    ConfigDef("sasl.server.max.receive.size", INT, 524288, "The largest request accepted "
              "before and during SASL authentication, and the bytes such a connection may have "
              "queued.", at_least(1), read_only=True),
)

TOPIC_CONFIGS: dict[str, ConfigDef] = _defs(
    *(
        ConfigDef(name, BROKER_CONFIGS[synonym].type, BROKER_CONFIGS[synonym].default,
                  BROKER_CONFIGS[synonym].doc, BROKER_CONFIGS[synonym].validator, synonym)
        for name, synonym in (
            ("cleanup.policy", "log.cleanup.policy"),
            ("compression.type", "compression.type"),
            ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
            ("file.delete.delay.ms", "log.segment.delete.delay.ms"),
            ("flush.messages", "log.flush.interval.messages"),
            ("flush.ms", "log.flush.interval.ms"),
            ("index.interval.bytes", "log.index.interval.bytes"),
            ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
            ("max.message.bytes", "message.max.bytes"),
            ("message.timestamp.type", "log.message.timestamp.type"),
            ("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"),
            ("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"),
            ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"),
            ("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
            ("min.insync.replicas", "min.insync.replicas"),
            ("preallocate", "log.preallocate"),
            ("retention.bytes", "log.retention.bytes"),
            ("retention.ms", "log.retention.ms"),
            ("segment.bytes", "log.segment.bytes"),
            ("segment.index.bytes", "log.index.size.max.bytes"),
            ("segment.jitter.ms", "log.roll.jitter.ms"),
            ("segment.ms", "log.roll.ms"),
            ("unclean.leader.election.enable", "unclean.leader.election.enable"),
        )
    ),
    ConfigDef("leader.replication.throttled.replicas", LS, [], "partition:broker entries "
              "(or *) whose leader throttles fetches to leader.replication.throttled.rate.",
              throttled_replicas),
    ConfigDef("follower.replication.throttled.replicas", LS, [], "partition:broker entries "
              "(or *) whose follower throttles its fetching to "
              "follower.replication.throttled.rate.", throttled_replicas),
)




KAFKA_ONLY_BROKER_CONFIGS: dict[str, ConfigDef] = {
    name: _catalogue_def(name, type_name, default, validator, read_only=mode == "read-only")
    for name, (type_name, default, _, _, mode, validator)
    in {**kafka.BROKER, **kafka.BROKER_DYNAMIC_ONLY}.items() if name not in BROKER_CONFIGS
}
"""Kafka's broker configs that Odradek does not act on: accepted, stored and described as
Kafka does (its type, default, validator and update mode), without effect."""
ALL_BROKER_CONFIGS: dict[str, ConfigDef] = {**BROKER_CONFIGS, **KAFKA_ONLY_BROKER_CONFIGS}

KAFKA_ONLY_TOPIC_CONFIGS: dict[str, ConfigDef] = {
    name: _catalogue_def(name, type_name, default, validator, synonym=synonym)
    for name, (type_name, default, _, _, synonym, validator) in kafka.TOPIC.items()
    if name not in TOPIC_CONFIGS
}
"""Kafka's topic configs that Odradek does not act on (remote storage, compression levels)."""


def _no_remote_storage(value: Value) -> str | None:
    """Kafka refuses remote.storage.enable=true unless the cluster enables tiered storage,
    which Odradek has not."""
    return "You have to enable remote storage at the cluster level first" if value else None


KAFKA_ONLY_TOPIC_CONFIGS["remote.storage.enable"] = replace(
    KAFKA_ONLY_TOPIC_CONFIGS["remote.storage.enable"], validator=_no_remote_storage)
ALL_TOPIC_CONFIGS: dict[str, ConfigDef] = {**TOPIC_CONFIGS, **KAFKA_ONLY_TOPIC_CONFIGS}

LISTED_BROKER_CONFIGS = frozenset(
    name for name in ALL_BROKER_CONFIGS
    if not kafka.BROKER.get(name, (None, None, True, False))[3]
    and name not in kafka.BROKER_DYNAMIC_ONLY
)
"""What DescribeConfigs lists of a broker even when nothing sets it: Kafka's non-internal
broker configs, and Odradek's own configs that Kafka lacks (metrics.port, ...)."""
LISTED_TOPIC_CONFIGS = frozenset(
    name for name in ALL_TOPIC_CONFIGS if not kafka.TOPIC.get(name, (None, None, True, False))[3]
)
_SYNONYM_DEFAULTED = frozenset(
    name for name, (_, default, *_) in kafka.BROKER.items()
    if default is None and len(kafka.BROKER_SYNONYMS.get(name, ())) > 1
)
"""Configs that take their default from a synonym (log.retention.ms from log.retention.hours):
DescribeConfigs reports them as null unless set, whatever Odradek's effective value."""
_REQUIRED = frozenset(name for name, entry in kafka.BROKER.items() if not entry[2])
"""Configs Kafka requires (node.id, process.roles), so lists no default layer of, while
Odradek defaults them for `odradek dev`."""


LISTENER_CONFIGS = ("ssl.", "sasl.", "connections.max.reauth.ms", "principal.builder.class",
                    *CLUSTER_LEVEL_LISTENER_CONFIGS)
"""The configs a listener may override (`listener.name.<listener>.<config>`)."""


def broker_config_def(name: str) -> ConfigDef | None:
    """The definition of a broker config name, a listener override taking its base's; None
    for a name neither Kafka nor Odradek defines."""
    definition = ALL_BROKER_CONFIGS.get(name)
    if definition is not None:
        return definition
    base = listener_base(name)
    if base is None or not base.startswith(LISTENER_CONFIGS):
        return None
    return ALL_BROKER_CONFIGS.get(base)


LISTENER_PREFIX = "listener.name."


_HOUR_ALIASES = {"log.retention.hours": "log.retention.ms", "log.roll.hours": "log.roll.ms"}
_MINUTE_ALIASES = {"log.retention.minutes": "log.retention.ms"}


def parse_voters(entries: list[str]) -> dict[int, tuple[str, int]]:
    """controller.quorum.voters (`id@host:port,...`) as {id: (host, port)}."""
    voters: dict[int, tuple[str, int]] = {}
    for entry in entries:
        node, at, address = entry.partition("@")
        host, colon, port = address.rpartition(":")
        if not at or not colon or not node.isdigit() or not port.isdigit() or not host:
            raise InvalidConfigError(
                f"controller.quorum.voters entry {entry!r} is not of the form id@host:port"
            )
        voters[int(node)] = (host, int(port))
    return voters


def key_value(text: str) -> tuple[str, str]:
    """An argparse type for `--override KEY=VALUE`."""
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java-style `.properties` file (key=value or key: value, # and ! comments)."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        separator = min((i for i in (text.find("="), text.find(":")) if i > 0), default=-1)
        if separator < 0:
            raise InvalidConfigError(f"{path}:{number}: expected key=value, got {text!r}")
        values[text[:separator].strip()] = text[separator + 1 :].strip()
    return values


def _normalise_aliases(raw: Mapping[str, str]) -> dict[str, str]:
    values = dict(raw)
    # Finest unit first: log.retention.ms beats .minutes beats .hours, as in Kafka; a
    # negative result means "no limit" (-1), as in KafkaConfig.logRetentionTimeMillis.
    for aliases, factor in ((_MINUTE_ALIASES, 60_000), (_HOUR_ALIASES, 3_600_000)):
        for alias, name in aliases.items():
            if alias in values:
                text = values.pop(alias)
                if name not in values:
                    try:
                        values[name] = str(max(int(text) * factor, -1))
                    except ValueError:
                        raise InvalidConfigError(f"Invalid value {text} for {alias}") from None
    return values


def _populate_synonyms(raw: Mapping[str, str]) -> dict[str, str]:
    """Kafka's KafkaConfig.populateSynonyms: node.id and broker.id stand for each other."""
    values = dict(raw)
    if "node.id" in values and "broker.id" not in values:
        values["broker.id"] = values["node.id"]
    elif "broker.id" in values and "node.id" not in values:
        values["node.id"] = values["broker.id"]
    return values


class BrokerConfig:
    """A broker's configuration in Kafka's layers, highest precedence first: per-broker dynamic
    (broker resource named by node id), cluster-default dynamic (broker resource ""), static
    (server properties, parsed once at start-up; unknown keys are refused), default."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        raw = _populate_synonyms(raw)
        self.originals = dict(raw)
        """The static configs as given: DescribeConfigs' STATIC_BROKER_CONFIG layer."""
        self.static_raw = _normalise_aliases(raw)
        """The static configs with the time aliases folded into their .ms config."""
        unknown = sorted(name for name in set(self.static_raw) - set(ALL_BROKER_CONFIGS)
                         if broker_config_def(name) is None)
        if unknown:
            raise InvalidConfigError(f"Unknown broker config(s): {', '.join(unknown)}")
        self.dynamic_broker_raw: dict[str, str] = {}
        """This broker's own dynamic configs (source DYNAMIC_BROKER_CONFIG)."""
        self.dynamic_default_raw: dict[str, str] = {}
        """Cluster-wide dynamic defaults (source DYNAMIC_DEFAULT_BROKER_CONFIG)."""
        self._values = {name: self._resolve(name) for name in ALL_BROKER_CONFIGS}
        for name, raw_value in self.static_raw.items():
            definition = broker_config_def(name)
            if definition is not None and name not in ALL_BROKER_CONFIGS:
                parse_value(definition, raw_value)

    def for_listener(self, listener: str, name: str, mechanism: str = "") -> Value:
        """`name` as one listener (and SASL mechanism) sees it, as Kafka's
        valuesWithPrefixOverride: `listener.name.<listener>.[<mechanism>.]<name>` when set,
        else the broker's own value."""
        prefix = f"{LISTENER_PREFIX}{listener.lower()}."
        keys = [f"{prefix}{mechanism.lower()}.{name}"] if mechanism else []
        for key in [*keys, prefix + name]:
            if key in self.static_raw:
                return parse_value(BROKER_CONFIGS[name], self.static_raw[key])
        return self._values[name]

    def __getitem__(self, name: str) -> Value:
        return self._values[name]

    def integer(self, name: str) -> int:
        value = self._values[name]
        assert isinstance(value, int)
        return value

    def text(self, name: str) -> str:
        value = self._values[name]
        return format_value(value) or ""

    def _raw_layers(self) -> tuple[tuple[ConfigSource, dict[str, str]], ...]:
        """The layers holding raw strings, highest precedence first; the one place that
        orders them."""
        return (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic_broker_raw),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default_raw),
            (ConfigSource.STATIC_BROKER_CONFIG, self.static_raw),
        )

    def synonyms(self, name: str, from_own_name: bool = True
                 ) -> list[tuple[str, ConfigSource, str]]:
        """DescribeConfigs' synonyms of a broker config, as Kafka's ConfigHelper lists them:
        for each layer (per-broker, cluster default, static as given, default), each of the
        config's names (log.retention.ms, .minutes, .hours) that the layer sets, dropping
        those before the first under the config's own name unless not `from_own_name` (as
        Kafka's controller resolves a new topic's configs). A default of None is no layer."""
        names = broker_synonyms(name)
        defaults = {n: d for n in names if (d := described_default(n)) is not None}
        layers = (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic_broker_raw),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default_raw),
            (ConfigSource.STATIC_BROKER_CONFIG, self.originals),
            (ConfigSource.DEFAULT_CONFIG, defaults),
        )
        found = [(n, source, raw[n]) for source, raw in layers for n in names if n in raw]
        if not from_own_name:
            return found
        first = next((i for i, (n, _, _) in enumerate(found) if n == name), len(found))
        return found[first:]

    def described_value(self, name: str) -> str | None:
        """A broker config's value as DescribeConfigs reports it: the highest layer that sets
        this very name (parsed, then rendered as Kafka does), else its default."""
        raw = next((layer[name] for layer in (self.dynamic_broker_raw, self.dynamic_default_raw,
                                              self.originals) if name in layer), None)
        if raw is None:
            required = name in _REQUIRED and name in BROKER_CONFIGS
            return format_value(BROKER_CONFIGS[name].default) if required else (
                described_default(name))
        definition = ALL_BROKER_CONFIGS.get(name)
        return raw if definition is None else format_value(parse_value(definition, raw))

    def described_names(self) -> set[str]:
        """The configs DescribeConfigs lists of this broker: the listed ones and whatever a
        layer sets (Kafka's originals and non-internal values)."""
        return (set(LISTED_BROKER_CONFIGS) | set(self.originals)
                | set(self.dynamic_broker_raw) | set(self.dynamic_default_raw))

    def source(self, name: str) -> ConfigSource:
        return next(
            (source for source, raw in self._raw_layers() if name in raw),
            ConfigSource.DEFAULT_CONFIG,
        )

    def dynamic_layer(self, resource_name: str) -> dict[str, str] | None:
        """The dynamic layer a broker config resource writes: "" is the cluster default, this
        broker's node id its per-broker layer; another broker's resource has none here."""
        if resource_name == "":
            return self.dynamic_default_raw
        if resource_name == str(self.integer("node.id")):
            return self.dynamic_broker_raw
        return None

    def set_dynamic(self, changes: Mapping[str, str | None], resource_name: str = "") -> None:
        """Apply dynamic configs of the broker resource `resource_name` ("" for the cluster
        default, else a node id); None deletes. Validates all changes first. Another broker's
        configs are ignored, as a Kafka broker ignores them."""
        validate_dynamic_broker_configs(changes, cluster_default=resource_name == "")
        layer = self.dynamic_layer(resource_name)
        if layer is None:
            return
        for name, raw in changes.items():
            if raw is None:
                layer.pop(name, None)
            else:
                layer[name] = raw
        self._refresh(changes)

    def _refresh(self, names: Iterable[str]) -> None:
        for name in names:
            if name in ALL_BROKER_CONFIGS:
                self._values[name] = self._resolve(name)

    def clear_dynamic(self) -> None:
        """Drop every dynamic config (before a new metadata image sets them again)."""
        changed = set(self.dynamic_broker_raw) | set(self.dynamic_default_raw)
        self.dynamic_broker_raw.clear()
        self.dynamic_default_raw.clear()
        self._refresh(changed)

    def _resolve(self, name: str) -> Value:
        definition = ALL_BROKER_CONFIGS[name]
        for _, raw in self._raw_layers():
            if name in raw:
                return parse_value(definition, raw[name])
        return definition.default

    def topic_defaults(self) -> dict[str, Value]:
        """Effective default of every topic config: its broker synonym's, or its own."""
        return {
            name: self._values[definition.synonym] if definition.synonym is not None
            else definition.default
            for name, definition in ALL_TOPIC_CONFIGS.items()
        }

    def log_dirs(self) -> list[Path]:
        dirs = self._values["log.dirs"] or self._values["log.dir"]
        assert isinstance(dirs, list)
        return [Path(d) for d in dirs]


def described_default(name: str) -> str | None:
    """A broker config's default as DescribeConfigs reports it (None: no default layer)."""
    definition = ALL_BROKER_CONFIGS.get(name)
    if definition is None or name in _SYNONYM_DEFAULTED or name in _REQUIRED:
        return None
    return format_value(definition.default)


def _names(names: Iterable[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def validate_dynamic_broker_configs(
    changes: Mapping[str, str | None], cluster_default: bool = True
) -> dict[str, Value]:
    """Parse dynamic broker config changes (None deletes) as Kafka's
    DynamicBrokerConfig.validateConfigs does, raising InvalidConfigError for read-only configs
    (Odradek's own read-only ones too), security configs without a listener prefix, bad
    values, and per-broker configs at the cluster default. Names neither Kafka nor Odradek
    defines are accepted, as Kafka accepts them. Returns the parsed values being set."""
    fixed = [n for n in changes if n in ALL_BROKER_CONFIGS and ALL_BROKER_CONFIGS[n].read_only]
    fixed += [n for n in changes if (base := listener_base(n)) in BROKER_CONFIGS
              and BROKER_CONFIGS[base].read_only]
    if fixed:
        raise InvalidConfigError(f"Cannot update these configs dynamically: {_names(fixed)}")
    unprefixed = [n for n in changes if n in kafka.LISTENER_PREFIX_ONLY]
    if unprefixed:
        raise InvalidConfigError("These security configs can be dynamically updated only "
                                 f"per-listener using the listener prefix: {_names(unprefixed)}")
    parsed: dict[str, Value] = {}
    for name, raw in changes.items():
        definition = broker_config_def(name)
        if raw is not None and definition is not None:
            parsed[name] = parse_value(definition, raw)
    if cluster_default:
        per_broker = [n for n in changes if update_mode(n) == "per-broker" or (
            (base := listener_base(n)) is not None and base not in CLUSTER_LEVEL_LISTENER_CONFIGS)]
        if per_broker:
            raise InvalidConfigError("Cannot update these configs at default cluster level, "
                                     f"broker id must be specified: {_names(per_broker)}")
    return parsed


def validate_topic_configs(raw: Mapping[str, str | None]) -> dict[str, Value]:
    """Parse topic config overrides; unknown names and bad values raise InvalidConfigError."""
    parsed: dict[str, Value] = {}
    for name, text in raw.items():
        definition = ALL_TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        parsed[name] = parse_value(definition, text)
    return parsed


def effective_topic_config(
    broker: BrokerConfig, overrides: Mapping[str, str]
) -> dict[str, Value]:
    """Broker defaults overlaid with a topic's own overrides."""
    values = broker.topic_defaults()
    values.update(validate_topic_configs(overrides))
    return values
