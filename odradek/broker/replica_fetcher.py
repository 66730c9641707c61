"""A follower's fetcher from one leader broker (Kafka's ReplicaFetcherThread): one connection
and one Fetch at a time for every partition it follows there, as a replica (replica id set).

A partition added here first truncates its divergent tail: OffsetForLeaderEpoch with its
latest epoch, then the truncation Kafka's followers make (`odradek.replication.follower`).
Fetched batches are appended as they are, offsets and leader epochs included, and the
follower's high watermark follows the leader's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.file_deletion import delete_later
from odradek.broker.partitions import TopicPartition
from odradek.log.leader_epochs import UNDEFINED_EPOCH
from odradek.log.partition import OffsetOutOfRangeError
from odradek.net.kafka_client import (
    BrokerConnection,
    BrokerConnectionError,
    SaslAuthenticationError,
)
from odradek.net.kafka_client.request_versions import FETCH, OFFSET_FOR_LEADER_EPOCH
from odradek.protocol.codec import build_request
from odradek.protocol.records import InvalidRecordsError, validate_batches
from odradek.replication.follower import restart_inside_first_batch, truncation
from odradek.replication.throttle import ByteRate
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.broker.fetcher")

EPOCH_RETRY_S = 0.05
"""Pause before asking again when the leader has not yet caught up with the metadata."""
_RETRIABLE = {ErrorCode.not_leader_or_follower, ErrorCode.unknown_leader_epoch,
              ErrorCode.fenced_leader_epoch, ErrorCode.unknown_topic_or_partition}

FollowerThrottle = Callable[[TopicPartition, int], bool | None]
"""(partition, now ms) -> None when not throttled, else whether the quota is used up."""


@dataclass(slots=True)
class _Following:
    leader_epoch: int
    truncating: bool = True
    retry_at: float = 0.0
    lag: int = 0
    """Messages behind the leader's high watermark after the last fetch (FetcherLagMetrics)."""


