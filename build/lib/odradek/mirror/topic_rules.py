"""What MirrorSourceConnector decides about the target's topics, without IO: which topics
to create (with the source's partition count) or grow, and which configs to copy
(DefaultConfigPropertyFilter, MirrorSourceConnector.targetConfig and
incrementalAlterConfigs)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from odradek.mirror.config import Flow


@dataclass(frozen=True)
class SourceConfig:
    """One entry of a source topic's DescribeConfigs."""
    name: str
    value: str | None
    is_default: bool
    read_only: bool = False
    sensitive: bool = False
    static_broker: bool = False


@dataclass(frozen=True)
class TopicPlan:
    create: Mapping[str, tuple[str, int]]
    """Target topic -> (source topic, partition count) for topics the target lacks."""
    grow: Mapping[str, int]
    """Target topic -> the source's larger partition count."""


def plan_topics(flow: Flow, source: Mapping[str, int], target: Mapping[str, int]) -> TopicPlan:
    """The target topics to create and to grow for the source topics (with their
    partition counts) that the flow replicates; `target` lists the target's topics."""
    create: dict[str, tuple[str, int]] = {}
    grow: dict[str, int] = {}
    for topic, partitions in sorted(source.items()):
        if not flow.should_replicate_topic(topic):
            continue
        remote = flow.target_topic(topic)
        if remote not in target:
            create[remote] = (topic, partitions)
        elif partitions > target[remote]:
            grow[remote] = partitions
    return TopicPlan(create, grow)


def _synced(flow: Flow, entries: Iterable[SourceConfig]) -> list[SourceConfig]:
    return [entry for entry in entries
            if not entry.read_only and not entry.sensitive and not entry.static_broker
            and flow.should_sync_config(entry.name)]


def configs_for_new_topic(flow: Flow, entries: Iterable[SourceConfig]) -> dict[str, str]:
    """The configs a new target topic is created with: the source's explicit ones (and its
    defaults with `use.defaults.from=source`)."""
    return {entry.name: entry.value for entry in _synced(flow, entries)
            if entry.value is not None
            and (not entry.is_default or flow.use_source_defaults)}


def config_updates(flow: Flow, entries: Iterable[SourceConfig]) -> dict[str, str | None]:
    """The IncrementalAlterConfigs of a periodic sync: SET each synced config to the
    source's value; a config at its default on the source is DELETEd on the target (None)
    so that the target's default applies, unless `use.defaults.from=source`."""
    return {entry.name: (None if entry.is_default and not flow.use_source_defaults
                         else entry.value)
            for entry in _synced(flow, entries)}
