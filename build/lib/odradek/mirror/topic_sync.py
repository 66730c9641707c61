"""The target's topics for one flow (MirrorSourceConnector's topic management): MM2's
internal topics, a remote topic per replicated source topic with the source's partition
count and the flow's `replication.factor`, partitions added when the source grows, and the
source's topic configs synced."""

from __future__ import annotations

import logging

from odradek.mirror.clients import ClusterClient
from odradek.mirror.config import Flow, InternalTopic, TopicNotCreatable
from odradek.mirror.topic_rules import config_updates, configs_for_new_topic, plan_topics

log = logging.getLogger("odradek.mirror.topics")
COMPACTED = {"cleanup.policy": "compact"}


async def create_internal(client: ClusterClient, flow: Flow, internal: InternalTopic,
                          topic: str) -> None:
    """MirrorUtils.createSinglePartitionCompactedTopic: create it unless it exists, with
    `<internal>.topic.replication.factor` replicas; TopicNotCreatable (the mirror stops)
    when the cluster refuses that factor."""
    setting = f"{internal}.topic.replication.factor"
    await client.create_topic(topic, 1, flow.topic_replication_factor(internal), COMPACTED,
                              setting)


class TopicSync:
    """Keeps the target's topics in step with the source's for one flow."""

    def __init__(self, flow: Flow, source: ClusterClient, target: ClusterClient,
                 offset_syncs: ClusterClient) -> None:
        self.flow = flow
        self.source = source
        self.target = target
        self.offset_syncs = offset_syncs
        self.replicated: dict[str, int] = {}
        """Source topic -> partition count, for the topics whose target topic exists."""
        self._refreshed = False
        self._not_creatable: set[str] = set()
        """Remote topics refused after the first refresh, warned about once each."""

    async def create_internal_topics(self) -> None:
        """The offset syncs topic (on its cluster) and the checkpoints topic (on the
        target), compacted with one partition, as MM2 creates them. (The replicator creates
        its progress topic.)"""
        flow = self.flow
        if flow.emit_offset_syncs:
            await create_internal(self.offset_syncs, flow, "offset-syncs",
                                  flow.offset_syncs_topic)
        if flow.emit_checkpoints_interval_ms >= 0:
            await create_internal(self.target, flow, "checkpoints", flow.checkpoints_topic)

    async def refresh(self) -> dict[str, int]:
        """Create missing target topics and partitions; returns the replicated source
        topics with their partition counts. A remote topic refused as configured stops the
        mirror at the first refresh (TopicNotCreatable); later (a broker of three is down,
        say) it is warned about once and tried again at the next refresh."""
        source_topics = await self.source.topics()
        target_topics = await self.target.topics()
        plan = plan_topics(self.flow, source_topics, target_topics)
        if plan.create:
            configs = await self.source.topic_configs([source for source, _ in
                                                       plan.create.values()])
            for remote, (source_topic, partitions) in plan.create.items():
                try:
                    await self.target.create_topic(
                        remote, partitions, self.flow.replication_factor,
                        configs_for_new_topic(self.flow, configs.get(source_topic, [])),
                        "replication.factor")
                except TopicNotCreatable as error:
                    if not self._refreshed:
                        raise
                    if remote not in self._not_creatable:
                        log.warning("%s: %s", self.flow.name, error)
                        self._not_creatable.add(remote)
                    continue
                self._not_creatable.discard(remote)
                target_topics[remote] = partitions
        for remote, partitions in plan.grow.items():
            await self.target.grow_topic(remote, partitions)
            target_topics[remote] = partitions
        self._refreshed = True
        self.replicated = {topic: partitions for topic, partitions in source_topics.items()
                           if self.flow.should_replicate_topic(topic)
                           and self.flow.target_topic(topic) in target_topics}
        return dict(self.replicated)

    async def sync_configs(self) -> None:
        """sync.topic.configs: the source's configs onto the remote topics."""
        if not self.replicated:
            return
        configs = await self.source.topic_configs(sorted(self.replicated))
        for topic, entries in configs.items():
            updates = config_updates(self.flow, entries)
            if updates:
                await self.target.alter_topic_configs(self.flow.target_topic(topic), updates)
