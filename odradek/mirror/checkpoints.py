"""MM2's checkpoints for one flow: the offset syncs read into the translator, the source's
groups' committed offsets translated exactly and written to `<source>.checkpoints.internal`
on the target, the checkpoints already there read back at start (MM2's CheckpointStore), the
translated offsets committed for groups idle on the target (`sync.group.offsets.enabled`),
and the checkpoint latency metric."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from odradek.mirror.client_security import flow_librdkafka_config
from odradek.mirror.clients import (
    CLIENT_LOG,
    TIMEOUT_S,
    ClusterClient,
    ClusterHealth,
    ClusterUnavailable,
    client_error,
)
from odradek.mirror.config import Flow
from odradek.mirror.formats import Checkpoint, FormatError, OffsetSync
from odradek.mirror.metrics import Windowed
from odradek.mirror.translation import (
    OffsetTranslator,
    TopicPartition,
    checkpoints_for_group,
    offsets_to_sync,
)
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.mirror.checkpoints")
CHECKPOINT_LATENCY = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"
LOAD_TIMEOUT_S = 120.0
MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                     KafkaError._UNKNOWN_TOPIC})
NOT_AUTHORIZED = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED,
                            KafkaError.GROUP_AUTHORIZATION_FAILED})


class CheckpointLatency(Collector):
    """MirrorCheckpointMetrics' checkpoint-latency-ms (last value), -min, -max and -avg,
    under the JMX exporter's names, labelled source, target, group, topic, partition."""

    LABELS = ("source", "target", "group", "topic", "partition")

    def __init__(self, registry: CollectorRegistry) -> None:
        self._stats: dict[tuple[str, ...], Windowed] = {}
        registry.register(self)

    def observe(self, flow: Flow, checkpoint: Checkpoint, latency_ms: float) -> None:
        labels = (flow.source, flow.target, checkpoint.group, checkpoint.topic,
                  str(checkpoint.partition))
        self._stats.setdefault(labels, Windowed()).record(latency_ms, now_ms())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = [GaugeMetricFamily(CHECKPOINT_LATENCY + suffix,
                                      f"checkpoint latency in ms ({name})", labels=self.LABELS)
                    for suffix, name in (("", "last"), ("_min", "min"), ("_max", "max"),
                                         ("_avg", "avg"))]
        now = now_ms()
        for labels, stat in self._stats.items():
            for family, value in zip(families, (stat.last, *stat.stats(now)), strict=True):
                family.add_metric(labels, value)
        yield from families


