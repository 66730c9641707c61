"""The broker's replicas (Kafka's ReplicaManager): leads or follows each hosted partition as
the metadata says, keeps the leaders' high watermarks, parks acks=all produces until the
high watermark passes them, and asks the controller to shrink or expand ISRs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.metrics import partition_figures
from odradek.broker.partitions import TopicPartition
from odradek.broker.replica_fetcher import ReplicaFetcher
from odradek.log.partition import AppendResult, PartitionLog
from odradek.metadata.records import NO_LEADER, PartitionRecord
from odradek.protocol.records import BatchInfo
from odradek.replication.leader import IsrChange, LeaderState, OffsetPurgatory, effective_min_isr
from odradek.replication.read_replica import (
    NO_PREFERRED_REPLICA,
    RACK_AWARE_SELECTOR,
    preferred_read_replica,
)
from odradek.replication.throttle import ByteRate, throttled

log = logging.getLogger("odradek.broker.replicas")

IsrChangeRequest = tuple[str, int, IsrChange]
"""An ISR change to send: (topic id, partition, change)."""
ISR_RETRY_BACKOFF_S = 0.1
"""How long an ISR change whose outcome is unknown waits before it is sent again."""

AlterPartition = Callable[[Sequence[IsrChangeRequest]], Awaitable[list[tuple[ErrorCode, int]]]]
"""Sends ISR changes to the controller in one request: each one's (error code, the partition
epoch after it)."""


@dataclass(slots=True)
class Acknowledgement:
    """What acknowledging records a leader holds waits for."""

    flushing: asyncio.Future[None] | None
    """The fsync the flush policy asked for (flush.messages), if it did."""
    committed: asyncio.Future[ErrorCode] | None
    """Resolves once the high watermark passes the records, when the caller waits for the
    ISR (acks=all, the coordinators, transaction markers)."""

    def settled(self) -> bool:
        """Whether the records may be acknowledged now, with `outcome()`."""
        return self.flushing is None and (self.committed is None or self.committed.done())

    def outcome(self) -> ErrorCode:
        """The error to acknowledge with once flushed and (as far as the wait allowed)
        committed: REQUEST_TIMED_OUT when the ISR did not commit the records in time."""
        committed = self.committed
        if committed is None:
            return ErrorCode.none
        code = committed.result() if committed.done() else ErrorCode.request_timed_out
        committed.cancel()
        return code


async def acknowledged(acks: Sequence[Acknowledgement], timeout_s: float) -> list[ErrorCode]:
    """Wait for the fsyncs, then up to `timeout_s` for the ISR commits; each outcome, in
    order."""
    await asyncio.gather(*(a.flushing for a in acks if a.flushing is not None))
    waiting = [a.committed for a in acks if a.committed is not None and not a.committed.done()]
    if waiting:
        await asyncio.wait(waiting, timeout=timeout_s)
    return [a.outcome() for a in acks]


class ReplicaManager:
    def __init__(self, broker: Broker, alter_partition: AlterPartition) -> None:
        self.broker = broker
        self.alter_partition = alter_partition
        config = broker.config
        self.lag_time_ms = config.integer("replica.lag.time.max.ms")
        self.selects_read_replicas = config["replica.selector.class"] == RACK_AWARE_SELECTOR
        self.leaders: dict[TopicPartition, LeaderState] = {}
        self.followed: dict[TopicPartition, tuple[int, int]] = {}
        """Partitions followed: (leader id, leader epoch)."""
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.replicating = True
        """False once controlled shutdown began: the controller takes this broker out of the
        ISRs and would refuse it back, so it fetches no more."""
        self._purgatories: dict[TopicPartition, OffsetPurgatory[asyncio.Future[ErrorCode]]] = {}
        self._isr_queue: dict[TopicPartition, tuple[LeaderState, IsrChange]] = {}
        """ISR changes waiting for the request in flight to be answered."""
        self._isr_sender: asyncio.Task[None] | None = None
        self.leader_quota = ByteRate()
        """Bytes sent to throttled out-of-sync followers (leader.replication.throttled.*)."""
        self.follower_quota = ByteRate()
        """Bytes fetched for throttled replicas here (follower.replication.throttled.*)."""
        broker.metrics.register_replicas(self.under_replicated, self.under_min_isr,
                                         lambda: len(self.leaders),
                                         lambda: len(self.leaders) + len(self.followed),
                                         self.max_lag, self.partition_states)

    # --- leadership from metadata ------------------------------------------------------

    def on_metadata(self, now_ms: int) -> None:
        """Lead, follow or drop each hosted partition as the image now says."""
        broker = self.broker
        node_id = broker.node_id
        seen: set[TopicPartition] = set()
        for name, topic in broker.metadata.topics.items():
            for index, record in topic.partitions.items():
                key = (name, index)
                log_ = broker.logs.get(name, index)
                if node_id not in record.replicas or log_ is None:
                    continue
                seen.add(key)
                if record.leader == node_id:
                    self._lead(key, record, now_ms)
                else:
                    self._follow(key, record)
        for key in (self.leaders.keys() | self.followed.keys()) - seen:
            self._resign(key)
            self._stop_following(key)
        for leader_id in [i for i, f in self.fetchers.items() if not f.partitions]:
            self.fetchers.pop(leader_id).stop()

    def _lead(self, key: TopicPartition, record: PartitionRecord, now_ms: int) -> None:
        state = self.leaders.get(key)
        if state is not None and state.leader_epoch == record.leader_epoch:
            if state.partition_epoch != record.partition_epoch:
                state.update(record.replicas, record.isr, record.partition_epoch)
                self.advance(key)
            return
        log_ = self.broker.logs.get(*key)
        assert log_ is not None
        if record.leader_epoch < log_.leader_epochs.latest_epoch:
            log.warning("%s-%d: not leading in epoch %d: the log already holds epoch %d",
                        *key, record.leader_epoch, log_.leader_epochs.latest_epoch)
            return
        self._stop_following(key)
        self._resign(key)
        log_.start_leader_epoch(record.leader_epoch)
        self.leaders[key] = LeaderState.start(
            self.broker.node_id, record.replicas, record.isr, record.leader_epoch,
            record.partition_epoch, log_.log_end_offset, log_.high_watermark, now_ms,
        )
        log.info("%s-%d: leader in epoch %d, ISR %s, log end %d", *key, record.leader_epoch,
                 list(record.isr), log_.log_end_offset)
        self.advance(key)

    def _follow(self, key: TopicPartition, record: PartitionRecord) -> None:
        self._resign(key)
        wanted = (record.leader, record.leader_epoch)
        if self.followed.get(key) == wanted:
            return
        self._stop_following(key)
        if record.leader == NO_LEADER or not self.replicating:
            return
        leader = self.broker.inter_broker_endpoint(record.leader, include_fenced=True)
        if leader is None:
            log.warning("%s-%d: leader %d has no %s endpoint to fetch from", *key,
                        record.leader, self.broker.inter_broker_listener)
            return
        self.followed[key] = wanted
        fetcher = self.fetchers.get(record.leader)
        if fetcher is None or (fetcher.host, fetcher.port) != (leader.host, leader.port):
            if fetcher is not None:
                fetcher.stop()
            fetcher = self.fetchers[record.leader] = ReplicaFetcher(
                self.broker, record.leader, leader.host, leader.port,
                self.follower_throttle, self.follower_quota)
            for other, (leader_id, epoch) in self.followed.items():
                if leader_id == record.leader and other != key:
                    fetcher.add(other, epoch)
        fetcher.add(key, record.leader_epoch)
        log.info("%s-%d: following %d in epoch %d", *key, *wanted)

    def _stop_following(self, key: TopicPartition) -> None:
        followed = self.followed.pop(key, None)
        if followed is not None and followed[0] in self.fetchers:
            self.fetchers[followed[0]].remove(key)

    def _resign(self, key: TopicPartition) -> None:
        if self.leaders.pop(key, None) is None:
            return
        for future in self._purgatories.pop(key, OffsetPurgatory()).drain():
            if not future.done():
                future.set_result(ErrorCode.not_leader_or_follower)

    # --- the leader's high watermark ---------------------------------------------------

    def leader_epoch(self, key: TopicPartition) -> int | None:
        state = self.leaders.get(key)
        return state.leader_epoch if state is not None else None

    def replica_epoch(self, key: TopicPartition) -> int | None:
        """The leader epoch of a partition this broker leads or follows."""
        followed = self.followed.get(key)
        return followed[1] if followed is not None else self.leader_epoch(key)

    def follower_log(self, key: TopicPartition) -> PartitionLog | None:
        """The log of a partition this broker follows (consumers may read it, KIP-392)."""
        return self.broker.logs.get(*key) if key in self.followed else None

    def preferred_read_replica(self, key: TopicPartition, client_rack: str, fetch_offset: int,
                               now_ms: int) -> int:
        """The follower a consumer in `client_rack` should fetch from (KIP-392), when
        `replica.selector.class` is the rack-aware selector; NO_PREFERRED_REPLICA otherwise."""
        state = self.leaders.get(key)
        if state is None or not self.selects_read_replicas:
            return NO_PREFERRED_REPLICA
        racks = {b.broker_id: b.rack for b in self.broker.metadata.brokers.values()
                 if not b.fenced}
        return preferred_read_replica(state, racks, client_rack, fetch_offset, now_ms)

    def below_min_isr(self, key: TopicPartition) -> bool:
        """Whether the partition's ISR is smaller than its effective min ISR: an acks=all
        write is then refused before it is written, as in Kafka."""
        state = self.leaders.get(key)
        return state is None or len(state.isr) < self._min_isr(key, state)

    def effective_min_isr(self, key: TopicPartition) -> int:
        state = self.leaders.get(key)
        return self._min_isr(key, state) if state is not None else 0

    def _min_isr(self, key: TopicPartition, state: LeaderState) -> int:
        return effective_min_isr(self.broker.topic_config(key[0])["min.insync.replicas"],
                                 len(state.replicas))

    def isr_size(self, key: TopicPartition) -> int:
        state = self.leaders.get(key)
        return len(state.isr) if state is not None else 0

    def advance(self, key: TopicPartition) -> None:
        """After an append or a follower's fetch: move the high watermark if the ISR allows,
        completing the produces it passes and waking fetches waiting for it."""
        state = self.leaders.get(key)
        log_ = self.broker.logs.get(*key)
        if state is None or log_ is None or not state.advance_high_watermark(
                log_.log_end_offset):
            return
        log_.high_watermark = state.high_watermark
        purgatory = self._purgatories.get(key)
        if purgatory is not None:
            code = (ErrorCode.none if len(state.isr) >= self._min_isr(key, state)
                    else ErrorCode.not_enough_replicas_after_append)
            for future in purgatory.reached(state.high_watermark):
                if not future.done():
                    future.set_result(code)
        self.broker.waiters.wake(key)

    def append_as_leader(self, key: TopicPartition, log_: PartitionLog, leader_epoch: int,
                         records: bytearray, batches: list[BatchInfo], now_ms: int,
                         wait_for_isr: bool) -> tuple[AppendResult, Acknowledgement]:
        """Append as the partition's leader in `leader_epoch` (checked by the caller, with
        `leader_epoch(key)`, before its own checks of the records): stamp the epoch, move the
        high watermark, wake waiting fetches, start the fsync the flush policy asks for, and,
        when `wait_for_isr`, await the ISR's commit. Kafka's Partition.appendRecordsToLeader
        followed by its DelayedProduce."""
        result = log_.append(records, batches, now_ms, leader_epoch=leader_epoch)
        self.advance(key)
        self.broker.waiters.wake(key)
        flushing = asyncio.ensure_future(self.broker.flush(log_)) if result.flush_due else None
        committed = self.committed(key, result.last_offset + 1) if wait_for_isr else None
        return result, Acknowledgement(flushing, committed)

    def committed(self, key: TopicPartition, end_offset: int) -> asyncio.Future[ErrorCode]:
        """Resolves once the high watermark reaches `end_offset` (NONE, or
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas), or
        with NOT_LEADER_OR_FOLLOWER when this broker stops leading the partition."""
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        state = self.leaders.get(key)
        if state is None:
            future.set_result(ErrorCode.not_leader_or_follower)
        elif state.high_watermark >= end_offset:
            future.set_result(ErrorCode.none if len(state.isr) >= self._min_isr(key, state)
                              else ErrorCode.not_enough_replicas_after_append)
        else:
            self._purgatories.setdefault(key, OffsetPurgatory()).add(end_offset, future)
        return future

    def record_follower_fetch(self, key: TopicPartition, replica: int, fetch_offset: int,
                              log_start_offset: int, now_ms: int) -> None:
        state = self.leaders.get(key)
        log_ = self.broker.logs.get(*key)
        if state is None or log_ is None:
            return
        state.record_fetch(replica, fetch_offset, log_.log_end_offset, now_ms, log_start_offset)
        self.advance(key)
        registration = self.broker.metadata.brokers.get(replica)
        change = state.expansion(replica, registration is not None and not registration.fenced)
        if change is not None:
            self._send(key, state, change)

    def high_watermark(self, key: TopicPartition) -> int | None:
        state = self.leaders.get(key)
        return state.high_watermark if state is not None else None

    # --- throttles (KIP-73) -------------------------------------------------------------

    def leader_throttle(self, key: TopicPartition, replica: int, now_ms: int) -> bool | None:
        """None when a fetch by `replica` is not throttled; else whether the leader's quota
        is used up (the fetch gets no data now). Only out-of-sync followers are throttled."""
        state = self.leaders.get(key)
        entries = self.broker.topic_config(key[0])["leader.replication.throttled.replicas"]
        if state is None or replica in state.isr or not throttled(
                entries, key[1], self.broker.node_id):
            return None
        limit = self.broker.config.integer("leader.replication.throttled.rate")
        return self.leader_quota.exceeded(limit, now_ms)

    def follower_throttle(self, key: TopicPartition, now_ms: int) -> bool | None:
        """None when this replica's fetching is not throttled; else whether the follower's
        quota is used up (the partition sits out this fetch)."""
        entries = self.broker.topic_config(key[0])["follower.replication.throttled.replicas"]
        if not throttled(entries, key[1], self.broker.node_id):
            return None
        limit = self.broker.config.integer("follower.replication.throttled.rate")
        return self.follower_quota.exceeded(limit, now_ms)

    # --- ISR changes -------------------------------------------------------------------

    def shrink_isrs(self, now_ms: int) -> None:
        """Kafka's isr-expiration task: drop followers lagging past replica.lag.time.max.ms."""
        for key, state in list(self.leaders.items()):
            log_ = self.broker.logs.get(*key)
            if log_ is None:
                continue
            change = state.shrink(log_.log_end_offset, now_ms, self.lag_time_ms)
            if change is not None:
                self._send(key, state, change)

    def _send(self, key: TopicPartition, state: LeaderState, change: IsrChange) -> None:
        """Queue an ISR change for the controller. As Kafka's AlterPartitionManager does, one
        AlterPartition is in flight at a time, carrying every change queued meanwhile: the
        controller commits them together instead of queueing one write per partition."""
        log.info("%s-%d: asking to change the ISR from %s to %s", *key, list(state.isr),
                 list(change.isr))
        self.broker.metrics.count_isr_change(len(change.isr) > len(state.isr))
        self._isr_queue[key] = (state, change)
        if self._isr_sender is None or self._isr_sender.done():
            self._isr_sender = asyncio.ensure_future(self._send_isr_changes())

    async def _send_isr_changes(self) -> None:
        """Send the queued changes, still wanted, in one request until none is left; an
        unanswered one again after ISR_RETRY_BACKOFF_S (`LeaderState.answered`)."""
        while self._isr_queue:
            batch, self._isr_queue = self._isr_queue, {}
            metadata = self.broker.metadata.topics
            sent = [(key, state, change) for key, (state, change) in batch.items()
                    if key[0] in metadata and self.leaders.get(key) is state
                    and state.pending is change]
            if not sent:
                continue
            try:
                outcomes = await self.alter_partition(
                    [(metadata[key[0]].topic_id, key[1], change) for key, _, change in sent])
            except Exception:
                log.exception("AlterPartition failed")
                outcomes = [(ErrorCode.unknown_server_error, -1)] * len(sent)
            unanswered = {}
            for (key, state, change), (code, partition_epoch) in zip(sent, outcomes,
                                                                      strict=True):
                if state.pending is change and code != ErrorCode.none:
                    log.info("%s-%d: ISR change not made: %s", *key, ErrorCode(code).name)
                if state.answered(change, code, partition_epoch):
                    unanswered[key] = (state, change)
            if unanswered:
                await asyncio.sleep(ISR_RETRY_BACKOFF_S)
                self._isr_queue = {**unanswered, **self._isr_queue}

    # --- lifecycle ---------------------------------------------------------------------

    def under_replicated(self) -> int:
        return sum(len(s.isr) < len(s.replicas) for s in self.leaders.values())

    def max_lag(self) -> int:
        """The largest lag of a partition this broker follows (Kafka's ReplicaFetcherManager
        MaxLag)."""
        return max((f.lag for fetcher in self.fetchers.values()
                    for f in fetcher.partitions.values()), default=0)

    def under_min_isr(self) -> int:
        """Led partitions under their effective min ISR (Kafka's UnderMinIsrPartitionCount)."""
        return sum(partition_figures(True, len(s.replicas), len(s.isr),
                                     self._min_isr(key, s)).under_min_isr
                   for key, s in list(self.leaders.items()))

    def partition_states(self) -> Iterator[tuple[str, int, bool, int, int, int]]:
        """(topic, partition, led here, replication factor, ISR size, effective min ISR)
        of every hosted partition; a follower's sizes are left at 0, as Kafka reports them."""
        for key, state in list(self.leaders.items()):
            yield (*key, True, len(state.replicas), len(state.isr), self._min_isr(key, state))
        for topic, partition in list(self.followed):
            yield topic, partition, False, 0, 0, 0

    def stop_replicating(self) -> None:
        """Controlled shutdown: follow no partition from now on."""
        self.replicating = False
        for key in list(self.followed):
            self._stop_following(key)
        for fetcher in self.fetchers.values():
            fetcher.stop()

    async def stop(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.stop()
        senders = [self._isr_sender] if self._isr_sender is not None else []
        for sender in senders:
            sender.cancel()  # it may be asking an unreachable controller again
        await asyncio.gather(*(f.stopped() for f in self.fetchers.values()),
                             *senders, return_exceptions=True)
        self.fetchers.clear()
        for key in list(self.leaders):
            self._resign(key)
