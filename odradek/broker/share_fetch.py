"""The share-partition leader, as Kafka's SharePartitionManager: the share-partitions this
broker leads (one per share group and topic partition), the share sessions of the members
fetching from it, and the acquisition-lock timers.

A share-partition is built on first use from the state its share coordinator persisted
(`StatePersister.read`), and again whenever the partition's leader epoch has moved on since.
Every change to persisted state (acknowledgements, expired locks, a member's release) is
written to the share coordinator before the client hears of it; a failed write drops the
partition, so that the next use rebuilds it from what was persisted. One lock per
share-partition orders its fetches, acknowledgements and expiries.

Reads are whole batches from the segment files, never decoded: only their headers are read
to name the acquired offsets; the client skips what it did not acquire.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.share_metrics import ShareGroupMetrics, SharePartitionMetrics
from odradek.broker.share_persister import PersisterError, StatePersister
from odradek.log.partition import OffsetOutOfRangeError, PartitionLog
from odradek.protocol.control import ControlType, read_marker
from odradek.protocol.records import BatchInfo, InvalidRecordsError, iter_batches
from odradek.runtime.clock import now_ms
from odradek.share.partition import (
    UNINITIALIZED_START_OFFSET,
    AcknowledgementBatch,
    AcquiredRecords,
    AcquireMode,
    FetchedBatch,
    SharePartition,
    SharePartitionConfig,
    StateWrite,
    aborted_batch_ranges,
    initial_start_offset,
)
from odradek.share.session import ShareSession, ShareSessionCache

log = logging.getLogger("odradek.broker.share")

INITIAL_STATE_EPOCH = 0
ShareKey = tuple[str, str, int]
"""(group id, topic id, partition)."""


@dataclass(slots=True)
class FetchedShare:
    """One partition of a ShareFetch response."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    records: bytes | memoryview = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)
    current_leader: tuple[int, int] = (-1, -1)
    acquirable: bool = False
    """The fetch could acquire here (the share-partition's lock held, room under its
    in-flight limit), records or not: Kafka's acquired fetch lock."""


@dataclass(slots=True)
class _Entry:
    key: ShareKey
    partition: SharePartition
    topic: str
    leader_epoch: int
    timer: asyncio.TimerHandle | None = None
    fetch_lock_released_ms: float = 0.0
    """When a fetch last released this share-partition's fetch lock (0: none has)."""


