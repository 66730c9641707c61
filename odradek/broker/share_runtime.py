"""The share coordinator's runtime: a shard per partition of `__share_group_state` this
broker leads, in the shell every internal-topic coordinator shares (coordinator_runtime.py).
Share-partition leaders keep their share groups' state there through the five state APIs
(handlers/share_state.py).

Every `share.coordinator.state.topic.prune.interval.ms` each shard's records below its last
redundant offset (those no share-partition's state needs any more) are deleted, as Kafka's
ShareCoordinatorService prunes them: once everything the shard wrote is committed, the
partition's log start offset moves up with DeleteRecords' own step (delete_on_leader).
Every `share.coordinator.cold.partition.snapshot.interval.ms` each shard snapshots the
share-partitions not written to since, so that they do not hold the pruning back."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import CoordinatorRuntime, CoordinatorUnavailable
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.records_deletion import delete_on_leader
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.share_metrics import ShareCoordinatorMetrics
from odradek.metadata.image import SHARE_GROUP_STATE_TOPIC
from odradek.protocol.records import BatchInfo
from odradek.runtime.clock import now_ms
from odradek.share.coordinator import (
    UNINITIALIZED,
    Output,
    ShareCoordinatorConfig,
    ShareCoordinatorShard,
)
from odradek.share.record_codec import decode, encode
from odradek.share.records import ShareRecord

log = logging.getLogger("odradek.broker.share")


class ShareCoordinatorRuntime(CoordinatorRuntime[ShareCoordinatorShard, Output]):
    topic = SHARE_GROUP_STATE_TOPIC
    name = "share"

    def __init__(self, broker: Broker, replicas: ReplicaManager, writer: MetadataWriter) -> None:
        super().__init__(broker, replicas, writer)
        self.commit_timeout_s = broker.config.integer("share.coordinator.write.timeout.ms") / 1000
        self.config = ShareCoordinatorConfig(
            broker.config.integer("share.coordinator.snapshot.update.records.per.snapshot"),
            broker.config.integer("share.coordinator.cold.partition.snapshot.interval.ms"))
        self.prune_interval_s = broker.config.integer(
            "share.coordinator.state.topic.prune.interval.ms") / 1000
        self.metrics = ShareCoordinatorMetrics(broker.metrics.registry)
        self._loading = threading.local()
        """`offset`: the base offset of the batch a load is replaying, per thread (loads
        at startup run in a worker thread)."""
        self._pruned: dict[int, int] = {}
        """Each partition's last pruned offset (Kafka's lastPrunedOffsets)."""
        self._periodic: list[asyncio.Task[None]] = []

    def new_shard(self, partition: int) -> ShareCoordinatorShard:
        self._pruned.pop(partition, None)
        return ShareCoordinatorShard(self.config, self._partition_count,
                                     lambda: self._log_end(partition))

    def _log_end(self, partition: int) -> int:
        log_ = self.broker.partition(self.topic, partition)
        return UNINITIALIZED if log_ is None else log_.log_end_offset

    def _partition_count(self, topic_id: str) -> int | None:
        metadata = self.broker.metadata
        name = metadata.topic_names_by_id.get(topic_id)
        state = None if name is None else metadata.topics.get(name)
        return None if state is None else len(state.partitions)

    def _read_partition(self, partition: int) -> Iterator[tuple[BatchInfo, memoryview]]:
        """The base class's read, noting each batch's offset for `replay` (a share
        coordinator batch holds one record)."""
        for batch, data in super()._read_partition(partition):
            self._loading.offset = batch.base_offset
            yield batch, data
        self._loading.offset = UNINITIALIZED

    def replay(self, shard: ShareCoordinatorShard, key: bytes, value: bytes | None,
               producer_id: int) -> None:
        shard.replay(decode(key, value), getattr(self._loading, "offset", UNINITIALIZED))

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

    # Periodic jobs.

    def start_periodic_jobs(self) -> None:
        """Prune, and snapshot cold share-partitions, every interval until `close`."""
        self._periodic = [
            asyncio.ensure_future(self._every(self.prune_interval_s, "pruning", self.prune)),
            asyncio.ensure_future(self._every(
                self.config.cold_partition_snapshot_interval_ms / 1000,
                "snapshotting cold share-partitions of", self.snapshot_cold_partitions))]

    async def _every(self, interval_s: float, what: str,
                     job: Callable[[int], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            for partition in sorted(self.shards):
                try:
                    await job(partition)
                except Exception:
                    log.exception("%s %s-%d failed", what, self.topic, partition)

    async def snapshot_cold_partitions(self, partition: int) -> None:
        shard = self.shards.get(partition)
        if shard is not None:
            self.write_if_led(partition, shard.snapshot_cold_partitions(now_ms()))

    async def prune(self, partition: int) -> None:
        """Delete the shard's redundant records, once all it wrote is committed (Kafka reads
        lastRedundantOffset in a write operation, answered once committed)."""
        shard = self.shards.get(partition)
        offset = None if shard is None else shard.last_redundant_offset()
        if offset is None or self._pruned.get(partition) == offset:
            return
        committed = self._last_write_committed(partition)
        if committed is not None:
            try:
                await committed
            except CoordinatorUnavailable:
                return  # not committed in time: the next interval tries again
        if self.shards.get(partition) is not shard:
            return  # reloaded or moved meanwhile
        answer = delete_on_leader(self.broker, self.topic, partition, offset)
        if answer["error_code"] != ErrorCode.none:
            log.warning("pruning %s-%d below %d failed: %s", self.topic, partition, offset,
                        ErrorCode(answer["error_code"]).name)
            return
        self._pruned[partition] = offset
        self.metrics.last_pruned_offset.labels(self.topic, str(partition)).set(offset)
        log.info("pruned %s-%d below offset %d", self.topic, partition, offset)

    def close(self) -> None:
        for task in self._periodic:
            task.cancel()
        super().close()
