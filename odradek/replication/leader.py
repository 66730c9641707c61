"""A partition leader's view of its replicas (Kafka's Partition and Replica, leader side),
without IO: follower progress from their fetches, the high watermark, and the ISR changes to
ask the controller for.

The high watermark is the smallest log end offset over the "maximal" ISR: the committed ISR
plus a follower being added (Kafka's PendingExpandIsr), so an acknowledged write is on every
replica a future leader can come from. It never decreases. A follower's log end offset is
unknown (-1) until its first fetch in this leader epoch, which holds the high watermark back.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

UNKNOWN_OFFSET = -1
WAIT_FOR_METADATA = frozenset({ErrorCode.fenced_leader_epoch, ErrorCode.invalid_update_version,
                               ErrorCode.unknown_topic_or_partition, ErrorCode.invalid_request,
                               ErrorCode.new_leader_elected})
"""AlterPartition refusals after which the metadata, not a new request, tells the outcome
(Kafka's handleAlterPartitionError); no answer, or any other error, says nothing of the
change, which the controller may have committed, so it is sent again."""
NOT_APPLIED = frozenset({ErrorCode.ineligible_replica, ErrorCode.operation_not_attempted})
"""AlterPartition refusals that say the change was not applied, by this controller or any
other (Kafka's handleAlterPartitionError)."""
T = TypeVar("T")


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """Kafka's Partition.effectiveMinIsr: min.insync.replicas capped at the replication
    factor, so a partition of one replica takes acks=all writes whatever the setting says."""
    return min(min_insync_replicas, replication_factor)


@dataclass(slots=True)
class FollowerState:
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    """The last time the follower had fetched everything the leader had (its lag start)."""
    last_fetch_ms: int = 0
    last_fetch_leader_end: int = UNKNOWN_OFFSET
    log_start_offset: int = 0
    """As the follower last reported it in a fetch (KIP-392's selection needs it)."""


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An AlterPartition to send: the leader's epochs and the ISR it wants."""

    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(slots=True)
class LeaderState:
    node_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    epoch_start_offset: int
    """The log end offset when this leader epoch began: a follower is in sync only past it."""
    high_watermark: int
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending: IsrChange | None = None
    """The ISR change in flight, until the controller's answer or metadata settles it."""

    @classmethod
    def start(cls, node_id: int, replicas: Sequence[int], isr: Sequence[int],
              leader_epoch: int, partition_epoch: int, log_end_offset: int,
              high_watermark: int, now_ms: int) -> LeaderState:
        """A new leader epoch: every follower's offset is unknown until it fetches; those in
        the ISR count as caught up now (Kafka's resetReplicaState)."""
        followers = {
            r: FollowerState(last_caught_up_ms=now_ms if r in isr else 0)
            for r in replicas if r != node_id
        }
        return cls(node_id, tuple(replicas), tuple(isr), leader_epoch, partition_epoch,
                   log_end_offset, high_watermark, followers)

    def update(self, replicas: Sequence[int], isr: Sequence[int], partition_epoch: int) -> None:
        """Metadata changed the partition within this leader epoch (ISR or replicas)."""
        self.replicas, self.isr, self.partition_epoch = tuple(replicas), tuple(isr), partition_epoch
        self.pending = None
        for replica in self.replicas:
            if replica != self.node_id and replica not in self.followers:
                self.followers[replica] = FollowerState(last_caught_up_ms=0)
        for replica in list(self.followers):
            if replica not in self.replicas:
                del self.followers[replica]

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is not None and len(self.pending.isr) > len(self.isr):
            return self.pending.isr
        return self.isr

    def record_fetch(self, replica: int, fetch_offset: int, leader_end: int,
                     now_ms: int, log_start_offset: int = 0) -> None:
        """A follower fetched from `fetch_offset`: its log ends there (Kafka's
        updateFetchStateOrThrow, with its caught-up time rule)."""
        state = self.followers.get(replica)
        if state is None:
            return
        if fetch_offset >= leader_end:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_end:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.log_start_offset = log_start_offset
        state.last_fetch_leader_end = leader_end
        state.last_fetch_ms = now_ms

    def advance_high_watermark(self, leader_end: int) -> bool:
        """Move the high watermark up to the smallest log end offset of the maximal ISR;
        whether it moved."""
        candidate = leader_end
        for replica in self.maximal_isr:
            if replica != self.node_id:
                state = self.followers.get(replica)
                candidate = min(candidate, state.log_end_offset if state else UNKNOWN_OFFSET)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def expansion(self, replica: int, eligible: bool) -> IsrChange | None:
        """The ISR with `replica` added, when it has caught up with the high watermark and
        this epoch's start (Kafka's isFollowerInSync) and no change is in flight."""
        state = self.followers.get(replica)
        if (self.pending is not None or state is None or not eligible
                or replica in self.isr
                or state.log_end_offset < max(self.high_watermark, self.epoch_start_offset)):
            return None
        return self._propose((*self.isr, replica))

    def shrink(self, leader_end: int, now_ms: int, lag_time_ms: int) -> IsrChange | None:
        """The ISR without followers that have not caught up for `lag_time_ms` (Kafka's
        getOutOfSyncReplicas), unless a change is in flight."""
        if self.pending is not None:
            return None
        lagging = {
            r for r in self.isr
            if r != self.node_id and not self._caught_up(r, leader_end, now_ms, lag_time_ms)
        }
        if not lagging:
            return None
        return self._propose(tuple(r for r in self.isr if r not in lagging))

    def _caught_up(self, replica: int, leader_end: int, now_ms: int, lag_time_ms: int) -> bool:
        state = self.followers.get(replica)
        return state is not None and (state.log_end_offset == leader_end
                                      or now_ms - state.last_caught_up_ms <= lag_time_ms)

    def _propose(self, isr: tuple[int, ...]) -> IsrChange:
        self.pending = IsrChange(self.leader_epoch, self.partition_epoch, isr)
        return self.pending

    def answered(self, change: IsrChange, code: ErrorCode, partition_epoch: int) -> bool:
        """AlterPartition's answer to `change` (the partition epoch after it); whether to
        send it again. A change stays in flight, its new members in the maximal ISR, until
        its outcome is known, as in Kafka's Partition: refused as NOT_APPLIED, or accepted
        with nothing to commit, the leader goes back to the committed ISR and proposes again
        when due; refused as WAIT_FOR_METADATA, it waits for the metadata; unanswered, or
        refused otherwise, it is sent again.
        Dropping an unanswered expansion let a leader cut off from the controller acknowledge
        writes on its smaller ISR while the controller had committed the larger one, whose
        new member then became leader without them (the fault campaign's lost writes)."""
        if self.pending is not change:
            return False
        if code == ErrorCode.none or code in NOT_APPLIED:
            if code in NOT_APPLIED or partition_epoch <= self.partition_epoch:
                self.pending = None
            return False
        return code not in WAIT_FOR_METADATA


class OffsetPurgatory(Generic[T]):
    """Items waiting for the high watermark to reach an offset (acks=all produce)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, T]] = []
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, offset: int, item: T) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, (offset, self._sequence, item))

    def reached(self, high_watermark: int) -> list[T]:
        """Remove and return every item whose offset is at or below `high_watermark`."""
        done = []
        while self._heap and self._heap[0][0] <= high_watermark:
            done.append(heapq.heappop(self._heap)[2])
        return done

    def drain(self) -> list[T]:
        items = [entry[2] for entry in self._heap]
        self._heap = []
        return items
