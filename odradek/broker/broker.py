"""The broker's state shell: metadata, partition logs, waiters and metrics, on one event loop."""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from odradek.broker.metadata_store import MetadataStore
from odradek.broker.metrics import BrokerMetrics
from odradek.config import BrokerConfig, effective_topic_config
from odradek.log.config import LogConfig
from odradek.log.manager import STRAY_DIR_SUFFIX, LogManager
from odradek.log.partition import PartitionLog
from odradek.metadata.image import ClusterMetadata

if TYPE_CHECKING:
    from odradek.broker.group_runtime import GroupCoordinatorRuntime
from odradek.metadata.records import (
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    ResourceType,
)

log = logging.getLogger("odradek.broker")

TopicPartition = tuple[str, int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class PartitionWaiters:
    """Futures of delayed fetches, woken when their partitions get new data."""

    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)

    def wait(self, partitions: Iterable[TopicPartition]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        keys = list(partitions)
        for key in keys:
            self._waiters[key].add(future)

        def forget(_: asyncio.Future[None]) -> None:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[key]

        future.add_done_callback(forget)
        return future

    def wake(self, key: TopicPartition) -> None:
        for future in list(self._waiters.get(key, ())):
            if not future.done():
                future.set_result(None)


def read_or_create_cluster_id(directory: Path, node_id: int, configured: str | None) -> str:
    """meta.properties as Kafka writes it; the cluster id is generated on first start."""
    path = directory / "meta.properties"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    cluster_id = configured or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    tmp.replace(path)
    return cluster_id


class Broker:
    groups: GroupCoordinatorRuntime
    """The group coordinator; set by the app, which wires the services together."""

    def __init__(self, config: BrokerConfig, host: str, port: int) -> None:
        self.config = config
        self.node_id = config.integer("node.id")
        self.host = host
        self.port = port
        self.log_dir = config.log_dirs()[0].resolve()
        self.cluster_id = read_or_create_cluster_id(
            self.log_dir, self.node_id, config["cluster.id"]  # type: ignore[arg-type]
        )
        self.metadata = ClusterMetadata()
        self.store = MetadataStore(self.log_dir / "__cluster_metadata-0")
        self.logs = LogManager(self.log_dir, self.log_config)
        self.waiters = PartitionWaiters()
        self.registry = CollectorRegistry()
        self.metrics = BrokerMetrics(self.registry, self._partition_sizes)
        self.admin_lock = asyncio.Lock()
        self._topic_configs: dict[str, dict[str, Any]] = {}
        self._flushes: dict[PartitionLog, asyncio.Future[None]] = {}
        self.topic_listeners: list[Callable[[], None]] = []
        """Called after topics are created, deleted or given partitions."""

    @property
    def broker_ids(self) -> list[int]:
        return [self.node_id]

    def endpoint(self) -> dict[str, Any]:
        """This broker as Metadata and DescribeCluster list it."""
        return {
            "node_id": self.node_id,
            "host": self.host,
            "port": self.port,
            "rack": self.config["broker.rack"],
        }

    def topic_config(self, topic: str) -> dict[str, Any]:
        """The effective config of a topic (broker defaults overlaid with its overrides)."""
        config = self._topic_configs.get(topic)
        if config is None:
            state = self.metadata.topics.get(topic)
            overrides = state.configs if state is not None else {}
            config = self._topic_configs[topic] = effective_topic_config(self.config, overrides)
        return config

    def topic_config_preview(self, overrides: Mapping[str, str | None]) -> dict[str, Any]:
        """The effective config a topic with these overrides would get."""
        return effective_topic_config(
            self.config, {k: v for k, v in overrides.items() if v is not None}
        )

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig.from_topic_config(self.topic_config(topic))

    def load(self) -> None:
        """Replay metadata and open (recover) every partition log. Blocking: run in a thread."""
        for record in self.store.load():
            self.metadata.replay(record)
        for resource_name, configs in self.metadata.broker_configs.items():
            self.config.set_dynamic(configs, resource_name)
        self.logs.load(now_ms())
        for topic, state in self.metadata.topics.items():
            for partition in state.partitions:
                log_ = self.logs.get(topic, partition) or self.logs.create(
                    topic, partition, now_ms()
                )
                log_.high_watermark = log_.log_end_offset
        known = {(t, p) for t, s in self.metadata.topics.items() for p in s.partitions}
        for key, _ in list(self.logs.logs()):
            if key not in known:
                stray = self.logs.retire(self.logs.detach(*key), STRAY_DIR_SUFFIX)
                log.warning("partition %s-%d is not in the metadata: moved aside to %s",
                            *key, stray)

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get(topic, partition)

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

    async def apply(self, records: list[MetadataRecord]) -> None:
        """Persist metadata records durably, replay them, then create and retire partition
        logs in a worker thread (both fsync the log dir). Shielded: a client that hangs up
        mid-request cannot leave records persisted but not applied."""
        await asyncio.shield(self._apply(records))

    async def _apply(self, records: list[MetadataRecord]) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.store.append, records)
        created: list[TopicPartition] = []
        detached: list[PartitionLog] = []
        reconfigured: set[str] = set()
        for record in records:
            if isinstance(record, RemoveTopicRecord):
                name = self.metadata.topic_names_by_id[record.topic_id]
                self._topic_configs.pop(name, None)
                detached += [
                    self.logs.detach(name, p)
                    for p in self.metadata.topics[name].partitions
                    if self.logs.get(name, p) is not None
                ]
            self.metadata.replay(record)
            match record:
                case PartitionRecord(topic_id=topic_id, partition=partition):
                    created.append((self.metadata.topic_names_by_id[topic_id], partition))
                case ConfigRecord(resource_type=ResourceType.TOPIC, resource_name=topic):
                    reconfigured.add(topic)
                case ConfigRecord(resource_type=ResourceType.BROKER):
                    self.config.set_dynamic({record.name: record.value}, record.resource_name)
                    reconfigured.update(self.metadata.topics)
        for topic in reconfigured:
            self._reconfigure(topic)
        if created or detached:
            for listener in self.topic_listeners:
                listener()
            # retired before anything is created, so a re-created topic never finds the old
            # directory; checkpoints rewritten so no stale log start offset outlives its log
            retired = await loop.run_in_executor(None, self._change_logs, created, detached)
            loop.run_in_executor(None, _remove_trees, retired)

    def _change_logs(
        self, created: list[TopicPartition], detached: list[PartitionLog]
    ) -> list[Path]:
        retired = [self.logs.retire(log_) for log_ in detached]
        for topic, partition in created:
            self.logs.create(topic, partition, now_ms())
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


def _remove_trees(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
