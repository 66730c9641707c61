"""MM2's properties read into flows: MM2's names and defaults, flow overrides, client configs
per alias and role, `--clusters`, warnings for unknown keys and one-line errors."""

from __future__ import annotations

import pytest

from odradek.mirror.config import MirrorConfigError, parse_mirror_config
from odradek.mirror.policy import IdentityReplicationPolicy

BASE = {
    "clusters": "east, west",
    "east.bootstrap.servers": "127.0.0.1:9092",
    "west.bootstrap.servers": "127.0.0.1:9093",
    "east->west.enabled": "true",
}


def parse(extra: dict[str, str] | None = None, only: list[str] | None = None):
    return parse_mirror_config({**BASE, **(extra or {})}, only)


def test_mm2_defaults() -> None:
    flow = parse().flow("east", "west")
    assert flow.enabled and flow.name == "east->west"
    assert flow.replication_factor == 2
    assert flow.topic_replication_factor("heartbeats") == 3
    assert flow.topic_replication_factor("checkpoints") == 3
    assert flow.topic_replication_factor("offset-syncs") == 3
    assert flow.refresh_topics_interval_ms == 600_000
    assert flow.refresh_groups_interval_ms == 600_000
    assert flow.sync_topic_configs_interval_ms == 600_000
    assert flow.emit_heartbeats_interval_ms == 1_000
    assert flow.emit_checkpoints_interval_ms == 60_000
    assert flow.sync_group_offsets_interval_ms == -1  # MM2: off by default
    assert flow.offset_syncs_location == "source" and flow.offset_syncs_cluster == "east"
    assert flow.offset_syncs_topic == "mm2-offset-syncs.west.internal"
    assert flow.checkpoints_topic == "east.checkpoints.internal"
    assert flow.heartbeats_topic == "heartbeats"
    assert flow.progress_topic == "mm2-offsets.east.internal"
    assert flow.settings["tasks.max"] == "1"  # checked, and otherwise unused
    assert flow.exactly_once  # ours: on by default


def test_default_topic_group_and_config_filters() -> None:
    flow = parse().flow("east", "west")
    assert flow.should_replicate_topic("orders")
    for internal in ("__consumer_offsets", "mm2-offsets.east.internal", "x-internal",
                     "orders.replica", ".hidden", "east.checkpoints.internal"):
        assert not flow.should_replicate_topic(internal), internal
    assert flow.should_replicate_group("payments")
    for group in ("console-consumer-123", "connect-x", "__internal"):
        assert not flow.should_replicate_group(group)
    assert flow.should_sync_config("retention.ms")
    assert flow.should_sync_config("cleanup.policy")
    for excluded in ("min.insync.replicas", "unclean.leader.election.enable",
                     "message.timestamp.type", "follower.replication.throttled.replicas"):
        assert not flow.should_sync_config(excluded)


def test_topics_and_groups_are_whole_name_regex_lists() -> None:
    flow = parse({"topics": "orders, pay.*", "topics.exclude": "payroll",
                  "groups": "app-.*", "groups.exclude": ""}).flow("east", "west")
    assert flow.should_replicate_topic("orders")
    assert not flow.should_replicate_topic("orders2")
    assert flow.should_replicate_topic("payments")
    assert not flow.should_replicate_topic("payroll")
    assert flow.should_replicate_group("app-1") and not flow.should_replicate_group("xapp-1")


def test_empty_topics_list_matches_nothing_but_heartbeats() -> None:
    flow = parse({"topics": ""}).flow("east", "west")
    assert not flow.should_replicate_topic("orders")
    assert flow.should_replicate_topic("heartbeats")
    off = parse({"topics": "", "heartbeats.replication.enabled": "false"}).flow("east", "west")
    assert not off.should_replicate_topic("heartbeats")


def test_flow_overrides_win_over_top_level() -> None:
    config = parse({"replication.factor": "1", "west->east.enabled": "true",
                    "east->west.replication.factor": "3",
                    "east->west.topics": "orders"})
    assert config.flow("east", "west").replication_factor == 3
    assert config.flow("west", "east").replication_factor == 1
    assert config.flow("west", "east").should_replicate_topic("other")
    assert not config.flow("east", "west").should_replicate_topic("other")


def test_cluster_client_configs_per_role() -> None:
    flow = parse({"east.security.protocol": "SASL_PLAINTEXT",
                  "east.producer.linger.ms": "5", "east.consumer.fetch.max.bytes": "1000",
                  "sasl.mechanism": "PLAIN"}).flow("east", "west")
    producer = flow.client_config("source", "producer")
    assert producer == {"bootstrap.servers": "127.0.0.1:9092",
                        "security.protocol": "SASL_PLAINTEXT", "linger.ms": "5",
                        "sasl.mechanism": "PLAIN"}
    assert "linger.ms" not in flow.client_config("source", "consumer")
    assert flow.client_config("source", "consumer")["fetch.max.bytes"] == "1000"
    assert flow.client_config("target", "admin") == {"bootstrap.servers": "127.0.0.1:9093",
                                                      "sasl.mechanism": "PLAIN"}