class SharePartitionManager:
    def __init__(self, broker: Broker, replicas: ReplicaManager,
                 persister: StatePersister) -> None:
        self.broker = broker
        self.replicas = replicas
        self.persister = persister
        self.sessions = ShareSessionCache(broker.config.integer("group.share.max.share.sessions"))
        self.metrics = ShareGroupMetrics(broker.metrics.registry,
                                         lambda: len(self.sessions.sessions),
                                         self.sessions.partition_count)
        self._entries: dict[ShareKey, _Entry] = {}
        self._locks: dict[ShareKey, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.partition_metrics = SharePartitionMetrics(broker.metrics.registry, self._led)

    def _led(self) -> list[tuple[str, str, int, SharePartition]]:
        """The share-partitions held here, for the metrics' thread (a snapshot: the loop
        changes the dict meanwhile)."""
        return [(entry.key[0], entry.topic, entry.key[2], entry.partition)
                for entry in list(self._entries.values())]

    # --- fetching ------------------------------------------------------------------------

    async def fetch(self, group_id: str, member_id: str,
                    wanted: Sequence[tuple[str, str, int]], max_records: int,
                    batch_size: int, max_bytes: int,
                    mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED
                    ) -> dict[tuple[str, int], FetchedShare]:
        """Acquire for the member what each (topic, topic id, partition) has available,
        whole batches up to `max_bytes` in all and `max_records` records in all (about as
        many, batch-aligned, in BATCH_OPTIMIZED mode)."""
        results: dict[tuple[str, int], FetchedShare] = {}
        remaining_bytes, remaining_records = max_bytes, max_records
        for topic, topic_id, partition in wanted:
            fetched = await self._fetch_partition(
                group_id, member_id, topic, topic_id, partition, remaining_records, batch_size,
                remaining_bytes, mode, first=remaining_bytes == max_bytes)
            results[(topic_id, partition)] = fetched
            remaining_bytes = max(remaining_bytes - len(fetched.records), 0)
            remaining_records -= sum(a.last_offset - a.first_offset + 1 for a in fetched.acquired)
            if remaining_records <= 0 or remaining_bytes <= 0:
                remaining_records = remaining_bytes = 0
        return results

    async def _fetch_partition(self, group_id: str, member_id: str, topic: str, topic_id: str,
                               partition: int, max_records: int, batch_size: int,
                               max_bytes: int, mode: AcquireMode, first: bool) -> FetchedShare:
        key = (group_id, topic_id, partition)
        log_, code = self.broker.leader_log(topic, partition)
        if log_ is None:
            hint = self.broker.leader_hint(topic, partition)
            return FetchedShare(code, current_leader=hint or (-1, -1))
        if max_records <= 0 or max_bytes <= 0:  # MaxBytes 0 fetches nothing, as in Kafka
            return FetchedShare()
        async with self._lock(key):
            try:
                entry = await self._entry(key, topic, log_)
            except PersisterError as error:
                return FetchedShare(error.code, str(error))
            read_committed = self.broker.group_config(group_id).share_read_committed
            locked = time.monotonic() * 1000  # Kafka's fetch lock: from here to the answer
            fetched = self._acquire(entry, member_id, log_, read_committed, max_records,
                                    batch_size, max_bytes, mode, first)
            released = time.monotonic() * 1000
            idle = locked - entry.fetch_lock_released_ms if entry.fetch_lock_released_ms else 0
            entry.fetch_lock_released_ms = released
            metrics = self.partition_metrics
            metrics.record_fetch_lock(group_id, topic, partition, released - locked, idle)
            metrics.record_batches(group_id, topic, partition,
                                   entry.partition.take_new_batch_sizes())
            return fetched

    def _acquire(self, entry: _Entry, member_id: str, log_: PartitionLog,
                 read_committed: bool, max_records: int, batch_size: int,
                 max_bytes: int, mode: AcquireMode, first: bool) -> FetchedShare:
        share = entry.partition
        if log_.log_start_offset > share.start_offset:
            share.update_log_start_offset(log_.log_start_offset)
        if not share.can_acquire_records():
            return FetchedShare()
        offset = share.next_fetch_offset()
        stable = log_.last_stable_offset
        visible_end = stable if read_committed else log_.high_watermark
        try:
            read = log_.read(offset, max_bytes, max_offset=visible_end, min_one_batch=first)
        except OffsetOutOfRangeError as error:
            return FetchedShare(ErrorCode.offset_out_of_range, str(error))
        batches = list(iter_batches(read.records))
        if not batches:
            return FetchedShare(acquirable=True)
        aborted: list[tuple[int, int]] = []
        if read_committed:
            aborted = aborted_batch_ranges(
                [_fetched_batch(read.records, b) for b in batches],
                [(a.producer_id, a.first_offset)
                 for a in log_.aborted_transactions(offset, stable)])
        now = now_ms()
        acquired = share.acquire(member_id, offset, [(b.base_offset, b.last_offset)
                                                     for b in batches],
                                 now, max_records, batch_size, aborted, mode)
        if not acquired:
            return FetchedShare(acquirable=True)
        self._arm_timer(entry)
        low, high = acquired[0].first_offset, acquired[-1].last_offset
        kept = [b for b in batches if b.last_offset >= low and b.base_offset <= high]
        view = memoryview(read.records)
        return FetchedShare(records=view[kept[0].position:kept[-1].end], acquired=acquired,
                            acquirable=True)

    # --- acknowledging --------------------------------------------------------------------

    async def acknowledge(self, group_id: str, member_id: str, topic: str, topic_id: str,
                          partition: int, batches: Sequence[AcknowledgementBatch]
                          ) -> tuple[ErrorCode, str | None]:
        """Settle the member's records of one partition; persisted before it returns."""
        key = (group_id, topic_id, partition)
        log_, code = self.broker.leader_log(topic, partition)
        if log_ is None:
            return code, None
        async with self._lock(key):
            try:
                entry = await self._entry(key, topic, log_)
            except PersisterError as error:
                return error.code, str(error)
            result = entry.partition.acknowledge(member_id, batches, now_ms())
            if result.error != ErrorCode.none:
                return result.error, None
            if result.write is not None:
                failure = await self._persist(key, entry, result.write)
                if failure is not None:
                    return failure
            self._arm_timer(entry)
        self.metrics.record_acknowledgements(batches)
        self.broker.waiters.wake((topic, partition))
        return ErrorCode.none, None

    async def release(self, group_id: str, member_id: str,
                      partitions: Sequence[tuple[str, int]]) -> None:
        """The member left this broker (its session closed or its connection went): what it
        acquired here becomes available to the others."""
        for topic_id, partition in partitions:
            key = (group_id, topic_id, partition)
            if key not in self._entries:
                continue
            async with self._lock(key):
                entry = self._entries.get(key)
                if entry is None:
                    continue
                write = entry.partition.release_acquired_records(member_id)
                if write is not None:
                    await self._persist(key, entry, write)
                self._arm_timer(entry)
            self.broker.waiters.wake((entry.topic, partition))

    def member_departed(self, group_id: str, member_id: str) -> None:
        """The group coordinator removed the member (it left or was fenced): release what it
        holds in this broker's share-partitions of the group."""
        partitions = [(topic_id, p) for group, topic_id, p in self._entries if group == group_id]
        if partitions:
            self._spawn(self.release(group_id, member_id, partitions))

    def disconnected(self, connection: str) -> None:
        """A client connection closed: release what the member of its share session held;
        if no member of its group has a session here any more, drop the group's
        share-partitions (Kafka's onGroupEmpty), so that an admin's change to their state
        (AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups, which need an empty
        group) is read on next use."""
        session, emptied = self.sessions.disconnected(connection)
        if session is not None or emptied is not None:
            self._spawn(self._left(session, emptied))

    async def _left(self, session: ShareSession | None, emptied: str | None) -> None:
        """Released first; dropped only if, by then, no member of the group has opened a
        session here: a member that did may have acquired what the release freed, and a
        rebuilt share-partition would deliver it again."""
        if session is not None:
            await self.release(*session.key, list(session.partitions))
        if emptied is not None and not self.sessions.holds_group(emptied):
            self.forget_group(emptied)

    # --- state ---------------------------------------------------------------------------

    def _lock(self, key: ShareKey) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _entry(self, key: ShareKey, topic: str, log_: PartitionLog) -> _Entry:
        """The share-partition, built from its persisted state when it is new here or the
        partition's leader epoch moved on. Call under the key's lock."""
        leader_epoch = self.replicas.leader_epoch((topic, key[2]))
        if leader_epoch is None:
            raise PersisterError(ErrorCode.not_leader_or_follower, f"not the leader of {topic}")
        entry = self._entries.get(key)
        if entry is not None and entry.leader_epoch == leader_epoch:
            return entry
        self._drop(key)
        group_id, topic_id, partition = key
        config = self.broker.group_config(group_id)
        reset = config.share_reset
        initial = initial_start_offset(reset.strategy, reset.duration_ms, log_.log_start_offset,
                                       log_.high_watermark, now_ms(),
                                       self._offset_for_timestamp(log_))
        load_start = time.monotonic()
        try:
            state = await self.persister.read(group_id, topic_id, partition, leader_epoch)
        except PersisterError as error:
            if error.code != ErrorCode.invalid_request:
                raise
            # never initialized: the group coordinator initializes a partition's state before
            # it assigns it, so only a fetch of a partition never assigned gets here
            await self.persister.initialize(group_id, topic_id, partition, INITIAL_STATE_EPOCH,
                                            initial)
            state = await self.persister.read(group_id, topic_id, partition, leader_epoch)
        start_offset = initial if state.start_offset == UNINITIALIZED_START_OFFSET else (
            state.start_offset)
        limits = SharePartitionConfig(config.share_delivery_count_limit,
                                      config.share_partition_max_record_locks,
                                      config.share_record_lock_duration_ms)
        share = SharePartition.from_persisted(limits, leader_epoch,
                                              state.state_epoch, start_offset,
                                              state.state_batches)
        entry = self._entries[key] = _Entry(key, share, topic, leader_epoch)
        self.metrics.partition_load_time_ms.observe((time.monotonic() - load_start) * 1000)
        self.partition_metrics.record_batches(group_id, topic, partition,
                                              share.take_new_batch_sizes())
        log.info("share group %s: %s-%d at start offset %d, state epoch %d", group_id, topic,
                 partition, share.start_offset, state.state_epoch)
        return entry

    @staticmethod
    def _offset_for_timestamp(log_: PartitionLog) -> Callable[[int], int | None]:
        def find(timestamp: int) -> int | None:
            found = log_.offset_for_timestamp(timestamp)
            return None if found is None else found[0]
        return find

    async def _persist(self, key: ShareKey, entry: _Entry, write: StateWrite
                       ) -> tuple[ErrorCode, str] | None:
        """Write the change; on failure the partition is dropped (rebuilt from what was
        persisted on next use) and the error returned."""
        try:
            await self.persister.write(*key, write)
        except PersisterError as error:
            log.warning("share group %s: writing the state of %s-%d failed: %s", key[0],
                        entry.topic, key[2], error)
            self._drop(key)
            return error.code, str(error)
        return None

    def forget_group(self, group_id: str) -> None:
        """The group's share-partitions are read again from their persisted state on next
        use (an admin changed it; Kafka's onGroupEmpty drops them likewise)."""
        for key in [k for k in self._entries if k[0] == group_id]:
            self._drop(key)

    def _drop(self, key: ShareKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        self.partition_metrics.forget(key[0], entry.topic, key[2])

    # --- acquisition locks ---------------------------------------------------------------

    def _arm_timer(self, entry: _Entry) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        deadline = entry.partition.next_lock_deadline()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay_s = max(deadline - now_ms(), 0) / 1000
        entry.timer = loop.call_later(delay_s, lambda: self._spawn(self._expire(entry.key)))

    async def _expire(self, key: ShareKey) -> None:
        async with self._lock(key):
            entry = self._entries.get(key)
            if entry is None:
                return
            entry.timer = None
            write = entry.partition.expire_locks(now_ms())
            if write is not None and await self._persist(key, entry, write) is not None:
                return
            self._arm_timer(entry)
        self.broker.waiters.wake((entry.topic, key[2]))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for entry in self._entries.values():
            if entry.timer is not None:
                entry.timer.cancel()
        for task in self._tasks:
            task.cancel()
        self.persister.close()


def _fetched_batch(records: bytes | memoryview, batch: BatchInfo) -> FetchedBatch:
    """What the read_committed filter needs of a batch: an abort marker is read from its
    control record's key."""
    abort = False
    if batch.is_control:
        try:
            control, _ = read_marker(memoryview(records)[batch.position:batch.end])
        except InvalidRecordsError:
            control = None  # not a transaction marker
        abort = control == ControlType.ABORT
    return FetchedBatch(batch.base_offset, batch.last_offset, batch.producer_id,
                        batch.is_transactional, abort)
