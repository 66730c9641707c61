"""Reading one partition over Kafka's protocol as a read_committed consumer does: Fetch
(isolation_level=1) from the partition's leader, whose answer keeps its records as bytes,
and ListOffsets for the log's start and end. The mirror reads the source partitions it
copies this way, and its progress on the target."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.net.kafka_client import KafkaClientError, KafkaCluster
from odradek.net.kafka_client.request_versions import FETCH, LIST_OFFSETS
from odradek.protocol.codec import build_request

log = logging.getLogger("odradek.mirror.reader")

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
EARLIEST, LATEST = -2, -1
FETCH_MAX_WAIT_MS = 500
"""The consumer's fetch.max.wait.ms default."""


class ReadError(Exception):
    """The partition cannot be read now (no leader, not there yet, a broker away); the
    message says why. The caller retries after a backoff."""


class OffsetOutOfRange(ReadError):  # noqa: N818 - Kafka's name
    """The fetch position is outside the log (DeleteRecords or retention moved its start)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    records: bytes
    aborted: list[tuple[int, int]]
    """(producer id, first offset) of the aborted transactions the records overlap."""
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


class PartitionReader:
    def __init__(self, cluster: KafkaCluster, topic: str, partition: int,
                 max_bytes: int) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partition = partition
        self.max_bytes = max_bytes

    async def fetch(self, offset: int, max_wait_ms: int = FETCH_MAX_WAIT_MS,
                    isolation_level: int = READ_COMMITTED) -> Fetched:
        request = build_request(*FETCH, {
            "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1,
            "max_bytes": self.max_bytes, "isolation_level": isolation_level,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": self.topic, "partitions": [{
                "partition": self.partition, "current_leader_epoch": -1,
                "fetch_offset": offset, "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": self.max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        response = await self._send(request, max_wait_ms / 1000)
        if response.error_code != ErrorCode.none:
            raise ReadError(f"Fetch: {ErrorCode(response.error_code).name}")
        answer = response.responses[0].partitions[0]
        await self._check(answer.error_code, "Fetch")
        return Fetched(answer.records or b"",
                       [(a.producer_id, a.first_offset) for a in answer.aborted_transactions or ()],
                       answer.high_watermark, answer.last_stable_offset, answer.log_start_offset)

    async def offset(self, timestamp: int, isolation_level: int = READ_UNCOMMITTED) -> int:
        """ListOffsets: the log start (EARLIEST) or end (LATEST; the last stable offset for
        READ_COMMITTED)."""
        request = build_request(*LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": isolation_level,
            "topics": [{"name": self.topic, "partitions": [{
                "partition_index": self.partition, "current_leader_epoch": -1,
                "timestamp": timestamp}]}]})
        response = await self._send(request, 0)
        answer = response.topics[0].partitions[0]
        await self._check(answer.error_code, "ListOffsets")
        result: int = answer.offset
        return result

    async def _send(self, request: Any, extra_timeout_s: float) -> Any:
        try:
            return await asyncio.wait_for(
                self.cluster.send_to_leader(self.topic, self.partition, request),
                self.cluster.connections.timeout_s + extra_timeout_s)
        except (KafkaClientError, TimeoutError) as error:
            await self._refresh()
            raise ReadError(f"{self.topic}-{self.partition}: {error or 'timed out'}") from None

    async def _check(self, code: int, what: str) -> None:
        if code == ErrorCode.none:
            return
        if code == ErrorCode.offset_out_of_range:
            raise OffsetOutOfRange(f"{what} {self.topic}-{self.partition}: OFFSET_OUT_OF_RANGE")
        await self._refresh()
        raise ReadError(f"{what} {self.topic}-{self.partition}: {ErrorCode(code).name}")

    async def _refresh(self) -> None:
        try:
            await self.cluster.metadata([self.topic])
        except KafkaClientError as error:
            log.debug("metadata for %s: %s", self.topic, error)
