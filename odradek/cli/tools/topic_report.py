"""What `odradek topics describe` prints: each topic's summary line and its partitions' lines,
narrowed by kafka-topics' report filters (under-replicated, under/at min ISR, unavailable,
topics with overrides), as text or as JSON."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicState:
    name: str
    topic_id: str | None
    partitions: tuple[PartitionState, ...]
    overrides: Mapping[str, str | None]
    """The configs whose source is not the built-in default, in the order the broker lists them:
    what kafka-topics prints after `Configs:`."""
    min_isr: int
    """The topic's effective min.insync.replicas."""

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(frozen=True)
class Filters:
    under_replicated: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    unavailable: bool = False
    with_overrides: bool = False
    live_brokers: frozenset[int] = field(default_factory=frozenset)

    @property
    def reports(self) -> bool:
        """A partition report narrows the output to matching partitions, without summaries."""
        return self.under_replicated or self.under_min_isr or self.at_min_isr or self.unavailable


def is_under_replicated(p: PartitionState) -> bool:
    return len(p.isr) < len(p.replicas)


def is_under_min_isr(p: PartitionState, min_isr: int) -> bool:
    return p.leader is None or len(p.isr) < min_isr


def is_at_min_isr(p: PartitionState, min_isr: int) -> bool:
    return len(p.isr) == min_isr


def is_unavailable(p: PartitionState, live_brokers: Collection[int]) -> bool:
    return p.leader is None or p.leader not in live_brokers


def offline(p: PartitionState, live_brokers: Collection[int]) -> list[int]:
    """The replicas on brokers that are not live (fenced, stopped or unknown)."""
    return [r for r in p.replicas if r not in live_brokers]


def shown_partitions(topic: TopicState, filters: Filters) -> list[PartitionState]:
    """The partitions kafka-topics prints for this topic: all of them, or with report filters
    those matching any filter, or none with `--topics-with-overrides`."""
    if filters.with_overrides:
        return []
    partitions = sorted(topic.partitions, key=lambda p: p.partition)
    if not filters.reports:
        return partitions
    return [p for p in partitions if
            (filters.under_replicated and is_under_replicated(p))
            or (filters.unavailable and is_unavailable(p, filters.live_brokers))
            or (filters.under_min_isr and is_under_min_isr(p, topic.min_isr))
            or (filters.at_min_isr and is_at_min_isr(p, topic.min_isr))]


def shows_summary(topic: TopicState, filters: Filters) -> bool:
    if filters.reports:
        return False
    return bool(topic.overrides) or not filters.with_overrides


def _ids(nodes: Sequence[int]) -> str:
    return ",".join(map(str, nodes))


def summary_line(topic: TopicState) -> str:
    configs = ",".join(f"{k}={'null' if v is None else v}" for k, v in topic.overrides.items())
    fields = [f"Topic: {topic.name}"]
    if topic.topic_id:
        fields.append(f"TopicId: {topic.topic_id}")
    fields += [f"PartitionCount: {len(topic.partitions)}",
               f"ReplicationFactor: {topic.replication_factor}", f"Configs: {configs}"]
    return "\t".join(fields)


def partition_line(topic: str, p: PartitionState, live_brokers: Collection[int]) -> str:
    fields = ["", f"Topic: {topic}", f"Partition: {p.partition}",
              f"Leader: {'none' if p.leader is None else p.leader}",
              f"Replicas: {_ids(p.replicas)}", f"Isr: {_ids(p.isr)}"]
    down = offline(p, live_brokers)
    if down:
        fields.append(f"Offline: {_ids(down)}")
    return "\t".join(fields)


def describe_lines(topics: Sequence[TopicState], filters: Filters) -> list[str]:
    lines = []
    for topic in topics:
        if shows_summary(topic, filters):
            lines.append(summary_line(topic))
        lines += [partition_line(topic.name, p, filters.live_brokers)
                  for p in shown_partitions(topic, filters)]
    return lines


def describe_json(topics: Sequence[TopicState], filters: Filters) -> list[dict[str, Any]]:
    """The same data as `describe_lines`: a topic is listed when any of its lines is printed;
    `partitions` holds the partitions printed (absent with `--topics-with-overrides`)."""
    result = []
    for topic in topics:
        partitions = shown_partitions(topic, filters)
        if not shows_summary(topic, filters) and not partitions:
            continue
        entry: dict[str, Any] = {
            "topic": topic.name, "topic_id": topic.topic_id,
            "partition_count": len(topic.partitions),
            "replication_factor": topic.replication_factor,
            "configs": dict(topic.overrides),
        }
        if not filters.with_overrides:
            entry["partitions"] = [
                {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isr), "offline": offline(p, filters.live_brokers)}
                for p in partitions]
        result.append(entry)
    return result
