"""MM2's replication policies: remote topic names, sources, internal topics, cycles."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek.mirror.policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    is_cycle,
)

DEFAULT = DefaultReplicationPolicy()


def test_default_policy_names() -> None:
    assert DEFAULT.format_remote_topic("east", "orders") == "east.orders"
    assert DEFAULT.topic_source("east.orders") == "east"
    assert DEFAULT.upstream_topic("east.orders") == "orders"
    assert DEFAULT.topic_source("orders") is None
    assert DEFAULT.upstream_topic("orders") is None
    assert DEFAULT.original_topic("west.east.orders") == "orders"
    assert DEFAULT.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert DEFAULT.checkpoints_topic("east") == "east.checkpoints.internal"
    assert DEFAULT.is_heartbeats_topic("heartbeats")
    assert DEFAULT.is_heartbeats_topic("east.heartbeats")
    assert DEFAULT.is_heartbeats_topic("west.east.heartbeats")
    assert not DEFAULT.is_heartbeats_topic("heartbeats2")


def test_java_split_drops_trailing_empty_parts() -> None:
    assert DEFAULT.topic_source("east.") is None
    assert DEFAULT.topic_source("east..") is None
    assert DEFAULT.topic_source(".orders") == ""
    assert DEFAULT.topic_source("a..b") == "a"


def test_internal_topics() -> None:
    for topic in ("__consumer_offsets", ".x", "mm2-offsets.east.internal", "connect-internal",
                  "east.checkpoints.internal"):
        assert DEFAULT.is_internal_topic(topic)
    assert DEFAULT.is_checkpoints_topic("east.checkpoints.internal")
    assert not DEFAULT.is_internal_topic("orders")


def test_active_active_never_loops() -> None:
    # east->west: `west.orders` on east came from west; mirroring it back would loop.
    assert is_cycle(DEFAULT, "west.orders", "west")
    assert is_cycle(DEFAULT, "north.west.orders", "west")
    assert not is_cycle(DEFAULT, "orders", "west")
    assert not is_cycle(DEFAULT, "north.orders", "west")


def test_identity_policy() -> None:
    policy = IdentityReplicationPolicy("east")
    assert policy.format_remote_topic("east", "orders") == "orders"
    assert policy.format_remote_topic("east", "heartbeats") == "east.heartbeats"
    assert policy.topic_source("orders") == "east"
    assert policy.upstream_topic("orders") == "orders"
    assert policy.original_topic("orders") == "orders"
    assert not is_cycle(policy, "orders", "west")  # MM2's identity policy sees no cycles
    assert is_cycle(policy, "west.heartbeats", "west")


names = st.text(st.sampled_from("abc-_"), min_size=1, max_size=6)


@given(names, names, st.sampled_from([".", "_", "::"]))
def test_remote_topic_round_trip(source: str, topic: str, separator: str) -> None:
    policy = DefaultReplicationPolicy(separator)
    if separator in source or separator in topic:
        return
    remote = policy.format_remote_topic(source, topic)
    assert policy.topic_source(remote) == source
    assert policy.upstream_topic(remote) == topic
    assert policy.original_topic(remote) == topic
    assert is_cycle(policy, remote, source)
