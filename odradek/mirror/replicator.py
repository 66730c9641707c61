"""The data path of one flow (source alias -> target alias): the partitions this process owns,
each copied by a `PartitionCopier`, exactly once by default.

Ownership comes from a consumer group on the target (`ownership.py`), so that several
processes with the same config share a flow's partitions. Each copier has its own
connections to both clusters, so that one partition's long-polling fetch or transaction
never waits behind another's. Progress lives in the target's `mm2-offsets.<source>.internal`
(created here, compacted, if it is missing); offset syncs go where
`offset-syncs.topic.location` says.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from prometheus_client.registry import CollectorRegistry

from odradek.mirror.client_security import flow_librdkafka_config, flow_security
from odradek.mirror.clients import ALL_FENCED
from odradek.mirror.config import Flow, MirrorConfig, Role, Side, TopicNotCreatable
from odradek.mirror.copier import CopySettings, PartitionCopier
from odradek.mirror.metrics import MirrorSourceMetrics
from odradek.mirror.offset_sync_writer import OffsetSyncWriter
from odradek.mirror.ownership import GroupOwnership, group_id
from odradek.mirror.producer import MirrorProducer
from odradek.net.kafka_client import Address, ClientSecurity, KafkaClientError, KafkaCluster
from odradek.net.kafka_client.request_versions import CREATE_TOPICS
from odradek.protocol.codec import build_request
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.mirror.replicator")

REQUEST_TIMEOUT_S = 30.0
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000
"""The Java producer's transaction.timeout.ms and delivery.timeout.ms defaults."""
TASK_SHUTDOWN_GRACEFUL_TIMEOUT_S = 5.0
"""Kafka Connect's task.shutdown.graceful.timeout.ms default: how long a stopping copier may
take to finish its transaction before it is abandoned."""


@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    """The source topic."""
    partition: int
    owner: str
    upstream: int | None
    """The next source offset to copy: everything before it is on the target."""
    downstream: int | None
    """The target offset just past the last record this owner wrote."""
    lag_records: int
    lag_seconds: float


def addresses(bootstrap: str) -> list[Address]:
    """`bootstrap.servers` as (host, port) pairs."""
    result = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        result.append((host.strip("[]"), int(port)))
    return result


