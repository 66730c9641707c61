"""MirrorMaker 2's `connect-mirror-maker.properties`, read into flows.

The names and defaults are MM2's (MirrorMakerConfig, MirrorSourceConfig,
MirrorCheckpointConfig, MirrorHeartbeatConfig and the default topic, group and config
property filters). A flow's settings are the top-level keys overlaid with
`<source>-><target>.<key>`; a cluster's client configs are `<alias>.<client config>`
(`<alias>.producer.*`, `.consumer.*`, `.admin.*` for one client role only). Unknown keys
are warned about, as in MM2; an unknown alias, a flow naming a missing cluster or a bad
value is a `MirrorConfigError` with a one-line message.

As in MM2, `<target>.offset.flush.interval.ms` and `<target>.exactly.once.source.support`
(Connect worker configs of the flows into `target`) set those flows' progress flush interval
and exactly-once switch, and Connect's other worker configs under `<alias>.` are no client
configs.

Two things differ from MM2 by design: exactly-once is on by default
(`exactly.once.support=disabled` turns it off), and `exactly.once.source.support`, the
Connect worker's switch, is read as a synonym.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from odradek.config.kafka_configs import InvalidConfigError
from odradek.mirror.policy import ReplicationPolicy, is_cycle, make_policy


class MirrorConfigError(InvalidConfigError):
    """A mirror configuration the service cannot start from."""


class TopicNotCreatable(MirrorConfigError):
    """A topic the configuration asks for that a cluster refuses to create as configured
    (INVALID_REPLICATION_FACTOR: more replicas than brokers): the mirror stops at start
    with the setting, where MM2's connector fails."""

    def __init__(self, setting: str, value: int, cluster: str, topic: str,
                 reason: str) -> None:
        super().__init__(f"{setting} = {value}: cluster {cluster} cannot create topic "
                         f"{topic}: {reason}")


TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, "
    r"leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, "
    r"message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, "
    r"min\.insync\.replicas")

DEFAULTS: dict[str, str] = {
    # MirrorConnectorConfig
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "replication.policy.separator": ".",
    "replication.policy.internal.topic.separator.enabled": "true",
    "admin.timeout.ms": "60000",
    "offset-syncs.topic.location": "source",
    "emit.offset-syncs.enabled": "true",
    # MirrorSourceConfig
    "topics": ".*",
    "topics.exclude": TOPICS_EXCLUDE_DEFAULT,
    "config.properties.exclude": CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
    "use.defaults.from": "target",
    "consumer.poll.timeout.ms": "1000",
    "refresh.topics.enabled": "true",
    "refresh.topics.interval.seconds": "600",
    "sync.topic.configs.enabled": "true",
    "sync.topic.configs.interval.seconds": "600",
    "sync.topic.acls.enabled": "true",
    "sync.topic.acls.interval.seconds": "600",
    "replication.factor": "2",
    "offset-syncs.topic.replication.factor": "3",
    "heartbeats.replication.enabled": "true",
    # MirrorCheckpointConfig
    "groups": ".*",
    "groups.exclude": GROUPS_EXCLUDE_DEFAULT,
    "refresh.groups.enabled": "true",
    "refresh.groups.interval.seconds": "600",
    "emit.checkpoints.enabled": "true",
    "emit.checkpoints.interval.seconds": "60",
    "sync.group.offsets.enabled": "false",
    "sync.group.offsets.interval.seconds": "60",
    "checkpoints.topic.replication.factor": "3",
    # MirrorHeartbeatConfig
    "emit.heartbeats.enabled": "true",
    "emit.heartbeats.interval.seconds": "1",
    "heartbeats.topic.replication.factor": "3",
    # Connect: the connector's tasks, the worker's offset storage (our progress topic)
    "tasks.max": "1",
    "offset.storage.replication.factor": "3",
    "offset.storage.partitions": "25",
    "offset.flush.interval.ms": "60000",
    # ours: MM2 needs KIP-618 and a worker setting; the mirror is exactly-once by default
    "exactly.once.support": "enabled",
}
"""Every flow setting the mirror reads, with MM2's default (and ours for exactly-once)."""