class OffsetSyncReader:
    """Reads `mm2-offset-syncs.<...>.internal` from its start into a translator, as MM2's
    OffsetSyncStore does; translations wait until the topic was read to its end once."""

    def __init__(self, flow: Flow, health: ClusterHealth) -> None:
        self.flow = flow
        # transactional syncs (on the target, exactly-once) leave markers between records
        self.translator = OffsetTranslator(dense=not (
            flow.offset_syncs_location == "target" and flow.exactly_once),
            markers=flow.exactly_once)
        self._health = health
        self._consumer = Consumer({
            **flow_librdkafka_config(flow, flow.offset_syncs_location, "consumer"),
            "group.id": f"mirror-offset-syncs-{uuid.uuid4()}",
            "enable.auto.commit": False, "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }, logger=CLIENT_LOG)
        self._assigned = False
        """Assigned once the topic exists: librdkafka learns of a topic created after its
        assignment only at a later metadata refresh, up to minutes away, and the
        translations would wait for it."""
        self.ready = False
        self._closed = False
        self._consuming = threading.Lock()
        """Held by the thread in consume(): close() must not destroy the consumer under it."""

    def _consume(self) -> list[Message]:
        with self._consuming:
            if self._closed:
                return []
            if not self._assigned:
                topic = self.flow.offset_syncs_topic
                found = self._consumer.list_topics(topic, TIMEOUT_S).topics.get(topic)
                if found is None or found.error is not None:
                    return []
                self._consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
                self._assigned = True
            return self._consumer.consume(1000, 0.2)

    async def poll(self) -> None:
        """Add what the topic holds now to the translator."""
        while True:
            messages = await asyncio.to_thread(self._consume)
            for message in messages:
                self._add(message)
            if not messages or self.ready and len(messages) < 1000:
                return

    def _add(self, message: Message) -> None:
        """Only errors reach the cluster's health: a record may have waited in librdkafka's
        queue since before the cluster went away, and says nothing of it now."""
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                if not self.ready:
                    log.info("%s: read %s to its end: checkpoints can be translated",
                             self.flow.name, self.flow.offset_syncs_topic)
                self.ready = True
            elif error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                self._health.failed(self.flow.offset_syncs_cluster, KafkaException(error))
            return
        offset = message.offset()
        if offset is not None:
            self.translator.advance(offset)
        try:
            self.translator.add(OffsetSync.decode(message.key() or b"", message.value() or b""))
        except FormatError as bad:
            log.warning("skipping an offset sync that is not MM2's format: %s", bad)

    def close(self) -> None:
        with self._consuming:
            self._closed = True
            self._consumer.close()


def read_to_end(config: Mapping[str, Any], topic: str, timeout_s: float,
                stopping: threading.Event) -> list[Message]:
    """Every committed record of partition 0 of `topic`, from its start to its end offset
    at the time of the call (none when the topic does not exist yet): KafkaBasedLog's
    read to end. Returns early, with what it read, once `stopping` is set."""
    consumer = Consumer({**config, "group.id": f"mirror-read-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True}, logger=CLIENT_LOG)
    try:
        try:
            _, end = consumer.get_watermark_offsets(KafkaTopicPartition(topic, 0), TIMEOUT_S)
        except KafkaException as error:
            code = client_error(error)
            if code is not None and code.code() in MISSING:
                return []
            raise
        records: list[Message] = []
        if end <= 0:
            return records
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not stopping.is_set():
            for message in consumer.consume(1000, 0.2):
                failure, offset = message.error(), message.offset() or 0
                if failure is None:
                    records.append(message)
                    offset += 1
                elif failure.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(failure)
                if offset >= end:
                    return records
        if stopping.is_set():
            return records
        raise TimeoutError(f"{topic} not read to its end offset {end} in {timeout_s:.0f} s")
    finally:
        consumer.close()


@dataclass
class CheckpointEmitter:
    """The checkpoint side of a flow (MirrorCheckpointConnector and its task)."""
    flow: Flow
    source: ClusterClient
    target: ClusterClient
    syncs: OffsetSyncReader
    latency: CheckpointLatency

    def __post_init__(self) -> None:
        self.groups: list[str] = []
        self.last: dict[str, dict[TopicPartition, Checkpoint]] = {}
        """Per group, its last checkpoint of each target topic-partition: read back from
        the checkpoints topic at start, then the ones emitted."""
        self._groups_refreshed_ms = -1.0
        self._stopping = threading.Event()

    async def load(self) -> None:
        """MM2's CheckpointStore.start: the checkpoints topic read to its end, so that after
        a restart no checkpoint is emitted again whose offsets did not change (nor one that
        would move a group's downstream offset back). Not allowed to read it, it goes on
        without them, as MM2 does."""
        flow = self.flow
        config = flow_librdkafka_config(flow, "target", "consumer")
        try:
            records = await asyncio.to_thread(read_to_end, config, flow.checkpoints_topic,
                                              LOAD_TIMEOUT_S, self._stopping)
        except (KafkaException, TimeoutError) as error:
            code = client_error(error)
            if code is not None and code.code() in NOT_AUTHORIZED:
                log.warning("%s: not authorized to read %s, so only checkpoints of offsets "
                            "mirrored from now on are emitted: %s", flow.name,
                            flow.checkpoints_topic, code.str())
                return
            # retried; the admin calls to the same cluster say why it does not answer
            log.debug("%s: %s not read: %s", flow.name, flow.checkpoints_topic, error)
            raise ClusterUnavailable(flow.target, error) from None
        loaded = 0
        for record in records:
            try:
                checkpoint = Checkpoint.decode(record.key() or b"", record.value() or b"")
            except FormatError as bad:
                log.warning("skipping a checkpoint that is not MM2's format: %s", bad)
                continue
            if flow.should_replicate_group(checkpoint.group):
                self.last.setdefault(checkpoint.group, {})[
                    (checkpoint.topic, checkpoint.partition)] = checkpoint
                loaded += 1
        log.info("%s: read %d checkpoints of %d groups from %s", flow.name, loaded,
                 len(self.last), flow.checkpoints_topic)

    def close(self) -> None:
        """Stop a read of the checkpoints topic in flight."""
        self._stopping.set()

    async def refresh_groups(self) -> None:
        groups = [group for group in await self.source.groups()
                  if self.flow.should_replicate_group(group)]
        new = sorted(set(groups) - set(self.groups))
        if new:
            log.info("%s: checkpointing the groups %s", self.flow.name, ", ".join(new))
        self.groups = groups

    async def emit(self) -> int:
        """Checkpoint every group with new translatable offsets; returns how many were
        written."""
        now = now_ms()
        interval = self.flow.refresh_groups_interval_ms
        if self._groups_refreshed_ms < 0 or (
                interval >= 0 and now - self._groups_refreshed_ms >= interval):
            await self.refresh_groups()
            self._groups_refreshed_ms = now
        await self.syncs.poll()
        if not self.syncs.ready:
            return 0
        written = 0
        for group in self.groups:
            offsets = await self.source.group_offsets(group)
            rename = {topic: self.flow.checkpoint_topic(topic) for topic, _ in offsets
                      if self.flow.should_checkpoint_topic(topic)}
            timestamp_ms = now_ms()
            last = self.last.setdefault(group, {})
            for checkpoint in checkpoints_for_group(group, offsets, self.syncs.translator,
                                                    rename, last):
                self.target.produce(self.flow.checkpoints_topic, checkpoint.key(),
                                    checkpoint.value(), timestamp_ms,
                                    self._delivered(checkpoint, timestamp_ms))
                last[(checkpoint.topic, checkpoint.partition)] = checkpoint
                written += 1
        if written:
            await self.target.flush()
        return written

    def _delivered(self, checkpoint: Checkpoint, timestamp_ms: int
                   ) -> Callable[[KafkaError | None, Message], None]:
        def done(error: KafkaError | None, _message: Message) -> None:
            if error is None:
                self.latency.observe(self.flow, checkpoint, now_ms() - timestamp_ms)
        return done

    async def sync_group_offsets(self) -> None:
        """Commit the last checkpoints of each group on the target where the group has no
        members, never moving an offset backwards (MirrorCheckpointTask.syncGroupOffset).
        Checkpoints emitted while it awaits the target (a new group's too) wait for the next
        round."""
        for group, checkpoints in list(self.last.items()):
            try:
                active = await self.target.group_active(group)
                if active:
                    continue
                committed = (None if active is None else
                             {key: value.offset for key, value in
                              (await self.target.group_offsets(group)).items()})
                offsets = offsets_to_sync(list(checkpoints.values()), committed)
                if offsets:
                    await self.target.commit_group_offsets(group, offsets)
                    log.info("%s: committed %d translated offsets of group %s on %s",
                             self.flow.name, len(offsets), group, self.flow.target)
            except ClusterUnavailable as error:
                log.debug("%s: group %s not synced: %s", self.flow.name, group, error)
