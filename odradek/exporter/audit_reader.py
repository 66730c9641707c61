"""The active controller's reader of the mirroring audit's topic on its own cluster. When
Prometheus scrapes, it fetches what was appended since the last scrape (a whole read the
first time, after a failover, or when the topic was recreated) and folds it into the
latest record per key (`audit_series.AuditResults`): the audit writes a few hundred small
records a run, so a scrape reads little, and no consumer group or background task is
kept."""

from __future__ import annotations

import logging

from odradek.exporter.audit_series import AuditResults
from odradek.metadata.image import TopicState
from odradek.mirror.reader import EARLIEST, READ_UNCOMMITTED, PartitionReader, ReadError
from odradek.net.kafka_client import PLAINTEXT_CLIENT, ClientSecurity, KafkaCluster
from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import iter_batches
from odradek.spark.audit_contract import AUDIT_TOPIC

log = logging.getLogger("odradek.exporter.audit_reader")

FETCH_MAX_BYTES = 1 << 20
Address = tuple[str, int]


class AuditReader:
    def __init__(self, timeout_s: float, topic: str = AUDIT_TOPIC,
                 security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.topic = topic
        self.cluster = KafkaCluster([], "odradek-audit-exporter", timeout_s, security)
        self.results = AuditResults()
        self.positions: dict[int, int] = {}
        self.topic_id: str | None = None

    async def refresh(self, topic: TopicState | None, brokers: list[Address]) -> None:
        """Read the audit topic (`topic`: its metadata, None when absent) up to its end."""
        if topic is None or topic.topic_id != self.topic_id:
            self._reset(topic.topic_id if topic else None)
        if topic is None or not brokers:
            return
        self.cluster.bootstrap = brokers
        try:
            for partition in sorted(topic.partitions):
                await self._read(partition)
        except ReadError as error:  # OffsetOutOfRange included: start over next time
            log.info("audit topic %s left unread: %s", self.topic, error)
            self._reset(self.topic_id)

    async def _read(self, partition: int) -> None:
        reader = PartitionReader(self.cluster, self.topic, partition, FETCH_MAX_BYTES)
        if partition not in self.positions:
            self.positions[partition] = await reader.offset(EARLIEST)
        while True:
            position = self.positions[partition]
            fetched = await reader.fetch(position, max_wait_ms=0,
                                         isolation_level=READ_UNCOMMITTED)
            batches = list(iter_batches(fetched.records))
            for info in batches:
                batch = fetched.records[info.position:info.end]
                if not info.is_control:
                    for record in decode_records(batch):
                        if record.offset >= position:
                            self.results.apply(record.key, record.value)
                self.positions[partition] = max(position, info.next_offset)
            if not batches or self.positions[partition] >= fetched.high_watermark:
                return

    def _reset(self, topic_id: str | None) -> None:
        self.topic_id = topic_id
        self.positions.clear()
        self.results.clear()

    def close(self) -> None:
        self.cluster.close()
