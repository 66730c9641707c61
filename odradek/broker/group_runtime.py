"""The shell around the group coordinator: one shard per partition of `__consumer_offsets`,
loaded by replaying that partition, fed requests and timer ticks on the event loop (so one
shard serves one thing at a time), its records appended before its responses go out."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker, now_ms
from odradek.broker.handlers.topics import create_topic
from odradek.group.classic import Output, Token
from odradek.group.coordinator import GroupCoordinatorShard, group_type, partition_for
from odradek.group.model import GroupConfig, TopicInfo
from odradek.group.record_codec import (
    RecordFormatError,
    UnknownRecordType,
    decode_record,
    encode_record,
)
from odradek.log.partition import PartitionLog
from odradek.metadata.image import OFFSETS_TOPIC, MetadataError
from odradek.protocol.records import build_batch, decode_records, iter_batches, validate_batches

log = logging.getLogger("odradek.broker.groups")

LOAD_READ_BYTES = 1 << 20
T = TypeVar("T")


class BrokerTopics:
    """The broker's metadata image as the coordinator's TopicsView."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker  # read through: a snapshot replaces the broker's image

    def by_name(self, name: str) -> TopicInfo | None:
        state = self._broker.metadata.topics.get(name)
        return None if state is None else TopicInfo(state.topic_id, name, len(state.partitions))

    def by_id(self, topic_id: str) -> TopicInfo | None:
        name = self._broker.metadata.topic_names_by_id.get(topic_id)
        return None if name is None else self.by_name(name)

    def names(self) -> Iterable[str]:
        return list(self._broker.metadata.topics)