IGNORED = frozenset({
    "offset.lag.max",
    "name", "connector.class", "source.cluster.alias", "target.cluster.alias",
    "key.converter", "value.converter", "header.converter", "topic.filter.class",
    "group.filter.class", "config.property.filter.class", "forwarding.admin.class",
    "dedicated.mode.enable.internal.rest", "config.providers", "transaction.boundary",
    "offset.storage.topic", "config.storage.topic", "status.storage.topic",
    "config.storage.replication.factor", "status.storage.replication.factor",
    "status.storage.partitions", "plugin.discovery", "plugin.path",
})
"""MM2's (or Connect's) keys that the mirror accepts and has no use for: the only filters
and policies are the defaults, and there are no Connect workers or converters."""

METRICS_PORT_DEFAULT = 9404

_WORKER_SETTINGS = {"offset.flush.interval.ms": "offset.flush.interval.ms",
                   "exactly.once.source.support": "exactly.once.support"}
"""Connect worker configs that MM2 reads per target cluster (MirrorMakerConfig.workerConfig
takes `<target>.*`), by the flow setting each gives for the flows into that cluster."""
_WORKER_ONLY = frozenset({
    "access.control.allow.methods", "access.control.allow.origin", "admin.listeners",
    "config.providers", "connect.protocol", "connector.client.config.override.policy",
    "exactly.once.source.support", "listeners", "offset.flush.interval.ms",
    "offset.flush.timeout.ms", "plugin.discovery", "plugin.path", "rebalance.timeout.ms",
    "response.http.headers.config", "rest.extension.classes",
    "scheduled.rebalance.max.delay.ms", "task.shutdown.graceful.timeout.ms",
    "topic.creation.enable", "worker.sync.timeout.ms", "worker.unsync.backoff.ms"})
_WORKER_ONLY_PREFIXES = ("config.storage.", "offset.storage.", "status.storage.",
                         "key.converter", "value.converter", "header.converter",
                         "inter.worker.", "rest.advertised.", "topic.tracking.")
"""Connect's DistributedConfig names that no Kafka client reads: MM2 hands `<alias>.*` to
its clients too, which ignore them with a warning, so they are no client configs here."""
_CLIENT_GLOBAL_PREFIXES = ("security.protocol", "ssl.", "sasl.")
"""Top-level client configs that apply to every cluster (MirrorClientConfig's client
configs), unless `<alias>.<key>` sets them."""

_EXACTLY_ONCE = {"enabled": True, "required": True, "requested": True,
                 "disabled": False, "preparing": False}
_ROLES = ("producer.", "consumer.", "admin.")

Side = Literal["source", "target"]
InternalTopic = Literal["heartbeats", "checkpoints", "offset-syncs"]
Role = Literal["producer", "consumer", "admin"]


