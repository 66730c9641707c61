"""MirrorMaker 2's replication policies: how a mirrored topic is named on the target, how to
tell where a topic came from, and the names of MM2's internal topics.

`DefaultReplicationPolicy` prefixes the source alias (`east.orders`);
`IdentityReplicationPolicy` keeps the name (`orders`) except for heartbeats. Both follow
Kafka's `connect/mirror-client` classes of the same names, including their corner cases
(Java's `String.split`, which drops trailing empty strings).
"""

from __future__ import annotations

HEARTBEATS_TOPIC = "heartbeats"


class DefaultReplicationPolicy:
    """`<source><separator><topic>` on the target; internal topics use the separator too
    unless `replication.policy.internal.topic.separator.enabled` is false."""

    def __init__(self, separator: str = ".", internal_topic_separator_enabled: bool = True
                 ) -> None:
        if not separator:
            raise ValueError("replication.policy.separator must not be empty")
        self.separator = separator
        self._internal_separator = separator if internal_topic_separator_enabled else "."

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        return source_alias + self.separator + topic

    def topic_source(self, topic: str) -> str | None:
        """The alias a remote topic came from, or None for a topic that was not mirrored."""
        parts = topic.split(self.separator)
        while parts and not parts[-1]:
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first written to."""
        while True:
            upstream = self.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return topic
            topic = upstream

    def heartbeats_topic(self) -> str:
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, alias: str) -> str:
        return f"mm2-offset-syncs{self._internal_separator}{alias}{self._internal_suffix()}"

    def checkpoints_topic(self, alias: str) -> str:
        return alias + self._checkpoints_suffix()

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self._checkpoints_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(self._internal_suffix())

    def is_internal_topic(self, topic: str) -> bool:
        """MM2's own topics, Kafka's (`__...`, `.`...) and Connect's (`-internal`)."""
        return (self.is_mm2_internal_topic(topic) or topic.startswith(("__", "."))
                or topic.endswith(("-internal", ".internal")))

    def _internal_suffix(self) -> str:
        return self._internal_separator + "internal"

    def _checkpoints_suffix(self) -> str:
        return self._internal_separator + "checkpoints" + self._internal_suffix()


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Topics keep their names on the target (heartbeats are still prefixed), so the policy
    cannot see cycles: an active-active pair must not use it."""

    def __init__(self, source_alias: str | None, separator: str = ".",
                 internal_topic_separator_enabled: bool = True) -> None:
        super().__init__(separator, internal_topic_separator_enabled)
        self.source_alias = source_alias

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())


ReplicationPolicy = DefaultReplicationPolicy
"""The type every policy has (Identity is a Default with other naming)."""

POLICY_CLASSES = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": "default",
    "DefaultReplicationPolicy": "default",
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": "identity",
    "IdentityReplicationPolicy": "identity",
}
"""`replication.policy.class` values we implement, by Kafka's class name (or simple name)."""


def make_policy(class_name: str, source_alias: str, separator: str,
                internal_topic_separator_enabled: bool) -> ReplicationPolicy:
    """The policy `replication.policy.class` names, configured for a flow from
    `source_alias` as MM2 configures it (Identity learns `source.cluster.alias`)."""
    kind = POLICY_CLASSES.get(class_name)
    if kind == "identity":
        return IdentityReplicationPolicy(source_alias, separator,
                                         internal_topic_separator_enabled)
    if kind == "default":
        return DefaultReplicationPolicy(separator, internal_topic_separator_enabled)
    raise ValueError(f"unknown replication.policy.class {class_name!r} (supported: "
                     "DefaultReplicationPolicy, IdentityReplicationPolicy)")


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """True when `topic` came (perhaps over several hops) from `target_alias`: mirroring it
    there would loop (MirrorSourceConnector.isCycle)."""
    while True:
        source = policy.topic_source(topic)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False
        topic = upstream
