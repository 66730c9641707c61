"""Kafka Exporter's series from one view of the cluster, as kafka_exporter computes them."""

from __future__ import annotations

from odradek.exporter.series import ClusterView, PartitionView, exporter_families


def samples(view: ClusterView) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in exporter_families(view) for s in family.samples}


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_topic_partition_series() -> None:
    view = ClusterView(
        brokers={1: "h1:9092", 2: "h2:9092"},
        partitions=[PartitionView("t", 0, 1, (1, 2), (1, 2)),
                    PartitionView("t", 1, 1, (2, 1), (1,)),
                    PartitionView("t", 2, -1, (2,), ())],
        newest={("t", 0): 10, ("t", 1): 7}, oldest={("t", 0): 2, ("t", 1): 0})
    found = samples(view)
    assert value(found, "kafka_brokers") == 2
    assert value(found, "kafka_broker_info", id="2", address="h2:9092") == 1
    assert value(found, "kafka_topic_partitions", topic="t") == 3
    p0, p1, p2 = ({"topic": "t", "partition": str(p)} for p in range(3))
    assert value(found, "kafka_topic_partition_current_offset", **p0) == 10
    assert value(found, "kafka_topic_partition_oldest_offset", **p0) == 2
    assert value(found, "kafka_topic_partition_leader_is_preferred", **p0) == 1
    assert value(found, "kafka_topic_partition_leader_is_preferred", **p1) == 0
    assert value(found, "kafka_topic_partition_under_replicated_partition", **p1) == 1
    assert value(found, "kafka_topic_partition_in_sync_replica", **p1) == 1
    assert value(found, "kafka_topic_partition_replicas", **p2) == 1
    assert value(found, "kafka_topic_partition_leader_is_preferred", **p2) == 0
    assert ("kafka_topic_partition_leader", tuple(sorted(p2.items()))) not in found


def test_group_lag_is_the_newest_offset_minus_the_committed_one() -> None:
    view = ClusterView(
        newest={("t", 0): 10, ("t", 1): 7, ("u", 0): 5},
        members={"g": 2},
        committed={"g": {("t", 0): 4, ("t", 1): -1, ("u", 0): -1}})
    found = samples(view)
    of = {"consumergroup": "g", "topic": "t"}
    assert value(found, "kafka_consumergroup_current_offset", partition="0", **of) == 4
    assert value(found, "kafka_consumergroup_lag", partition="0", **of) == 6
    assert value(found, "kafka_consumergroup_lag", partition="1", **of) == -1  # none committed
    assert value(found, "kafka_consumergroup_lag_sum", **of) == 6
    assert value(found, "kafka_consumergroup_current_offset_sum", **of) == 3
    assert value(found, "kafka_consumergroup_members", consumergroup="g") == 2
    # a topic none of whose partitions has a committed offset is left out
    assert not any(labels and ("topic", "u") in labels for _, labels in found)