@dataclass(frozen=True)
class RegexList:
    """An MM2 list of regexes (`topics`, `groups.exclude`, ...), matched against a whole
    name; an empty list matches nothing, as in MirrorUtils.compilePatternList."""
    text: str
    pattern: re.Pattern[str] | None

    @classmethod
    def parse(cls, key: str, text: str) -> RegexList:
        items = re.split(r"\s*,\s*", text.strip()) if text.strip() else []
        if not items:
            return cls(text, None)
        try:
            return cls(text, re.compile("|".join(items)))
        except re.error as error:
            raise MirrorConfigError(f"{key}: bad regex {text!r}: {error}") from None

    def matches(self, name: str) -> bool:
        return self.pattern is not None and self.pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class Flow:
    """One ordered pair of clusters: replication `source` -> `target` when `enabled`, and
    MM2's heartbeats into the target's `heartbeats` topic when `emit_heartbeats`."""
    source: str
    target: str
    enabled: bool
    settings: Mapping[str, str]
    """The flow's effective MM2 settings: defaults, top-level keys, then the flow's own."""
    source_cluster: Mapping[str, str]
    target_cluster: Mapping[str, str]
    """`<alias>.*` with the alias stripped, plus the top-level client configs."""
    policy: ReplicationPolicy = field(compare=False)
    topics: RegexList
    topics_exclude: RegexList
    groups: RegexList
    groups_exclude: RegexList
    config_properties_exclude: RegexList

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    def _bool(self, key: str) -> bool:
        return self.settings[key].lower() == "true"

    def _int(self, key: str) -> int:
        return int(self.settings[key])

    def _interval_ms(self, enabled_key: str, seconds_key: str) -> int:
        """MM2's schedule: the interval in ms, or -1 when switched off."""
        return self._int(seconds_key) * 1000 if self._bool(enabled_key) else -1

    # -- the seam with the data path -----------------------------------------------------
    def target_topic(self, source_topic: str) -> str:
        return self.policy.format_remote_topic(self.source, source_topic)

    @property
    def exactly_once(self) -> bool:
        return _EXACTLY_ONCE[self.settings["exactly.once.support"].lower()]

    @property
    def offset_syncs_location(self) -> Side:
        return "target" if self.settings["offset-syncs.topic.location"] == "target" else "source"

    @property
    def offset_syncs_cluster(self) -> str:
        """The alias of the cluster that holds the offset syncs topic."""
        return self.source if self.offset_syncs_location == "source" else self.target

    @property
    def offset_syncs_topic(self) -> str:
        """`mm2-offset-syncs.<the other cluster>.internal` (MirrorSourceConfig)."""
        other = self.target if self.offset_syncs_location == "source" else self.source
        return self.policy.offset_syncs_topic(other)

    @property
    def emit_offset_syncs(self) -> bool:
        return self._bool("emit.offset-syncs.enabled")

    @property
    def progress_topic(self) -> str:
        """Where the mirror's source offsets live on the target: Connect's offset storage
        topic for this pair, `mm2-offsets.<source>.internal`."""
        return f"mm2-offsets.{self.source}.internal"

    def client_config(self, side: Side, role: Role) -> dict[str, str]:
        """Client configs for one role on one side, as MM2 builds them: the cluster's
        configs without role prefixes, overlaid with `<role>.*` stripped."""
        cluster = self.source_cluster if side == "source" else self.target_cluster
        prefix = role + "."
        config = {k: v for k, v in cluster.items()
                  if not k.startswith(_ROLES) and not _worker_only(k)}
        config.update({k[len(prefix):]: v for k, v in cluster.items() if k.startswith(prefix)})
        return config

    # -- topics --------------------------------------------------------------------------
    def should_replicate_topic(self, topic: str) -> bool:
        """MirrorSourceConnector.shouldReplicateTopic: the filter (or a heartbeats topic),
        never an internal topic, never a topic that came from the target (no loops)."""
        selected = (self.topics.matches(topic) and not self.topics_exclude.matches(topic)) or (
            self._bool("heartbeats.replication.enabled") and self.policy.is_heartbeats_topic(topic))
        return (selected and not self.policy.is_internal_topic(topic)
                and not is_cycle(self.policy, topic, self.target))

    def should_checkpoint_topic(self, topic: str) -> bool:
        """MirrorCheckpointTask.shouldCheckpointTopic: the topic filter alone."""
        return self.topics.matches(topic) and not self.topics_exclude.matches(topic)

    def should_sync_config(self, name: str) -> bool:
        return not self.config_properties_exclude.matches(name)

    @property
    def use_source_defaults(self) -> bool:
        return self.settings["use.defaults.from"] == "source"

    @property
    def replication_factor(self) -> int:
        return self._int("replication.factor")

    @property
    def refresh_topics_interval_ms(self) -> int:
        return self._interval_ms("refresh.topics.enabled", "refresh.topics.interval.seconds")

    @property
    def sync_topic_configs_interval_ms(self) -> int:
        return self._interval_ms("sync.topic.configs.enabled",
                                 "sync.topic.configs.interval.seconds")

    @property
    def sync_topic_acls_interval_ms(self) -> int:
        return self._interval_ms("sync.topic.acls.enabled", "sync.topic.acls.interval.seconds")

    # -- internal topics -----------------------------------------------------------------
    @property
    def heartbeats_topic(self) -> str:
        return self.policy.heartbeats_topic()

    @property
    def checkpoints_topic(self) -> str:
        """`<source>.checkpoints.internal`, on the target."""
        return self.policy.checkpoints_topic(self.source)

    def topic_replication_factor(self, internal: InternalTopic) -> int:
        return self._int(f"{internal}.topic.replication.factor")

    @property
    def progress_topic_replication_factor(self) -> int:
        return self._int("offset.storage.replication.factor")

    @property
    def progress_topic_partitions(self) -> int:
        return self._int("offset.storage.partitions")

    # -- groups, checkpoints, heartbeats -------------------------------------------------
    def should_replicate_group(self, group: str) -> bool:
        return self.groups.matches(group) and not self.groups_exclude.matches(group)

    def checkpoint_topic(self, upstream_topic: str) -> str:
        """The target's name for a source topic in a checkpoint
        (MirrorCheckpointTask.renameTopicPartition): a topic that came from the target
        gets its original name back."""
        if self.policy.topic_source(upstream_topic) == self.target:
            return self.policy.original_topic(upstream_topic)
        return self.target_topic(upstream_topic)

    @property
    def refresh_groups_interval_ms(self) -> int:
        return self._interval_ms("refresh.groups.enabled", "refresh.groups.interval.seconds")

    @property
    def emit_checkpoints_interval_ms(self) -> int:
        return self._interval_ms("emit.checkpoints.enabled",
                                 "emit.checkpoints.interval.seconds")

    @property
    def sync_group_offsets_interval_ms(self) -> int:
        return self._interval_ms("sync.group.offsets.enabled",
                                 "sync.group.offsets.interval.seconds")

    @property
    def emit_heartbeats(self) -> bool:
        return self._bool("emit.heartbeats.enabled")

    @property
    def emit_heartbeats_interval_ms(self) -> int:
        return self._interval_ms("emit.heartbeats.enabled", "emit.heartbeats.interval.seconds")