class FlowReplicator:
    """Copies the partitions of one flow (source alias -> target alias) that this process
    owns, exactly once by default. Owns its clients; the service starts and stops it."""

    def __init__(self, flow: Flow, config: MirrorConfig, registry: CollectorRegistry) -> None:
        self.flow = flow
        self.config = config
        self.owner = f"{socket.gethostname()}-{os.getpid()}"
        self.metrics = MirrorSourceMetrics(flow.source, flow.target, registry, now_ms)
        self._source_topics: dict[str, int] = {}
        self._by_target: dict[str, str] = {}
        self._copiers: dict[tuple[str, int], tuple[PartitionCopier, asyncio.Task[None]]] = {}
        self._settings: CopySettings | None = None
        self._syncs: OffsetSyncWriter | None = None
        self._ownership: GroupOwnership | None = None
        self._started = asyncio.Event()
        self._security: dict[tuple[Side, Role], ClientSecurity] = {}

    # --- the seam with the service ----------------------------------------------------------

    async def start(self) -> None:
        flow = self.flow
        producer = flow.client_config("target", "producer")
        transaction_timeout = int(producer.get("transaction.timeout.ms",
                                               DEFAULT_TRANSACTION_TIMEOUT_MS))
        delivery_timeout = int(producer.get("delivery.timeout.ms", DEFAULT_DELIVERY_TIMEOUT_MS))
        partitions = await self._progress_topic()
        syncs_on_target = (flow.offset_syncs_topic if flow.emit_offset_syncs
                           and flow.offset_syncs_location == "target" else None)
        self._settings = CopySettings(
            flow.source, flow.target, flow.exactly_once, flow.progress_topic, partitions,
            syncs_on_target, transaction_timeout, delivery_timeout / 1000,
            offset_flush_interval_ms=int(flow.settings.get("offset.flush.interval.ms", 60_000)))
        if flow.emit_offset_syncs and flow.offset_syncs_location == "source":
            cluster = self._cluster("source", "producer")
            self._syncs = OffsetSyncWriter(
                MirrorProducer(cluster, None, transaction_timeout, delivery_timeout / 1000),
                flow.offset_syncs_topic)
            self._syncs.start()
        self._ownership = GroupOwnership(group_id(flow.source, flow.target),
                                         flow_librdkafka_config(flow, "target", "consumer"),
                                         self._assigned, self._revoked)
        self._ownership.start()
        self._started.set()
        self._subscribe()

    def set_topics(self, partitions: Mapping[str, int]) -> None:
        """The source topics to mirror and their partition counts (called by the topic sync
        after the target topics exist; idempotent; grows only)."""
        for topic, count in partitions.items():
            self._source_topics[topic] = max(count, self._source_topics.get(topic, 0))
            self._by_target[self.flow.target_topic(topic)] = topic
        self._subscribe()

    def status(self) -> list[PartitionStatus]:
        """Per owned partition: source topic, partition, owner id, copied upstream position,
        downstream position, lag (records and seconds)."""
        return [PartitionStatus(copier.topic, copier.partition, self.owner, copier.position,
                                copier.downstream, copier.metrics.lag_records,
                                copier.metrics.lag_seconds)
                for copier, _ in sorted(self._copiers.values(),
                                        key=lambda c: (c[0].topic, c[0].partition))]

    async def stop(self) -> None:
        """Commit what is in flight, release ownership, close clients (SIGTERM path)."""
        if self._ownership is not None:
            await self._ownership.stop()
        await self._stop_copiers(list(self._copiers))
        if self._syncs is not None:
            await self._syncs.stop()
            self._syncs.producer.cluster.close()

    # --- ownership ----------------------------------------------------------------------

    def _subscribe(self) -> None:
        if self._ownership is not None:
            self._ownership.subscribe(list(self._by_target))

    async def _assigned(self, partitions: list[tuple[str, int]]) -> None:
        assert self._settings is not None
        for target_topic, partition in partitions:
            topic = self._by_target.get(target_topic)
            if topic is None or (topic, partition) in self._copiers:
                continue
            copier = PartitionCopier(
                self._settings, topic, partition, target_topic,
                self._cluster("source", "consumer"), self._cluster("target", "producer"),
                self.metrics.partition(target_topic, partition),
                self._syncs.write if self._syncs is not None else None)
            self._copiers[(topic, partition)] = (copier, asyncio.ensure_future(copier.run()))
        log.info("%s: copying %s", self.flow.name,
                 ", ".join(f"{t}-{p}" for t, p in sorted(self._copiers)) or "nothing")

    async def _revoked(self, partitions: list[tuple[str, int]]) -> None:
        await self._stop_copiers([(self._by_target.get(t, t), p) for t, p in partitions])

    async def _stop_copiers(self, keys: list[tuple[str, int]]) -> None:
        stopping = [self._copiers.pop(key) for key in keys if key in self._copiers]
        for copier, _ in stopping:
            await copier.stop()
        tasks = [task for _, task in stopping]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=TASK_SHUTDOWN_GRACEFUL_TIMEOUT_S)
            for task in late:  # its open transaction is aborted when the partition's next
                task.cancel()  # owner fences the transactional id
            if late:
                log.warning("%d copiers did not finish within %.0f s; their transactions in "
                            "flight are left to be aborted", len(late),
                            TASK_SHUTDOWN_GRACEFUL_TIMEOUT_S)
            await asyncio.gather(*tasks, return_exceptions=True)
        for copier, _ in stopping:
            copier.source.close()
            copier.target.close()
            self.metrics.drop(copier.target_topic, copier.partition)

    # --- clients and the progress topic -------------------------------------------------

    def _cluster(self, side: Side, role: Role) -> KafkaCluster:
        config = self.flow.client_config(side, role)
        client_id = config.get("client.id", f"mirror-{self.flow.name}-{side}")
        if (side, role) not in self._security:
            self._security[(side, role)] = flow_security(self.flow, side, role)
        return KafkaCluster(addresses(config["bootstrap.servers"]), client_id,
                            REQUEST_TIMEOUT_S, self._security[(side, role)])

    async def _progress_topic(self) -> int:
        """The progress topic's partition count, creating it (compacted, with Connect's
        offset.storage.* settings) if it is missing; TopicNotCreatable when the target
        refuses its replication factor."""
        topic = self.flow.progress_topic
        async with self._cluster("target", "admin") as cluster:
            while True:
                try:
                    metadata = await cluster.metadata([topic])
                    (found,) = metadata.topics
                    if found.error_code == ErrorCode.none and found.partitions:
                        return len(found.partitions)
                    await self._create_progress_topic(cluster)
                except KafkaClientError as error:
                    log.warning("%s: cannot reach the target for %s: %s", self.flow.name,
                                topic, error)
                await asyncio.sleep(1)

    async def _create_progress_topic(self, cluster: KafkaCluster) -> None:
        topic = self.flow.progress_topic
        response = await cluster.send(build_request(*CREATE_TOPICS, {
            "topics": [{"name": topic, "num_partitions": self.flow.progress_topic_partitions,
                        "replication_factor": self.flow.progress_topic_replication_factor,
                        "assignments": [],
                        "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
            "timeout": int(REQUEST_TIMEOUT_S * 1000), "validate_only": False}))
        (result,) = response.topics
        if result.error_code == ErrorCode.invalid_replication_factor and (
                ALL_FENCED not in (result.error_message or "")):
            raise TopicNotCreatable("offset.storage.replication.factor",
                                    self.flow.progress_topic_replication_factor,
                                    self.flow.target, topic,
                                    f"INVALID_REPLICATION_FACTOR: {result.error_message}")
        if result.error_code not in (ErrorCode.none, ErrorCode.topic_already_exists):
            log.warning("%s: cannot create %s: %s %s", self.flow.name, topic,
                        ErrorCode(result.error_code).name, result.error_message or "")
