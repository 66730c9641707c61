"""Kafka Exporter's series (github.com/danielqsj/kafka_exporter), computed from one look at
the cluster: the metadata, each partition's newest and oldest offsets and each group's
committed offsets and members. Pure: `cluster.py` gathers the view.

As Kafka Exporter does: a group's topic is left out while none of its partitions has a
committed offset; lag is the partition's newest offset (its high watermark) minus the
committed offset, -1 where there is no committed offset; partitions without a leader have
no leader or offset series."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily

from odradek.exporter.audit_series import BucketResult

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    """-1 when the partition has none."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(slots=True)
class ClusterView:
    brokers: dict[int, str] = field(default_factory=dict)
    """Live broker id to its `host:port`."""
    partitions: list[PartitionView] = field(default_factory=list)
    newest: dict[TopicPartition, int] = field(default_factory=dict)
    oldest: dict[TopicPartition, int] = field(default_factory=dict)
    members: dict[str, int] = field(default_factory=dict)
    """Group id to its member count."""
    committed: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    """Group id to its committed offsets (-1: none)."""
    audit: list[BucketResult] = field(default_factory=list)
    """The latest mirror audit results on the audit topic."""


def exporter_families(view: ClusterView) -> Iterator[GaugeMetricFamily]:
    yield GaugeMetricFamily("kafka_brokers", "Number of Brokers in the Kafka Cluster.",
                            len(view.brokers))
    info = GaugeMetricFamily("kafka_broker_info", "Information about the Kafka Broker.",
                             labels=["id", "address"])
    for broker_id, address in sorted(view.brokers.items()):
        info.add_metric([str(broker_id), address], 1)
    yield info
    yield from _topic_families(view)
    yield from _group_families(view)


def _topic_families(view: ClusterView) -> Iterator[GaugeMetricFamily]:
    labels = ["topic", "partition"]

    def family(name: str, doc: str) -> GaugeMetricFamily:
        return GaugeMetricFamily("kafka_topic_partition_" + name, doc, labels=labels)

    partitions = GaugeMetricFamily("kafka_topic_partitions",
                                   "Number of partitions for this Topic", labels=["topic"])
    newest = family("current_offset", "Current Offset of a Broker at Topic/Partition")
    oldest = family("oldest_offset", "Oldest Offset of a Broker at Topic/Partition")
    leader = family("leader", "Leader Broker ID of this Topic/Partition")
    replicas = family("replicas", "Number of Replicas for this Topic/Partition")
    in_sync = family("in_sync_replica", "Number of In-Sync Replicas for this "
                     "Topic/Partition")
    preferred = family("leader_is_preferred", "1 if Topic/Partition is using the "
                       "Preferred Broker")
    under = family("under_replicated_partition", "1 if Topic/Partition is under Replicated")
    counts: dict[str, int] = {}
    for p in view.partitions:
        key = (p.topic, p.partition)
        values = [p.topic, str(p.partition)]
        counts[p.topic] = counts.get(p.topic, 0) + 1
        if p.leader >= 0:
            leader.add_metric(values, p.leader)
        if key in view.newest:
            newest.add_metric(values, view.newest[key])
        if key in view.oldest:
            oldest.add_metric(values, view.oldest[key])
        replicas.add_metric(values, len(p.replicas))
        in_sync.add_metric(values, len(p.isr))
        preferred.add_metric(values, int(p.leader >= 0 and p.replicas[:1] == (p.leader,)))
        under.add_metric(values, int(len(p.isr) < len(p.replicas)))
    for topic, count in sorted(counts.items()):
        partitions.add_metric([topic], count)
    yield from (partitions, newest, oldest, leader, replicas, in_sync, preferred, under)


def _group_families(view: ClusterView) -> Iterator[GaugeMetricFamily]:
    partition_labels = ["consumergroup", "topic", "partition"]
    current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Current Offset of a "
                                "ConsumerGroup at Topic/Partition", labels=partition_labels)
    current_sum = GaugeMetricFamily("kafka_consumergroup_current_offset_sum", "Current "
                                    "Offset of a ConsumerGroup at Topic for all partitions",
                                    labels=["consumergroup", "topic"])
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "Current Approximate Lag of a "
                            "ConsumerGroup at Topic/Partition", labels=partition_labels)
    lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Current Approximate Lag of "
                                "a ConsumerGroup at Topic for all partitions",
                                labels=["consumergroup", "topic"])
    members = GaugeMetricFamily("kafka_consumergroup_members",
                                "Amount of members in a consumer group",
                                labels=["consumergroup"])
    for group, count in sorted(view.members.items()):
        members.add_metric([group], count)
    for group, offsets in sorted(view.committed.items()):
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        for topic, committed in by_topic.items():
            if all(offset == -1 for _, offset in committed):
                continue
            offsets_total = lags_total = 0
            for partition, offset in committed:
                values = [group, topic, str(partition)]
                offsets_total += offset
                current.add_metric(values, offset)
                newest = view.newest.get((topic, partition))
                if newest is None:
                    continue
                behind = -1 if offset == -1 else newest - offset
                if offset != -1:
                    lags_total += behind
                lag.add_metric(values, behind)
            current_sum.add_metric([group, topic], offsets_total)
            lag_sum.add_metric([group, topic], lags_total)
    yield from (current, current_sum, lag, lag_sum, members)