@dataclass(frozen=True)
class MirrorConfig:
    """The whole file: clusters, every pair this process runs, and what was warned about."""
    clusters: tuple[str, ...]
    pairs: tuple[Flow, ...]
    """Every ordered pair with replication or heartbeats on, whose target this process
    serves (MM2's herders)."""
    warnings: tuple[str, ...]
    metrics_port: int = METRICS_PORT_DEFAULT
    """Ours, as the broker's `metrics.port`: the Prometheus endpoint (-1: none; 0: any)."""

    @property
    def flows(self) -> tuple[Flow, ...]:
        """The pairs that replicate (`<src>-><dst>.enabled = true`)."""
        return tuple(pair for pair in self.pairs if pair.enabled)

    def flow(self, source: str, target: str) -> Flow:
        for pair in self.pairs:
            if (pair.source, pair.target) == (source, target):
                return pair
        raise KeyError(f"{source}->{target}")


_BOOLEAN_KEYS = {k for k, v in DEFAULTS.items() if v in ("true", "false")}
_INT_KEYS = {k for k, v in DEFAULTS.items() if re.fullmatch(r"-?\d+", v)}
_REPLICATION_FACTOR_KEYS = {k for k in DEFAULTS if k.endswith("replication.factor")}
_REGEX_KEYS = ("topics", "topics.exclude", "groups", "groups.exclude",
               "config.properties.exclude")


def _worker_only(key: str) -> bool:
    return key in _WORKER_ONLY or key.startswith(_WORKER_ONLY_PREFIXES)