def test_heartbeat_pairs_exist_for_disabled_flows_as_in_mm2() -> None:
    config = parse()
    assert [pair.name for pair in config.pairs] == ["east->west", "west->east"]
    assert [flow.name for flow in config.flows] == ["east->west"]
    assert not config.flow("west", "east").enabled
    quiet = parse({"emit.heartbeats.enabled": "false"})
    assert [pair.name for pair in quiet.pairs] == ["east->west"]
    one = parse({"west->east.emit.heartbeats.enabled": "false"})
    assert [pair.name for pair in one.pairs] == ["east->west"]


def test_clusters_keeps_the_pairs_whose_target_it_names() -> None:
    config = parse({"west->east.enabled": "true"}, only=["west"])
    assert [flow.name for flow in config.flows] == ["east->west"]
    assert [flow.name for flow in parse({"west->east.enabled": "true"}, ["east"]).flows] == [
        "west->east"]


def test_exactly_once_switch() -> None:
    assert not parse({"exactly.once.support": "disabled"}).flow("east", "west").exactly_once
    assert not parse({"east->west.exactly.once.support": "disabled"}).flow(
        "east", "west").exactly_once
    assert parse({"exactly.once.support": "required"}).flow("east", "west").exactly_once
    assert not parse({"exactly.once.source.support": "disabled"}).flow(
        "east", "west").exactly_once


def test_offset_syncs_on_the_target() -> None:
    flow = parse({"offset-syncs.topic.location": "target"}).flow("east", "west")
    assert flow.offset_syncs_cluster == "west"
    assert flow.offset_syncs_topic == "mm2-offset-syncs.east.internal"


def test_identity_policy_by_class_name() -> None:
    flow = parse({"replication.policy.class":
                  "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"}).flow(
        "east", "west")
    assert isinstance(flow.policy, IdentityReplicationPolicy)
    assert flow.target_topic("orders") == "orders"
    assert flow.target_topic("heartbeats") == "east.heartbeats"


def test_separator() -> None:
    flow = parse({"replication.policy.separator": "_"}).flow("east", "west")
    assert flow.target_topic("orders") == "east_orders"
    assert flow.checkpoints_topic == "east_checkpoints_internal"
    plain = parse({"replication.policy.separator": "_",
                   "replication.policy.internal.topic.separator.enabled": "false"}
                  ).flow("east", "west")
    assert plain.checkpoints_topic == "east.checkpoints.internal"


def test_unknown_keys_are_warnings() -> None:
    config = parse({"no.such.key": "1", "east->west.no.such": "2", "offset.lag.max": "7"})
    assert "unknown config no.such.key (ignored)" in config.warnings
    assert "unknown config east->west.no.such (ignored)" in config.warnings
    assert any("offset.lag.max" in warning for warning in config.warnings)


@pytest.mark.parametrize(("extra", "message"), [
    ({"north.bootstrap.servers": "x:1"}, "unknown cluster alias 'north'"),
    ({"east->north.enabled": "true"}, "flow names cluster 'north'"),
    ({"topics": "ord[ers"}, "east->west: topics: bad regex 'ord[ers'"),
    ({"east->west.groups.exclude": "(x"}, "bad regex"),
    ({"replication.factor": "two"}, "replication.factor: expected an integer"),
    ({"emit.checkpoints.enabled": "yes"}, "expected true or false"),
    ({"exactly.once.support": "maybe"}, "exactly.once.support"),
    ({"offset-syncs.topic.location": "middle"}, "offset-syncs.topic.location"),
    ({"replication.policy.class": "com.example.Mine"}, "unknown replication.policy.class"),
    ({"west.bootstrap.servers": ""}, "west.bootstrap.servers: required"),
    ({"clusters": ""}, "clusters: required"),
])
def test_bad_configs_are_one_line_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(MirrorConfigError) as error:
        parse(extra)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_clusters_naming_an_unknown_alias() -> None:
    with pytest.raises(MirrorConfigError, match="--clusters: unknown cluster alias north"):
        parse(only=["north"])


def test_topic_acl_sync_is_on_every_ten_minutes_by_default_as_in_mm2() -> None:
    assert parse().flow("east", "west").sync_topic_acls_interval_ms == 600_000
    assert parse({"sync.topic.acls.interval.seconds": "5"}).flow(
        "east", "west").sync_topic_acls_interval_ms == 5_000
    off = parse({"east->west.sync.topic.acls.enabled": "false"})
    assert off.flow("east", "west").sync_topic_acls_interval_ms == -1
    assert not any("sync.topic.acls" in warning for warning in off.warnings)


def test_target_cluster_worker_configs_set_the_flows_into_it_as_in_mm2() -> None:
    """MirrorMakerConfig.workerConfig reads `<target>.*`: Connect's offset flush interval and
    exactly-once switch for the flows into that cluster; they are no client configs."""
    config = parse({"west->east.enabled": "true", "west.offset.flush.interval.ms": "1000",
                    "west.exactly.once.source.support": "disabled",
                    "west.offset.storage.replication.factor": "1",
                    "west.plugin.discovery": "service_load"})
    into_west, into_east = config.flow("east", "west"), config.flow("west", "east")
    assert into_west.settings["offset.flush.interval.ms"] == "1000"
    assert not into_west.exactly_once
    assert into_east.settings["offset.flush.interval.ms"] == "60000"
    assert into_east.exactly_once
    for side in ("source", "target"):
        for role in ("producer", "consumer", "admin"):
            assert set(into_west.client_config(side, role)) == {  # type: ignore[arg-type]
                "bootstrap.servers"}