class ReplicaFetcher:
    def __init__(self, broker: Broker, leader_id: int, host: str, port: int,
                 throttle: FollowerThrottle, quota: ByteRate) -> None:
        """`throttle` and `quota` are the replicas' follower throttle (KIP-73) and the
        byte rate it is measured on."""
        self.broker = broker
        self._throttle = throttle
        self._quota = quota
        self.leader_id = leader_id
        self.host = host
        self.port = port
        config = broker.config
        self.max_wait_ms = config.integer("replica.fetch.wait.max.ms")
        self.min_bytes = config.integer("replica.fetch.min.bytes")
        self.partition_max_bytes = config.integer("replica.fetch.max.bytes")
        self.response_max_bytes = config.integer("replica.fetch.response.max.bytes")
        self.backoff_s = config.integer("replica.fetch.backoff.ms") / 1000
        self.request_timeout_s = config.integer("controller.quorum.request.timeout.ms") / 1000
        self.partitions: dict[TopicPartition, _Following] = {}
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    def add(self, key: TopicPartition, leader_epoch: int) -> None:
        self.partitions[key] = _Following(leader_epoch)
        self._changed.set()

    def remove(self, key: TopicPartition) -> None:
        self.partitions.pop(key, None)

    def stop(self) -> None:
        self._task.cancel()

    async def stopped(self) -> None:
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        connection: BrokerConnection | None = None
        try:
            while True:
                loop = asyncio.get_running_loop()
                ready = {k: s for k, s in self.partitions.items() if s.retry_at <= loop.time()}
                if not ready:
                    await self._idle()
                    continue
                try:
                    if connection is None:
                        connection = await BrokerConnection.connect(
                            self.host, self.port, f"replica-fetcher-{self.broker.node_id}",
                            self.request_timeout_s, self.broker.inter_broker_security)
                        # Connecting waits on the leader (a paused one for as long as it
                        # is paused): a partition followed elsewhere since must not be
                        # fetched here at its old epoch and its new log end
                        ready = self._still_followed(ready)
                    truncating = {k: s for k, s in ready.items() if s.truncating}
                    if truncating:
                        await self._truncate(connection, truncating)
                    else:
                        await self._fetch(connection, ready)
                except BrokerConnectionError as error:
                    log.log(logging.ERROR if isinstance(error, SaslAuthenticationError)
                            else logging.INFO, "fetching from broker %d at %s:%d: %s",
                            self.leader_id, self.host, self.port, error)
                    connection = None
                    await asyncio.sleep(self.backoff_s)
                except Exception:  # a bug must not stop this broker following the leader
                    log.exception("fetching from broker %d: retrying on a new connection",
                                  self.leader_id)
                    if connection is not None:
                        connection.close()
                        connection = None
                    await asyncio.sleep(self.backoff_s)
        finally:
            if connection is not None:
                connection.close()

    def _still_followed(self, ready: dict[TopicPartition, _Following]
                        ) -> dict[TopicPartition, _Following]:
        return {key: following for key, following in ready.items()
                if self.partitions.get(key) is following}

    async def _idle(self) -> None:
        """Wait for a partition to be added or a retry to come due."""
        self._changed.clear()
        loop = asyncio.get_running_loop()
        due = [s.retry_at for s in self.partitions.values()]
        timeout = max(min(due) - loop.time(), 0) if due else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    def _retry_later(self, following: _Following, delay_s: float = EPOCH_RETRY_S) -> None:
        following.retry_at = asyncio.get_running_loop().time() + delay_s

    # --- truncation ----------------------------------------------------------------------

    async def _truncate(self, connection: BrokerConnection,
                        partitions: dict[TopicPartition, _Following]) -> None:
        asking: dict[TopicPartition, tuple[_Following, int]] = {}
        for key, following in partitions.items():
            log_ = self.broker.logs.get(*key)
            if log_ is None:  # not created yet, or being deleted: a spin here would starve
                self._retry_later(following)  # the event loop of the very work it waits for
                continue
            latest = log_.leader_epochs.latest_epoch
            if latest == UNDEFINED_EPOCH:
                self._truncate_to(key, log_.high_watermark, "no leader epoch recorded")
                following.truncating = False
                continue
            asking[key] = (following, latest)
        if not asking:
            return
        topics: dict[str, list[dict[str, int]]] = {}
        for (topic, index), (following, latest) in asking.items():
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": following.leader_epoch,
                "leader_epoch": latest})
        request = build_request(*OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": self.broker.node_id,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]})
        response = await connection.send(request, self.request_timeout_s)
        for topic in response.topics:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition)
                asked = asking.get(key)
                if asked is None or self.partitions.get(key) is not asked[0]:
                    continue
                following = asked[0]
                if answer.error_code != ErrorCode.none:
                    self._retry_later(following)
                    continue
                log_ = self.broker.logs.get(*key)
                if log_ is None:
                    continue
                cut = truncation(log_.leader_epochs, log_.log_end_offset, log_.high_watermark,
                                 answer.leader_epoch, answer.end_offset)
                self._truncate_to(key, cut.offset, f"leader {self.leader_id} answered epoch "
                                  f"{answer.leader_epoch} ends at {answer.end_offset}")
                following.truncating = not cut.completed

    def _truncate_to(self, key: TopicPartition, offset: int, why: str) -> None:
        log_ = self.broker.logs.get(*key)
        if log_ is None:
            return
        before = log_.log_end_offset
        log_.truncate_to(offset, now_ms())  # past the end: only the epoch cache's tail goes
        if log_.log_end_offset == before:
            return
        delete_later(log_, log_.take_deleted_files())
        log.warning("%s-%d: truncated the log from %d to %d (%s)", *key, before,
                    log_.log_end_offset, why)

    # --- fetching ------------------------------------------------------------------------

    async def _fetch(self, connection: BrokerConnection,
                     partitions: dict[TopicPartition, _Following]) -> None:
        topics: dict[str, list[dict[str, int]]] = {}
        offsets: dict[TopicPartition, int] = {}
        throttled: set[TopicPartition] = set()
        now = now_ms()
        for key, following in partitions.items():
            log_ = self.broker.logs.get(*key)
            throttle = self._throttle(key, now)
            if log_ is None or throttle:
                continue
            if throttle is not None:
                throttled.add(key)
            offsets[key] = log_.log_end_offset
            topics.setdefault(key[0], []).append({
                "partition": key[1], "current_leader_epoch": following.leader_epoch,
                "fetch_offset": log_.log_end_offset,
                "last_fetched_epoch": log_.leader_epochs.latest_epoch,
                "log_start_offset": log_.log_start_offset,
                "partition_max_bytes": self.partition_max_bytes})
        if not topics:
            await asyncio.sleep(EPOCH_RETRY_S)
            return
        request = build_request(*FETCH, {
            "replica_id": self.broker.node_id, "max_wait": self.max_wait_ms,
            "min_bytes": self.min_bytes, "max_bytes": self.response_max_bytes,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]})
        response = await connection.send(
            request, self.max_wait_ms / 1000 + self.request_timeout_s)
        if response.error_code != ErrorCode.none:
            raise BrokerConnectionError(
                f"fetch failed: {ErrorCode(response.error_code).name.upper()}")
        for topic in response.responses:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition_index)
                sent = partitions.get(key)
                if sent is None or self.partitions.get(key) is not sent:
                    continue
                if key in throttled and answer.records:
                    self._quota.record(len(answer.records), now_ms())
                self._apply(key, sent, offsets[key], answer)

    def _apply(self, key: TopicPartition, following: _Following, fetch_offset: int,
               answer: Any) -> None:
        log_ = self.broker.logs.get(*key)
        if log_ is None or log_.log_end_offset != fetch_offset:
            return
        code = answer.error_code
        if code == ErrorCode.offset_out_of_range:
            if fetch_offset < answer.log_start_offset:
                log_.truncate_fully_and_start_at(answer.log_start_offset, now_ms())
                delete_later(log_, log_.take_deleted_files())
                log.warning("%s-%d: behind the leader's log start: restarted at %d", *key,
                            answer.log_start_offset)
            else:
                following.truncating = True
            return
        if code in _RETRIABLE:
            self._retry_later(following)
            return
        if code != ErrorCode.none:  # as Kafka's fetcher: an error, then replica.fetch.backoff.ms
            log.error("%s-%d: fetch from %d failed: %s", *key, self.leader_id,
                      ErrorCode(code).name.upper())
            self._retry_later(following, self.backoff_s)
            return
        if answer.diverging_epoch.epoch >= 0:  # our log diverges from the leader's here
            following.truncating = True
            return
        records = answer.records
        if records:
            try:
                batches = validate_batches(records, len(records), from_client=False)
                restart = restart_inside_first_batch(
                    log_.log_start_offset, log_.log_end_offset, batches[0].base_offset,
                    batches[0].last_offset)
                if restart is not None:
                    log_.truncate_fully_and_start_at(restart, now_ms())
                    delete_later(log_, log_.take_deleted_files())
                result = log_.append_as_follower(records, batches, now_ms())
            except (InvalidRecordsError, OffsetOutOfRangeError) as error:
                log.error("%s-%d: refused a fetched chunk from %d: %s", *key, self.leader_id,
                          error)
                following.truncating = True
                return
            self.broker.metrics.replication_bytes_in.inc(len(records))
            if result.flush_due:
                asyncio.ensure_future(self.broker.flush(log_))
        high_watermark = min(answer.high_watermark, log_.log_end_offset)
        if high_watermark != log_.high_watermark:
            log_.high_watermark = high_watermark
            self.broker.waiters.wake(key)  # consumers reading this follower (KIP-392)
        following.lag = max(answer.high_watermark - log_.log_end_offset, 0)
        if answer.log_start_offset > log_.log_start_offset:  # DeleteRecords on the leader
            log_.delete_records_before(min(answer.log_start_offset, log_.high_watermark))
            delete_later(log_, log_.take_deleted_files())