def _known_key(key: str) -> bool:
    return key in DEFAULTS or key in IGNORED


def _top_level_key(key: str) -> bool:
    """Keys that MM2 reads at the top level besides the flow settings."""
    return (key in ("clusters", "exactly.once.source.support", "metrics.port")
            or _known_key(key)
            or key.startswith(_CLIENT_GLOBAL_PREFIXES)
            or key.startswith(("replication.policy.", "config.providers.", "offset.storage.",
                               "config.storage.", "status.storage.", "key.converter.",
                               "value.converter.", "header.converter.", "worker.")))


def _validate(scope: str, settings: Mapping[str, str]) -> None:
    """One-line errors for values MM2's ConfigDef would refuse."""
    for key in _BOOLEAN_KEYS:
        if settings[key].lower() not in ("true", "false"):
            raise MirrorConfigError(f"{scope}{key}: expected true or false, got "
                                    f"{settings[key]!r}")
    for key in _INT_KEYS:
        try:
            value = int(settings[key])
        except ValueError:
            raise MirrorConfigError(f"{scope}{key}: expected an integer, got "
                                    f"{settings[key]!r}") from None
        if key in _REPLICATION_FACTOR_KEYS and value < 1 and value != -1:
            raise MirrorConfigError(f"{scope}{key}: must be at least 1 (or -1, the broker's "
                                    f"default), got {value}")
    if settings["tasks.max"] and int(settings["tasks.max"]) < 1:
        raise MirrorConfigError(f"{scope}tasks.max: must be at least 1")
    if settings["offset-syncs.topic.location"] not in ("source", "target"):
        raise MirrorConfigError(f"{scope}offset-syncs.topic.location: expected source or "
                                f"target, got {settings['offset-syncs.topic.location']!r}")
    if settings["exactly.once.support"].lower() not in _EXACTLY_ONCE:
        raise MirrorConfigError(f"{scope}exactly.once.support: expected one of "
                                f"{', '.join(_EXACTLY_ONCE)}, got "
                                f"{settings['exactly.once.support']!r}")
    if settings["use.defaults.from"] not in ("source", "target"):
        raise MirrorConfigError(f"{scope}use.defaults.from: expected source or target")


def _flow(source: str, target: str, enabled: bool, settings: dict[str, str],
          clusters: Mapping[str, Mapping[str, str]]) -> Flow:
    scope = f"{source}->{target}: "
    _validate(scope, settings)
    try:
        policy = make_policy(settings["replication.policy.class"], source,
                             settings["replication.policy.separator"],
                             settings["replication.policy.internal.topic.separator.enabled"]
                             .lower() == "true")
    except ValueError as error:
        raise MirrorConfigError(f"{scope}{error}") from None
    regexes = {key: RegexList.parse(scope + key, settings[key]) for key in _REGEX_KEYS}
    return Flow(source=source, target=target, enabled=enabled, settings=settings,
                source_cluster=clusters[source], target_cluster=clusters[target],
                policy=policy, topics=regexes["topics"],
                topics_exclude=regexes["topics.exclude"], groups=regexes["groups"],
                groups_exclude=regexes["groups.exclude"],
                config_properties_exclude=regexes["config.properties.exclude"])


def _split_flow_key(key: str) -> tuple[str, str, str] | None:
    if "->" not in key:
        return None
    source, rest = key.split("->", 1)
    target, dot, setting = rest.partition(".")
    if not dot or not source or not target:
        raise MirrorConfigError(f"{key}: expected <source>-><target>.<config>")
    return source, target, setting


