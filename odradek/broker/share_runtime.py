"""The share coordinator's runtime: a shard per partition of `__share_group_state` this
broker leads, in the shell every internal-topic coordinator shares (coordinator_runtime.py).
Share-partition leaders keep their share groups' state there through the five state APIs
(handlers/share_state.py)."""

from __future__ import annotations

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import CoordinatorRuntime
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.share_metrics import ShareCoordinatorMetrics
from odradek.group.coordinator import partition_for
from odradek.metadata.image import SHARE_GROUP_STATE_TOPIC
from odradek.share.coordinator import Output, ShareCoordinatorConfig, ShareCoordinatorShard
from odradek.share.record_codec import decode, encode
from odradek.share.records import ShareRecord


class ShareCoordinatorRuntime(CoordinatorRuntime[ShareCoordinatorShard, Output]):
    topic = SHARE_GROUP_STATE_TOPIC
    name = "share"

    def __init__(self, broker: Broker, replicas: ReplicaManager, writer: MetadataWriter) -> None:
        super().__init__(broker, replicas, writer)
        self.commit_timeout_s = broker.config.integer("share.coordinator.write.timeout.ms") / 1000
        self.config = ShareCoordinatorConfig(broker.config.integer(
            "share.coordinator.snapshot.update.records.per.snapshot"))
        self.metrics = ShareCoordinatorMetrics(broker.metrics.registry)

    def new_shard(self, partition: int) -> ShareCoordinatorShard:
        return ShareCoordinatorShard(self.config, self._partition_count)

    def _partition_count(self, topic_id: str) -> int | None:
        metadata = self.broker.metadata
        name = metadata.topic_names_by_id.get(topic_id)
        state = None if name is None else metadata.topics.get(name)
        return None if state is None else len(state.partitions)

    def replay(self, shard: ShareCoordinatorShard, key: bytes, value: bytes | None,
               producer_id: int) -> None:
        shard.replay(decode(key, value))

    def encode(self, record: ShareRecord) -> tuple[bytes, bytes | None]:
        return encode(record)

    def topic_settings(self) -> tuple[int, int, dict[str, str]]:
        config = self.broker.config
        return (config.integer("share.coordinator.state.topic.num.partitions"),
                config.integer("share.coordinator.state.topic.replication.factor"),
                # Not compacted: a ShareUpdate and the ShareSnapshot before it have different
                # keys, and compaction would keep the last update without the ones before.
                {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
                 "min.insync.replicas": str(config.integer(
                     "share.coordinator.state.topic.min.isr")),
                 "segment.bytes": str(config.integer(
                     "share.coordinator.state.topic.segment.bytes"))})

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions)
