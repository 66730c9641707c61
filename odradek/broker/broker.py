"""The broker's state shell: metadata, partition logs, waiters and metrics, on one event loop."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry

from odradek.broker.metrics import BrokerMetrics
from odradek.broker.partitions import PartitionWaiters, TopicPartition
from odradek.config.group import EffectiveGroupConfig, group_config
from odradek.config.kafka_configs import BrokerConfig, effective_topic_config
from odradek.config.listeners import Endpoint
from odradek.log.config import LogConfig
from odradek.log.manager import STRAY_DIR_SUFFIX, LogManager
from odradek.log.meta_properties import read_or_create_cluster_id
from odradek.log.partition import PartitionLog
from odradek.log.partition_metadata import read_topic_id, write_topic_id
from odradek.log.storage_failure import halt_on_storage_error
from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import (
    NO_LEADER,
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionChangeRecord,
    RemoveTopicRecord,
)
from odradek.net.kafka_client import PLAINTEXT_CLIENT, ClientSecurity
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.broker")

Placed = Callable[[], None]
"""Called (on the event loop, under the reconciling lock) once the logs match the image."""


class Broker:
    """The broker's state: its config, metadata image, partition logs, waiters and metrics.
    The services built on it (`BrokerServices`) are wired by the app."""

    def __init__(self, config: BrokerConfig, inter_broker_listener: str,
                 generate_cluster_id: bool = False,
                 inter_broker_security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        """`inter_broker_listener`: the listener this broker reaches other brokers on, with
        `inter_broker_security`."""
        self.config = config
        self.node_id = config.integer("node.id")
        self.inter_broker_listener = inter_broker_listener
        self.inter_broker_security = inter_broker_security
        self.log_dir = config.log_dirs()[0].resolve()
        self.cluster_id = read_or_create_cluster_id(
            self.log_dir, self.node_id, config["cluster.id"],  # type: ignore[arg-type]
            generate_cluster_id,
        )
        self.metadata = ClusterMetadata()
        self.metadata_offset = 0
        """The last metadata log offset applied to `metadata`."""
        self.caught_up = False
        """Whether `metadata` has reached the committed log (set once unfenced)."""
        self._reconciling = asyncio.Lock()
        self._log_topic_ids: dict[TopicPartition, str | None] = {}
        """The topic id recorded in each open log's directory (None: not recorded)."""
        self.logs = LogManager(self.log_dir, self.log_config,
                               halt_on_storage_error(self.log_dir))
        self.waiters = PartitionWaiters()
        self.registry = CollectorRegistry()
        self.metrics = BrokerMetrics(self.registry, self._partition_sizes)
        self._topic_configs: dict[str, dict[str, Any]] = {}
        self._group_configs: dict[str, EffectiveGroupConfig] = {}
        self._flushes: dict[PartitionLog, asyncio.Future[None]] = {}

    def topic_config(self, topic: str) -> dict[str, Any]:
        """The effective config of a topic (broker defaults overlaid with its overrides)."""
        config = self._topic_configs.get(topic)
        if config is None:
            state = self.metadata.topics.get(topic)
            overrides = state.configs if state is not None else {}
            config = self._topic_configs[topic] = effective_topic_config(self.config, overrides)
        return config

    def group_config(self, group_id: str) -> EffectiveGroupConfig:
        """A group's effective configs (odradek/config/group.py): its own configs clamped into
        this broker's bounds over this broker's group defaults. The group need not exist."""
        config = self._group_configs.get(group_id)
        if config is None:
            overrides = self.metadata.group_configs.get(group_id, {})
            config = self._group_configs[group_id] = group_config(overrides, self.config)
        return config

    def topic_config_preview(self, overrides: Mapping[str, str | None]) -> dict[str, Any]:
        """The effective config a topic with these overrides would get."""
        return effective_topic_config(
            self.config, {k: v for k, v in overrides.items() if v is not None}
        )

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig.from_topic_config(self.topic_config(topic))

    def load(self) -> None:
        """Open (recover) every partition log on disk. Blocking: run in a thread. Logs the
        metadata does not place on this broker are moved aside once it has caught up."""
        self.logs.load(now_ms())
        for key, log_ in self.logs.logs():
            self._log_topic_ids[key] = read_topic_id(log_.directory)

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get(topic, partition)

    def leader_log(self, topic: str, partition: int) -> tuple[PartitionLog | None, ErrorCode]:
        """The partition's log if this broker leads it, else why not: UNKNOWN_TOPIC_OR_PARTITION
        or NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata and retries)."""
        leader = self.leader_of(topic, partition)
        if leader is None:
            return None, ErrorCode.unknown_topic_or_partition
        log_ = self.logs.get(topic, partition)
        if leader != self.node_id or log_ is None:
            return None, ErrorCode.not_leader_or_follower
        return log_, ErrorCode.none

    async def flush(self, log_: PartitionLog) -> None:
        """fsync `log_` up to its current end, sharing one in-flight flush per log."""
        target = log_.log_end_offset
        loop = asyncio.get_running_loop()
        while log_.recovery_point < target:
            flushing = self._flushes.get(log_)
            if flushing is None:
                flushing = self._flushes[log_] = loop.run_in_executor(None, log_.flush)
                flushing.add_done_callback(lambda _: self._flushes.pop(log_, None))
            await asyncio.shield(flushing)

    async def apply_metadata(
        self, records: list[MetadataRecord], offset: int, snapshot: bool, placed: Placed
    ) -> None:
        """Apply a committed batch of metadata records (or, when `snapshot`, replace the image
        with them), then create the logs of partitions this broker now hosts and retire those
        it no longer does, in a worker thread (both fsync the log dir). The caller shields it:
        a batch is never left half applied. `placed` runs once the logs match the image."""
        await self._apply_metadata(records, snapshot, placed)
        self.metadata_offset = offset

    async def _apply_metadata(self, records: list[MetadataRecord], snapshot: bool,
                              placed: Placed) -> None:
        detached: list[PartitionLog] = []
        reconfigured: set[str] = set()
        if snapshot:
            self.metadata = ClusterMetadata()
            self._topic_configs.clear()
            self._group_configs.clear()
            self.config.clear_dynamic()
        for record in records:
            if isinstance(record, RemoveTopicRecord):
                name = self.metadata.topic_names_by_id[record.topic_id]
                self._topic_configs.pop(name, None)
                detached += [
                    self.logs.detach(name, p)
                    for p in self.metadata.topics[name].partitions
                    if self._log_topic_ids.get((name, p), "") in (record.topic_id, None)
                ]
            if isinstance(record, PartitionChangeRecord) and self._moves_off(record):
                name = self.metadata.topic_names_by_id[record.topic_id]
                detached.append(self.logs.detach(name, record.partition))
            self.metadata.replay(record)
            match record:
                case ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=topic):
                    reconfigured.add(topic)
                case ConfigRecord(resource_type=ConfigResourceType.BROKER):
                    self.config.set_dynamic({record.name: record.value}, record.resource_name)
                    reconfigured.update(self.metadata.topics)
                    self._group_configs.clear()
                case ConfigRecord(resource_type=ConfigResourceType.GROUP, resource_name=group):
                    self._group_configs.pop(group, None)
        if snapshot:
            reconfigured.update(self.metadata.topics)
        for topic in reconfigured:
            if topic in self.metadata.topics:
                self._reconfigure(topic)
        await self._reconcile_logs(detached, snapshot or self.caught_up, placed)

    def _moves_off(self, record: PartitionChangeRecord) -> bool:
        """Whether a reassignment takes the partition's replica (and log) off this broker."""
        if record.replicas is None or self.node_id in record.replicas:
            return False
        name = self.metadata.topic_names_by_id.get(record.topic_id)
        return name is not None and self.logs.get(name, record.partition) is not None

    async def caught_up_with_metadata(self, placed: Placed) -> None:
        """The image now holds the whole committed log: logs it does not place on this
        broker are strays."""
        self.caught_up = True
        await self._reconcile_logs([], True, placed)

    async def _reconcile_logs(self, detached: list[PartitionLog], strays: bool,
                              placed: Placed) -> None:
        """Create the logs of hosted partitions; retire `detached` (deleted topics) and,
        when the image is complete, move aside logs it does not place here."""
        async with self._reconciling:
            await self._reconcile_logs_now(detached, strays)
            placed()

    async def _reconcile_logs_now(self, detached: list[PartitionLog], strays: bool) -> None:
        loop = asyncio.get_running_loop()
        hosted = self.hosted_partitions()
        stale = [  # left by a deleted topic of the same name (judged on a complete image)
            key for key, _ in self.logs.logs()
            if strays and key in hosted
            and self._log_topic_ids.get(key) not in (hosted[key], None)
        ]
        detached = detached + [self.logs.detach(*key) for key in stale]
        existing = {key for key, _ in self.logs.logs()}
        created = [(key, hosted[key]) for key in sorted(hosted.keys() - existing)]
        stray_logs = [self.logs.detach(*key) for key in sorted(existing - hosted.keys())] \
            if strays else []
        if created or detached or stray_logs:
            # retired before anything is created, so a re-created topic never finds the old
            # directory; checkpoints rewritten so no stale log start offset outlives its log
            retired = await loop.run_in_executor(
                None, self._change_logs, created, detached, stray_logs
            )
            loop.run_in_executor(None, _remove_trees, retired)

    def hosted_partitions(self) -> dict[TopicPartition, str]:
        """Partitions with a replica on this broker, with their topic ids."""
        return {
            (name, index): state.topic_id
            for name, state in self.metadata.topics.items()
            for index, partition in state.partitions.items()
            if self.node_id in partition.replicas
        }

    def leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader id (-1 when offline), or None for an unknown partition."""
        state = self.metadata.topics.get(topic)
        record = state.partitions.get(partition) if state is not None else None
        return record.leader if record is not None else None

    def leader_hint(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(leader id, leader epoch) of a partition another broker leads: KIP-951's hint to a
        client that sent this broker a request meant for the leader."""
        state = self.metadata.topics.get(topic)
        record = state.partitions.get(partition) if state is not None else None
        if record is None or record.leader in (self.node_id, NO_LEADER) \
                or record.leader not in self.metadata.brokers:
            return None
        return record.leader, record.leader_epoch

    def live_broker_ids(self) -> set[int]:
        """The registered brokers that are not fenced."""
        return {b.broker_id for b in self.metadata.brokers.values() if not b.fenced}

    def brokers(self, listener: str, include_fenced: bool = False) -> list[dict[str, Any]]:
        """The registered brokers at their endpoints on `listener`, those without one left
        out, as Kafka does (by default only the unfenced ones, which Metadata lists)."""
        return [
            {"node_id": b.broker_id, "host": endpoint.host, "port": endpoint.port,
             "rack": b.rack, "is_fenced": b.fenced}
            for b in sorted(self.metadata.brokers.values(), key=lambda b: b.broker_id)
            if (include_fenced or not b.fenced)
            and (endpoint := b.endpoint(listener)) is not None
        ]

    def inter_broker_endpoint(self, broker_id: int | None, include_fenced: bool = False
                              ) -> Endpoint | None:
        """Where this broker reaches another: its endpoint on inter.broker.listener.name,
        when it is registered (and, by default, unfenced) and has one."""
        registration = None if broker_id is None else self.metadata.brokers.get(broker_id)
        if registration is None or (registration.fenced and not include_fenced):
            return None
        return registration.endpoint(self.inter_broker_listener)

    def _change_logs(
        self, created: list[tuple[TopicPartition, str]], deleted: list[PartitionLog],
        strays: list[PartitionLog],
    ) -> list[Path]:
        """Returns the deleted logs' directories, to remove. Logs the metadata does not place
        here (but did not delete) are moved aside, not removed."""
        for log_ in strays:
            path = self.logs.retire(log_, STRAY_DIR_SUFFIX)
            log.warning("%s is not assigned to this broker: moved aside to %s",
                        log_.directory.name, path)
        retired = [self.logs.retire(log_) for log_ in deleted]
        for log_ in (*strays, *deleted):
            self._log_topic_ids.pop(_key(log_), None)
        for (topic, partition), topic_id in created:
            write_topic_id(self.logs.create(topic, partition, now_ms()).directory, topic_id)
            self._log_topic_ids[(topic, partition)] = topic_id
        self.logs.checkpoint()
        return retired

    def _reconfigure(self, topic: str) -> None:
        self._topic_configs.pop(topic, None)
        config = self.log_config(topic)
        for partition in self.metadata.topics[topic].partitions:
            log_ = self.logs.get(topic, partition)
            if log_ is not None:
                log_.update_config(config)

    def _partition_sizes(self) -> Iterable[tuple[str, int, int]]:
        for (topic, partition), log_ in list(self.logs.logs()):
            yield topic, partition, log_.size_bytes()


def _key(log_: PartitionLog) -> TopicPartition:
    topic, _, partition = log_.directory.name.rpartition("-")
    return topic, int(partition)


def _remove_trees(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