class GroupCoordinatorRuntime:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = GroupConfig.from_broker_config(broker.config)
        self.commit_timeout_s = broker.config.integer("offsets.commit.timeout.ms") / 1000
        self.topics = BrokerTopics(broker)
        self.rng = random.Random()
        self.shards: dict[int, GroupCoordinatorShard] = {}
        """The shards of the `__consumer_offsets` partitions this broker leads."""
        self.num_partitions = 0
        """The partition count of `__consumer_offsets` once loaded; groups route by it."""
        self._waiting: dict[Token, tuple[int, asyncio.Future[Any]]] = {}
        """Requests parked in the coordinator (JoinGroup, SyncGroup): partition, future."""
        self._tokens = itertools.count()
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._creating: asyncio.Lock | None = None
        broker.metrics.register_groups(self._group_states, self._group_offsets)
        broker.topic_listeners.append(self._refresh_topics)

    def is_loaded(self) -> bool:
        return self.num_partitions > 0

    def led_partitions(self) -> set[int]:
        state = self.broker.metadata.topics.get(OFFSETS_TOPIC)
        if state is None:
            return set()
        return {p for p, record in state.partitions.items()
                if record.leader == self.broker.node_id}

    def coordinator_partition(self, group_id: str) -> int:
        if not self.num_partitions:
            raise CoordinatorUnavailable()
        return partition_for(group_id, self.num_partitions)

    # Loading.

    def load(self) -> None:
        """Replay every partition of `__consumer_offsets` this broker leads into a fresh
        shard, as at startup. Blocking: run it in a thread before serving."""
        led = self.led_partitions()
        self.shards = {p: self._load_shard(p) for p in sorted(led)}
        self.num_partitions = len(self.broker.metadata.topics[OFFSETS_TOPIC].partitions)

    def _load_shard(self, partition: int) -> GroupCoordinatorShard:
        shard = GroupCoordinatorShard(self.config, self.topics, self.rng)
        count = 0
        for key, value in self._read_partition(partition):
            try:
                record = decode_record(key, value)
            except UnknownRecordType as error:
                log.warning("%s-%d: skipping a record of unknown type: %s",
                            OFFSETS_TOPIC, partition, error)
                continue
            except RecordFormatError as error:
                log.error("%s-%d: skipping a malformed record: %s", OFFSETS_TOPIC, partition,
                          error)
                continue
            shard.replay(*record)
            count += 1
        shard.loaded(now_ms())
        if count:
            log.info("loaded %d records, %d groups from %s-%d", count, len(shard.groups),
                     OFFSETS_TOPIC, partition)
        return shard

    def _read_partition(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        log_ = self.broker.partition(OFFSETS_TOPIC, partition)
        if log_ is None:
            return
        offset = log_.log_start_offset
        while offset < log_.log_end_offset:
            data = bytes(log_.read(offset, LOAD_READ_BYTES).records)
            if not data:
                break
            for batch in iter_batches(data):
                for record in decode_records(memoryview(data)[batch.position:]):
                    if record.key is not None and record.offset >= offset:
                        yield record.key, record.value
                offset = batch.base_offset + batch.last_offset_delta + 1

    async def ensure_loaded(self) -> None:
        """Create `__consumer_offsets` on first use, as Kafka does on the first
        FindCoordinator, and load its shards."""
        if self.num_partitions:
            return
        if self._creating is None:
            self._creating = asyncio.Lock()
        async with self._creating:
            if self.num_partitions:
                return
            if OFFSETS_TOPIC not in self.broker.metadata.topics:
                try:
                    await self._create_offsets_topic()
                except CoordinatorUnavailable:
                    return  # requests answer COORDINATOR_NOT_AVAILABLE; the next one retries
            await asyncio.get_running_loop().run_in_executor(None, self.load)
            for partition in self.shards:
                self._schedule(partition)

    async def _create_offsets_topic(self) -> None:
        """Create `__consumer_offsets`; one that another broker created meanwhile will do
        (the writer has waited for this broker's image to hold it). Other failures answer
        COORDINATOR_NOT_AVAILABLE."""
        config = self.broker.config
        try:
            await create_topic(
                self.broker, OFFSETS_TOPIC,
                config.integer("offsets.topic.num.partitions"),
                config.integer("offsets.topic.replication.factor"),
                {"cleanup.policy": "compact", "compression.type": "producer",
                 "segment.bytes": str(config.integer("offsets.topic.segment.bytes"))},
                internal=True,
            )
        except MetadataError as error:
            if error.error_code != ErrorCode.topic_already_exists:
                log.warning("creating %s failed: %s", OFFSETS_TOPIC, error.message)
                raise CoordinatorUnavailable() from error
        if OFFSETS_TOPIC not in self.broker.metadata.topics:
            raise CoordinatorUnavailable()

    # Serving.

    def shard_for(self, group_id: str) -> tuple[int, GroupCoordinatorShard]:
        """The group's shard, by the partition count the shards were loaded with (the
        metadata refuses to change it); NotCoordinator when another broker leads it."""
        partition = self.coordinator_partition(group_id)
        shard = self.shards.get(partition)
        if shard is None:
            raise NotCoordinator()
        return partition, shard

    async def run(self, group_id: str,
                  handler: Callable[[GroupCoordinatorShard, int], tuple[T, Output]]) -> T:
        """Run a handler on the group's shard and commit its output; returns its result
        once its records are appended (and fsynced when the flush policy says so)."""
        partition, shard = self.shard_for(group_id)
        result, out = handler(shard, now_ms())
        flushing = self._commit(partition, out)
        if flushing is not None:
            await flushing
        return result

    async def run_deferred(self, group_id: str,
                           handler: Callable[[GroupCoordinatorShard, Token, int], Output]
                           ) -> Any:
        """Run a handler whose response may come later (JoinGroup, SyncGroup)."""
        partition, shard = self.shard_for(group_id)
        token = next(self._tokens)
        waiting = asyncio.get_running_loop().create_future()
        self._waiting[token] = (partition, waiting)
        try:
            self._commit(partition, handler(shard, token, now_ms()))
            return await waiting
        finally:
            self._waiting.pop(token, None)

    def _commit(self, partition: int, out: Output) -> asyncio.Future[None] | None:
        """Append the output's records, then release its responses; returns the flush
        the responses wait for, if the flush policy wants one."""
        flushing = None
        if out.records:
            try:
                flushing = self._append(partition, out)
            except Exception as error:
                self._reload(partition)
                raise CoordinatorUnavailable() from error
        if flushing is None:
            self._release(out)
        else:
            flushing.add_done_callback(lambda done: self._settle(partition, out, done))
        self._schedule(partition)
        return flushing

    def _settle(self, partition: int, out: Output, appended: asyncio.Future[None]) -> None:
        """Release the output's responses once its records are committed; if they never are,
        the shard (if still led here) is rebuilt from the log and its parked requests fail."""
        if appended.cancelled() or appended.exception() is not None:
            if partition in self.shards:
                self._reload(partition)
            return
        self._release(out)

    def _release(self, out: Output) -> None:
        for token, response in out.responses:
            waiting = self._waiting.get(token)
            if waiting is not None and not waiting[1].done():
                waiting[1].set_result(response)
        for protocol, duration_ms in out.rebalances:
            self.broker.metrics.count_rebalance(protocol, duration_ms)

    def _reload(self, partition: int) -> None:
        """After a failed append the shard's state is ahead of its log: rebuild it from the
        log, and answer the requests parked on it with COORDINATOR_NOT_AVAILABLE."""
        log.exception("appending to %s-%d failed: reloading its groups",
                      OFFSETS_TOPIC, partition)
        self.shards[partition] = self._load_shard(partition)
        for parked_partition, waiting in self._waiting.values():
            if parked_partition == partition and not waiting.done():
                waiting.set_exception(CoordinatorUnavailable())

    def _append(self, partition: int, out: Output) -> asyncio.Future[None] | None:
        """Append the records as the partition's leader; None when they are committed at
        once, else a future that completes when they are (replicated to the ISR and, when
        the flush policy asks, fsynced) or fails when they cannot be."""
        key = (OFFSETS_TOPIC, partition)
        log_ = self.broker.partition(*key)
        leader_epoch = self.broker.replicas.leader_epoch(key)
        if log_ is None or leader_epoch is None:
            raise NotCoordinator()
        now = now_ms()
        batch = bytearray(build_batch([encode_record(*r) for r in out.records], timestamp_ms=now))
        batches = validate_batches(batch, len(batch), from_client=False)
        result = log_.append(batch, batches, now, leader_epoch=leader_epoch)
        self.broker.replicas.advance(key)
        self.broker.waiters.wake(key)
        committed = self.broker.replicas.committed(key, result.last_offset + 1)
        if not result.flush_due and committed.done() and committed.result() == ErrorCode.none:
            return None
        return asyncio.ensure_future(self._committed(log_, result.flush_due, committed))

    async def _committed(self, log_: PartitionLog, flush: bool,
                         committed: asyncio.Future[ErrorCode]) -> None:
        if flush:
            await self.broker.flush(log_)
        try:
            code = await asyncio.wait_for(committed, self.commit_timeout_s)
        except TimeoutError:
            code = ErrorCode.request_timed_out
        if code == ErrorCode.not_leader_or_follower:
            raise NotCoordinator()
        if code != ErrorCode.none:
            raise CoordinatorUnavailable()

    # Time.

    def _schedule(self, partition: int) -> None:
        handle = self._timers.pop(partition, None)
        if handle is not None:
            handle.cancel()
        deadline = self.shards[partition].next_deadline()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(deadline - now_ms(), 0) / 1000
        self._timers[partition] = loop.call_later(delay, self._tick, partition)

    def _tick(self, partition: int) -> None:
        self._timers.pop(partition, None)
        try:
            self._commit(partition, self.shards[partition].tick(now_ms()))
        except Exception:
            log.exception("group coordinator timers of %s-%d failed", OFFSETS_TOPIC, partition)
        finally:
            self._schedule(partition)

    def _refresh_topics(self) -> None:
        if self.num_partitions:
            self._follow_leadership()
        for partition, shard in list(self.shards.items()):
            try:
                self._commit(partition, shard.refresh_topics(now_ms()))
            except CoordinatorUnavailable:
                log.exception("refreshing the groups of %s-%d failed", OFFSETS_TOPIC, partition)

    def _follow_leadership(self) -> None:
        """Serve the partitions this broker now leads, and stop serving the others."""
        led = self.led_partitions()
        for partition in sorted(set(self.shards) - led):
            del self.shards[partition]
            handle = self._timers.pop(partition, None)
            if handle is not None:
                handle.cancel()
            for parked_partition, waiting in self._waiting.values():
                if parked_partition == partition and not waiting.done():
                    waiting.set_exception(NotCoordinator())
            log.info("no longer the group coordinator of %s-%d", OFFSETS_TOPIC, partition)
        for partition in sorted(led - set(self.shards)):
            self.shards[partition] = self._load_shard(partition)
            self._schedule(partition)
            log.info("now the group coordinator of %s-%d", OFFSETS_TOPIC, partition)

    async def expire_offsets(self) -> None:
        for partition, shard in list(self.shards.items()):
            self._commit(partition, shard.expire_offsets(now_ms()))

    def _group_states(self) -> Iterator[tuple[str, str, str, int]]:
        for shard in list(self.shards.values()):
            for group in list(shard.groups.values()):
                yield group.group_id, group_type(group), group.state, len(group.members)

    def _group_offsets(self) -> Iterator[tuple[str, str, int, int, int]]:
        for shard in list(self.shards.values()):
            for group_id, committed in list(shard.offsets.items()):
                for (topic, partition), value in list(committed.items()):
                    log_ = self.broker.partition(topic, partition)
                    if log_ is not None:
                        yield group_id, topic, partition, value.offset, log_.high_watermark

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for _, waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(CoordinatorUnavailable())


class CoordinatorUnavailable(Exception):
    """The coordinator cannot serve now; clients get COORDINATOR_NOT_AVAILABLE."""

    error_code = ErrorCode.coordinator_not_available


class NotCoordinator(CoordinatorUnavailable):
    """Another broker leads the group's partition; clients look the coordinator up again."""

    error_code = ErrorCode.not_coordinator