def parse_mirror_config(raw: Mapping[str, str], only_targets: Iterable[str] | None = None
                        ) -> MirrorConfig:
    """Read MM2's properties; `only_targets` (`--clusters`) keeps the pairs whose target
    it names, as MM2's dedicated mode does."""
    clusters = tuple(alias for alias in re.split(r"\s*,\s*", raw.get("clusters", "").strip())
                     if alias)
    if not clusters:
        raise MirrorConfigError("clusters: required (the list of cluster aliases)")
    if len(set(clusters)) != len(clusters):
        raise MirrorConfigError(f"clusters: an alias is repeated in {raw['clusters']!r}")
    warnings: list[str] = []
    cluster_props: dict[str, dict[str, str]] = {alias: {} for alias in clusters}
    top: dict[str, str] = {}
    flow_overrides: dict[tuple[str, str], dict[str, str]] = {}
    for key, value in raw.items():
        flow_key = _split_flow_key(key)
        if flow_key is not None:
            source, target, setting = flow_key
            for alias in (source, target):
                if alias not in clusters:
                    raise MirrorConfigError(f"{key}: flow names cluster {alias!r}, which is "
                                            f"not in clusters ({', '.join(clusters)})")
            if source == target:
                raise MirrorConfigError(f"{key}: a flow needs two different clusters")
            if setting != "enabled" and not _known_key(setting):
                warnings.append(f"unknown config {key} (ignored)")
            flow_overrides.setdefault((source, target), {})[setting] = value
            continue
        alias, dot, rest = key.partition(".")
        if dot and alias in clusters:
            cluster_props[alias][rest] = value
            continue
        if not _top_level_key(key):
            if dot and rest == "bootstrap.servers":
                raise MirrorConfigError(f"{key}: unknown cluster alias {alias!r} (clusters: "
                                        f"{', '.join(clusters)})")
            warnings.append(f"unknown config {key} (ignored)")
            continue
        if key in IGNORED:
            warnings.append(f"{key} is MM2's but has no effect in odradek mirror")
        top[key] = value
    for alias, props in cluster_props.items():
        for key, value in top.items():
            if key.startswith(_CLIENT_GLOBAL_PREFIXES):
                props.setdefault(key, value)
        if not props.get("bootstrap.servers"):
            raise MirrorConfigError(f"{alias}.bootstrap.servers: required for cluster "
                                    f"{alias!r}")
    targets = _only_targets(clusters, only_targets)
    global_heartbeats = top.get("emit.heartbeats.enabled", "true").lower() == "true"
    pairs = []
    for source in clusters:
        for target in clusters:
            if source == target or target not in targets:
                continue
            overrides = flow_overrides.get((source, target), {})
            enabled = overrides.get("enabled", "false").lower() == "true"
            heartbeats = overrides.get("emit.heartbeats.enabled", str(global_heartbeats))
            if not enabled and heartbeats.lower() != "true":
                continue
            settings = dict(DEFAULTS)
            if "exactly.once.source.support" in top:
                settings["exactly.once.support"] = top["exactly.once.source.support"]
            settings.update({k: v for k, v in top.items() if k in DEFAULTS})
            settings.update({setting: cluster_props[target][key]
                             for key, setting in _WORKER_SETTINGS.items()
                             if key in cluster_props[target]})
            settings.update({k: v for k, v in overrides.items() if k in DEFAULTS})
            pairs.append(_flow(source, target, enabled, settings, cluster_props))
    if not any(pair.enabled for pair in pairs):
        warnings.append("no flow is enabled (set <source>-><target>.enabled = true)")
    try:
        metrics_port = int(top.get("metrics.port", METRICS_PORT_DEFAULT))
    except ValueError:
        raise MirrorConfigError(f"metrics.port: expected an integer, got "
                                f"{top['metrics.port']!r}") from None
    return MirrorConfig(clusters, tuple(pairs), tuple(warnings), metrics_port)


def _only_targets(clusters: Sequence[str], only: Iterable[str] | None) -> set[str]:
    if only is None:
        return set(clusters)
    chosen = set(only)
    unknown = sorted(chosen - set(clusters))
    if unknown:
        raise MirrorConfigError(f"--clusters: unknown cluster alias {', '.join(unknown)} "
                                f"(clusters: {', '.join(clusters)})")
    return chosen

