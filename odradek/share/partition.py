"""The state of one share-partition (a share group's view of one topic partition) without
IO, after Kafka's SharePartition (core/.../kafka/server/share/SharePartition.java).

The partition leader keeps, for each share group reading the partition, the records it
has fetched and not yet finished with: the share-partition start offset (SPSO, every offset
below it is done), the end offset (the last offset fetched, SPEO) and the in-flight batches
between them, each record AVAILABLE, ACQUIRED by one member under an acquisition lock,
ACKNOWLEDGED or ARCHIVED, with a delivery count.

The API (all times are `now_ms` passed in; nothing here reads a clock or does IO):

- `SharePartition.from_persisted(config, leader_epoch, state_epoch, start_offset, batches)`:
  the partition as ReadShareGroupState returned it. A start offset of -1 (never
  initialized) is first resolved by `initial_start_offset` from `share.auto.offset.reset`.
- `next_fetch_offset()`: where the leader reads its log next; `can_acquire_records()`:
  whether a fetch may acquire anything (the `group.share.partition.max.record.locks` bound).
- `acquire(member_id, fetch_offset, batches, now_ms, max_fetch_records, ...)`: acquire
  records the leader read from `fetch_offset`, given as the (first, last) offsets of its
  record batches; returns the `AcquiredRecords` ranges for ShareFetch. Whole batches are
  acquired; per-offset state appears only where acknowledgements or re-acquisition split
  a batch (and where `mode` is RECORD_LIMIT, whose limit a batch crosses, or where
  throttled redelivery takes part of one). An acquired range may span offsets no fetched
  batch holds (compacted away, control records): the client acknowledges those as GAP.
  With read_committed the leader passes `aborted`, the offset ranges of aborted
  transactional batches (see `aborted_batch_ranges`): they are archived, never delivered.
- `acknowledge(member_id, batches, now_ms)`: ShareAcknowledge (or the acknowledgements
  of a ShareFetch) for one partition; returns an `AckResult`: an error code for the whole
  request (nothing changes on error) or the `StateWrite` to persist.
- `expire_locks(now_ms)` and `next_lock_deadline()`: acquisition locks
  (`share.record.lock.duration.ms`) that ran out return their records to AVAILABLE, or
  ARCHIVED once `group.share.delivery.count.limit` deliveries were made.
- `release_acquired_records(member_id)`: a member left (or closed its share session); its
  records go back as their locks' expiry would send them, delivery counts kept.
- `update_log_start_offset(offset)`: the log's start offset moved (retention, deletion).
- `in_flight()`: the in-flight state, range by range, for describing and for tests;
  `start_offset`, `end_offset`, `delivery_complete_count()` for describing and lag.

Every operation that changes persisted state returns a `StateWrite` (the new start offset
and the changed state batches), which the shell sends as WriteShareGroupState before it
answers the client. The state changes in memory at once: if the write fails, the shell
drops the partition and builds it again from the persister, which forgets unpersisted
acquisitions (their records are delivered again) and nothing acknowledged.
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from kio.schema.errors import ErrorCode

from odradek.share.records import StateBatch, offsets_without

EMPTY_MEMBER_ID = ""
UNINITIALIZED_START_OFFSET = -1
"""The start offset ReadShareGroupState returns for a share-partition never initialized."""


class RecordState(enum.IntEnum):
    """A record's delivery state, numbered as Kafka persists it (RecordState.id)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    """The acknowledgement types of ShareAcknowledge (0 marks a gap: no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
    """KIP-1222: extend the acquisition lock, leaving the record acquired."""


_ACK_TARGET = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


class AcquireMode(enum.IntEnum):
    """ShareFetch's ShareAcquireMode, the consumer's `share.acquire.mode`, numbered as
    Kafka sends it."""

    BATCH_OPTIMIZED = 0
    """MaxRecords is a soft limit: the batch that crosses it is acquired whole."""
    RECORD_LIMIT = 1
    """Never more than MaxRecords: a batch that crosses it is acquired in part."""


MINIMUM_THROTTLE_DELIVERY_LIMIT = 2


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    delivery_count_limit: int = 5
    """group.share.delivery.count.limit (share.delivery.count.limit per group)"""
    max_record_locks: int = 2000
    """group.share.partition.max.record.locks (share.partition.max.record.locks per group)"""
    record_lock_duration_ms: int = 30000
    """group.share.record.lock.duration.ms (share.record.lock.duration.ms per group)"""

    @property
    def throttle_delivery_limit(self) -> int:
        """The delivery count from which records are redelivered in ever smaller parts of
        their batch (Kafka's throttleRecordsDeliveryLimit: half the limit, rounded up)."""
        return max(MINIMUM_THROTTLE_DELIVERY_LIMIT, math.ceil(self.delivery_count_limit / 2))


@dataclass(frozen=True, slots=True)
class StateWrite:
    """What WriteShareGroupState carries for this partition after a change."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """ShareFetchResponse's AcquiredRecords: offsets handed to one member, inclusive."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """ShareAcknowledge's AcknowledgementBatch: one type for the whole range, or one per
    offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AckResult:
    error: ErrorCode
    write: StateWrite | None = None
    """None when nothing persisted changed (an error, a renewal, offsets already done)."""


@dataclass(frozen=True, slots=True)
class InFlightRange:
    """One range of in-flight offsets sharing a state, as `in_flight()` reports it."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str
    lock_deadline_ms: int | None


@dataclass(slots=True)
class _State:
    """InFlightState: the state of a whole batch, or of one offset of a split batch."""

    state: RecordState
    delivery_count: int
    member_id: str = EMPTY_MEMBER_ID
    deadline_ms: int | None = None

    def copy(self) -> _State:
        return _State(self.state, self.delivery_count, self.member_id, self.deadline_ms)

    def settle(self, state: RecordState) -> None:
        """Leave ACQUIRED: no owner, no lock."""
        self.state = state
        self.member_id = EMPTY_MEMBER_ID
        self.deadline_ms = None


@dataclass(slots=True)
class _Batch:
    """InFlightBatch: one state for the whole range until `split` keeps one per offset."""

    first_offset: int
    last_offset: int
    whole: _State | None
    offsets: dict[int, _State] | None = None

    def split(self) -> dict[int, _State]:
        if self.offsets is None:
            assert self.whole is not None
            self.offsets = {o: self.whole.copy()
                            for o in range(self.first_offset, self.last_offset + 1)}
            self.whole = None
        return self.offsets

    def states(self, lo: int, hi: int) -> Iterator[tuple[int, int, _State]]:
        """(first, last, state) of the parts of this batch within [lo, hi]."""
        if self.offsets is None:
            assert self.whole is not None
            first, last = max(lo, self.first_offset), min(hi, self.last_offset)
            if first <= last:
                yield first, last, self.whole
            return
        for offset in range(max(lo, self.first_offset), min(hi, self.last_offset) + 1):
            yield offset, offset, self.offsets[offset]


@dataclass(slots=True)
class _Changes:
    """The states an operation changed: their previous values (to roll back) and their
    ranges (to persist)."""

    undo: list[tuple[_State, _State]] = field(default_factory=list)
    ranges: list[tuple[int, int, _State]] = field(default_factory=list)

    def touch(self, first: int, last: int, state: _State, persist: bool = True) -> _State:
        self.undo.append((state, state.copy()))
        if persist:
            self.ranges.append((first, last, state))
        return state

    def roll_back(self) -> None:
        for state, before in reversed(self.undo):
            state.state, state.delivery_count = before.state, before.delivery_count
            state.member_id, state.deadline_ms = before.member_id, before.deadline_ms


class _AckError(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class SharePartition:
    """One share group's in-flight records of one topic partition."""

    def __init__(self, config: SharePartitionConfig, leader_epoch: int, state_epoch: int,
                 start_offset: int) -> None:
        """An empty share-partition at `start_offset`; `from_persisted` adds state."""
        if start_offset < 0:
            raise ValueError(f"start offset {start_offset} is not resolved")
        self.config = config
        self.leader_epoch = leader_epoch
        self.state_epoch = state_epoch
        self.start_offset = start_offset
        """SPSO: every offset below it is acknowledged or archived."""
        self.end_offset = start_offset
        """SPEO: the last in-flight offset; equal to the start offset when none is."""
        self.lock_timeouts = 0
        """Records whose acquisition lock ran out, for Kafka's AcquisitionLockTimeoutPerSec."""
        self.new_batch_sizes: list[int] = []
        """Records of each batch put in flight (acquired anew, or read from the persisted
        state) since the shell last took them, for Kafka's InFlightBatchMessageCount."""
        self._batches: list[_Batch] = []

    @classmethod
    def from_persisted(cls, config: SharePartitionConfig, leader_epoch: int, state_epoch: int,
                       start_offset: int, batches: Sequence[StateBatch]) -> SharePartition:
        """The partition ReadShareGroupState describes. Offsets between the start offset and
        the last batch that no batch covers were fetched before but never persisted: they are
        in flight again as AVAILABLE with no delivery (Kafka's persister read gap window).
        ACQUIRED is never persisted; if read, it is AVAILABLE (its lock died with the leader).

        Raises ValueError for batches before the start offset, unordered or overlapping, as
        Kafka fails to initialize such a partition."""
        partition = cls(config, leader_epoch, state_epoch, start_offset)
        next_offset = start_offset
        for batch in sorted(batches, key=lambda b: b.first_offset):
            if batch.first_offset < next_offset or batch.last_offset < batch.first_offset:
                raise ValueError(f"invalid state batch {batch} (start offset {start_offset})")
            if batch.first_offset > next_offset:
                partition._append(_Batch(next_offset, batch.first_offset - 1,
                                         _State(RecordState.AVAILABLE, 0)))
            state = RecordState(batch.delivery_state)
            if state == RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            partition._append(_Batch(batch.first_offset, batch.last_offset,
                                     _State(state, batch.delivery_count)))
            partition.new_batch_sizes.append(batch.last_offset - batch.first_offset + 1)
            next_offset = batch.last_offset + 1
        if partition._batches:
            partition.end_offset = partition._batches[-1].last_offset
            partition._advance_start_offset()
        return partition

    # Reading the state.

    def next_fetch_offset(self) -> int:
        """The first AVAILABLE in-flight offset, else the offset after the in-flight ones."""
        for batch in self._batches:
            for first, _last, state in batch.states(self.start_offset, batch.last_offset):
                if state.state == RecordState.AVAILABLE:
                    return first
        return self.end_offset + 1 if self._batches else self.end_offset

    def can_acquire_records(self) -> bool:
        """Whether a fetch can acquire: records to redeliver, or room under the lock limit."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        return self.in_flight_count() < self.config.max_record_locks

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline, for the shell's timer."""
        deadlines = [s.deadline_ms for b in self._batches for _, _, s in b.states(
            b.first_offset, b.last_offset) if s.deadline_ms is not None]
        return min(deadlines, default=None)

    def delivery_complete_count(self) -> int:
        """In-flight offsets (at or past the start offset) acknowledged or archived."""
        return sum(last - first + 1 for b in self._batches
                   for first, last, s in b.states(self.start_offset, b.last_offset)
                   if s.state.terminal)

    def in_flight(self) -> list[InFlightRange]:
        """The in-flight offsets, in order, as ranges of one state each (adjacent offsets
        of one state, count, owner and lock make one range)."""
        ranges: list[InFlightRange] = []
        for batch in self._batches:
            for first, last, s in batch.states(batch.first_offset, batch.last_offset):
                previous = ranges[-1] if ranges else None
                if previous is not None and previous.last_offset + 1 == first and (
                        previous.state, previous.delivery_count, previous.member_id,
                        previous.lock_deadline_ms) == (s.state, s.delivery_count, s.member_id,
                                                       s.deadline_ms):
                    ranges[-1] = replace(previous, last_offset=last)
                else:
                    ranges.append(InFlightRange(first, last, s.state, s.delivery_count,
                                                s.member_id, s.deadline_ms))
        return ranges

    # Acquiring.

    def acquire(self, member_id: str, fetch_offset: int, batches: Sequence[tuple[int, int]],
                now_ms: int, max_fetch_records: int, batch_size: int | None = None,
                aborted: Sequence[tuple[int, int]] = (),
                mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED) -> list[AcquiredRecords]:
        """Acquire for `member_id` what the leader read from `fetch_offset`: its record
        batches as (first offset, last offset), in order. New records are acquired whole
        batch by whole batch up to `max_fetch_records` (in BATCH_OPTIMIZED mode a soft
        limit: the batch that crosses it is taken whole) and the `max_record_locks` in
        flight, in acquired ranges of about `batch_size` records; records fetched before
        are acquired again where AVAILABLE. Records redelivered often are throttled, as in
        Kafka: from `throttle_delivery_limit` deliveries a fetch takes no other batch with
        them and only part of their batch, halved with each further delivery, and a record
        on its last delivery goes alone."""
        if not batches or max_fetch_records <= 0:
            return []
        if batch_size is None:
            batch_size = max_fetch_records
        record_limit = mode == AcquireMode.RECORD_LIMIT
        last_to_acquire, max_records = self._acquire_limits(
            fetch_offset, max_fetch_records, batches[-1][1])
        if max_records <= 0:
            return []
        first_base = batches[0][0]
        self._archive_stale(fetch_offset, first_base)
        base = first_base
        floor = self._floor(base)
        if floor is None:
            # a fetched batch that begins below the start offset: the in-flight batch holding
            # the start offset (a log start moved into it) is where acquiring begins
            base = max(base, self.start_offset)
            floor = self._floor(base)
        if floor is not None and floor.last_offset >= base:
            base = floor.first_offset
        overlapping = [b for b in self._batches if base <= b.first_offset <= last_to_acquire]
        if not overlapping:
            result = self._acquire_new(member_id, batches, first_base, last_to_acquire,
                                       batch_size, max_records, now_ms, record_limit)
        else:
            result = []
            count = 0
            for batch in overlapping:
                if count >= max_records:
                    break
                full = batch.first_offset >= first_base and batch.last_offset <= last_to_acquire
                over_limit = record_limit and (
                    batch.last_offset - batch.first_offset + 1 > max_records - count)
                throttled = self._throttled(batch, first_base, last_to_acquire)
                if throttled and count > 0:
                    max_records = 0
                    break
                if not full or batch.offsets is not None or over_limit or throttled:
                    if batch.offsets is None:
                        assert batch.whole is not None
                        if batch.whole.state != RecordState.AVAILABLE:
                            continue
                        batch.split()
                    acquired = self._acquire_offsets(
                        member_id, first_base, last_to_acquire, batch, result, now_ms,
                        max_records - count if record_limit else None)
                    count += acquired
                    if throttled and acquired > 0:
                        max_records = 0
                        break
                    continue
                assert batch.whole is not None
                if batch.whole.state != RecordState.AVAILABLE:
                    continue
                self._acquire_state(batch.whole, member_id, now_ms)
                result.append(AcquiredRecords(batch.first_offset, batch.last_offset,
                                              batch.whole.delivery_count))
                count += batch.last_offset - batch.first_offset + 1
            last_cached = overlapping[-1].last_offset
            if count < max_records and last_cached < last_to_acquire:
                result += self._acquire_new(member_id, batches, last_cached + 1,
                                            last_to_acquire, batch_size, max_records - count,
                                            now_ms, record_limit)
        if aborted and result:
            result = self._archive_aborted(result, aborted)
        self._advance_start_offset()
        return result

    def _acquire_limits(self, fetch_offset: int, max_fetch_records: int,
                        last_offset: int) -> tuple[int, int]:
        """Kafka's lastOffsetAndMaxRecordsToAcquire: the last offset and the number of
        records a fetch may acquire under the in-flight limit."""
        max_records = min(max_fetch_records,
                          self.config.max_record_locks - self.in_flight_count())
        if max_records <= 0 and fetch_offset <= self.end_offset:
            # At the limit, a fetch may still re-acquire records within the in-flight ones.
            return (min(last_offset, self.end_offset),
                    min(max_fetch_records, self.end_offset - fetch_offset + 1))
        return last_offset, max_records

    def _acquire_new(self, member_id: str, fetched: Sequence[tuple[int, int]], first: int,
                     last: int, batch_size: int, max_records: int, now_ms: int,
                     record_limit: bool = False) -> list[AcquiredRecords]:
        """Kafka's acquireNewBatchRecords: records never in flight, as new batches. With
        `record_limit`, one in-flight batch that still ends on a fetched batch's boundary,
        of which only the first `max_records` are acquired and the rest are AVAILABLE."""
        was_empty = not self._batches
        # Never below the start offset, nor into the in-flight records (a fetched batch that
        # began below a moved log start offset; Kafka checks only the first case).
        first = max(first, self.end_offset if was_empty else self.end_offset + 1)
        if first > last:
            return []
        if max_records < last - first + 1:
            last = _last_offset_of_batch_with(fetched, first + max_records - 1)
        deadline = now_ms + self.config.record_lock_duration_ms
        if record_limit:
            acquired = [AcquiredRecords(first, min(last, first + max_records - 1), 1)]
            batch = _Batch(first, last, _State(RecordState.ACQUIRED, 1, member_id, deadline))
            if acquired[0].last_offset < last:
                offsets = batch.split()
                for offset in range(acquired[0].last_offset + 1, last + 1):
                    offsets[offset] = _State(RecordState.AVAILABLE, 0)
            self._insert(batch)
            self.new_batch_sizes.append(last - first + 1)
        else:
            ranges = []
            current = first
            if last - first + 1 > batch_size:
                for base, _ in fetched:
                    if base > last:
                        break
                    if base - current >= batch_size:
                        ranges.append((current, base - 1))
                        current = base
            ranges.append((current, last))
            for lo, hi in ranges:
                self._insert(_Batch(lo, hi, _State(RecordState.ACQUIRED, 1, member_id,
                                                   deadline)))
                self.new_batch_sizes.append(hi - lo + 1)
            acquired = [AcquiredRecords(lo, hi, 1) for lo, hi in ranges]
        if was_empty:
            self.start_offset = first
        self.end_offset = max(self.end_offset, last)
        return acquired

    def _acquire_offsets(self, member_id: str, first: int, last: int, batch: _Batch,
                         result: list[AcquiredRecords], now_ms: int,
                         limit: int | None = None) -> int:
        """Kafka's acquireSubsetBatchRecords: the AVAILABLE offsets of a split batch within
        [first, last], at most `limit`; consecutive offsets of one delivery count make one
        range. A record on its last delivery goes alone; from `throttle_delivery_limit`
        deliveries, only a part of the batch is taken (see `acquire`)."""
        count = 0
        throttled_to: int | None = None
        max_deliveries = self.config.delivery_count_limit
        throttle_from = self.config.throttle_delivery_limit
        for offset, _, state in batch.states(max(first, self.start_offset), last):
            if state.state != RecordState.AVAILABLE:
                continue
            if max_deliveries > 2 and state.delivery_count == max_deliveries - 1 and count:
                break
            if state.delivery_count >= throttle_from and throttled_to is None:
                throttled_to = max(1, (batch.last_offset - batch.first_offset + 1)
                                   >> (state.delivery_count - throttle_from + 1))
            self._acquire_state(state, member_id, now_ms)
            count += 1
            previous = result[-1] if result else None
            if (previous is not None and previous.last_offset == offset - 1
                    and previous.delivery_count == state.delivery_count):
                result[-1] = AcquiredRecords(previous.first_offset, offset,
                                             state.delivery_count)
            else:
                result.append(AcquiredRecords(offset, offset, state.delivery_count))
            last_delivery = max_deliveries > 2 and state.delivery_count == max_deliveries
            if last_delivery or count in (limit, throttled_to):
                break
        return count

    def _throttled(self, batch: _Batch, first: int, last: int) -> bool:
        """Kafka's shouldThrottleRecordsDelivery: an AVAILABLE record of the batch within
        [first, last] was delivered `throttle_delivery_limit` times or more."""
        counts = [s.delivery_count for _, _, s in batch.states(first, last)
                  if s.state == RecordState.AVAILABLE]
        return max(counts, default=0) >= self.config.throttle_delivery_limit

    def _acquire_state(self, state: _State, member_id: str, now_ms: int) -> None:
        state.state = RecordState.ACQUIRED
        state.delivery_count += 1
        state.member_id = member_id
        state.deadline_ms = now_ms + self.config.record_lock_duration_ms

    def _archive_stale(self, fetch_offset: int, base_offset: int) -> None:
        """Kafka's maybeArchiveStaleBatches: AVAILABLE records between the fetch offset and
        the first batch the log returned are gone (compacted away): archive them."""
        if not self._batches or fetch_offset >= base_offset:
            return
        self._archive(fetch_offset, base_offset - 1, RecordState.AVAILABLE, _Changes())

    def _archive_aborted(self, acquired: list[AcquiredRecords],
                         aborted: Sequence[tuple[int, int]]) -> list[AcquiredRecords]:
        """Kafka's filterAbortedTransactionalAcquiredRecords: archive the acquired records
        of aborted transactions and leave them out of the acquired ranges."""
        for lo, hi in aborted:
            self._archive(lo, hi, RecordState.ACQUIRED, _Changes())
        kept = []
        for records in acquired:
            pieces = [(records.first_offset, records.last_offset)]
            for lo, hi in aborted:
                pieces = [p for first, last in pieces for p in offsets_without(first, last, lo, hi)]
            kept += [AcquiredRecords(first, last, records.delivery_count)
                     for first, last in pieces]
        return kept

    # Acknowledging.

    def acknowledge(self, member_id: str, batches: Sequence[AcknowledgementBatch],
                    now_ms: int) -> AckResult:
        """Settle records `member_id` acquired: ACCEPT acknowledges, RELEASE makes them
        AVAILABLE again (ARCHIVED at the delivery count limit), REJECT and GAP archive,
        RENEW restarts the lock. Errors, for the whole request: INVALID_REQUEST for
        malformed batches or offsets past the in-flight ones, INVALID_RECORD_STATE for
        records not acquired by this member, below the start offset too (records it holds
        there, passed by the log's start offset, are archived)."""
        changes = _Changes()
        try:
            for batch in batches:
                self._acknowledge_batch(member_id, batch, now_ms, changes)
        except _AckError as exc:
            changes.roll_back()
            return AckResult(exc.code)
        return AckResult(ErrorCode.none, self._write(changes))

    def _acknowledge_batch(self, member_id: str, ack: AcknowledgementBatch, now_ms: int,
                           changes: _Changes) -> None:
        types = ack.acknowledge_types
        size = ack.last_offset - ack.first_offset + 1
        if size <= 0 or len(types) not in (1, size) or any(
                t not in AcknowledgeType.__members__.values() for t in types):
            raise _AckError(ErrorCode.invalid_request)
        if ack.first_offset < self.start_offset:
            self._acknowledge_below_start(member_id, ack, now_ms, changes)
            if ack.last_offset < self.start_offset:
                return
        overlapping = self._overlapping_for_ack(ack)
        per_offset = len(types) > 1
        for batch in overlapping:
            if batch.last_offset < self.start_offset:
                continue
            if batch.offsets is None:
                assert batch.whole is not None
                if batch.whole.member_id != member_id:
                    raise _AckError(ErrorCode.invalid_record_state)
            full = batch.first_offset >= ack.first_offset and batch.last_offset <= ack.last_offset
            start_within = batch.first_offset < self.start_offset <= batch.last_offset
            if full and batch.offsets is None and not per_offset and not start_within:
                assert batch.whole is not None
                self._acknowledge_state(batch.first_offset, batch.last_offset, batch.whole,
                                        member_id, types[0], now_ms, changes)
                continue
            if batch.offsets is None:
                assert batch.whole is not None
                if batch.whole.state != RecordState.ACQUIRED:
                    raise _AckError(ErrorCode.invalid_record_state)
                batch.split()
            for offset, _, state in batch.states(max(ack.first_offset, self.start_offset),
                                                 ack.last_offset):
                ack_type = types[offset - ack.first_offset] if per_offset else types[0]
                self._acknowledge_state(offset, offset, state, member_id, ack_type, now_ms,
                                        changes)

    def _acknowledge_below_start(self, member_id: str, ack: AcknowledgementBatch,
                                 now_ms: int, changes: _Changes) -> None:
        """The offsets of `ack` below the start offset are done, or gone from the log. Only
        records the member still holds there (the log's start offset moved past them) may
        be acknowledged: they are archived, as their lock's expiry would do (or renewed).
        Any other offset there is INVALID_RECORD_STATE, whether its batch is still in
        flight or not: it was acknowledged or archived since, maybe by another member after
        a reload from the persisted state forgot this member's acquisition, and a success
        would report it accepted twice. (Kafka skips such offsets while their batch is
        cached, and fails only those no cached batch holds.)"""
        last = min(ack.last_offset, self.start_offset - 1)
        held = 0
        for batch in self._batches:
            whole = batch.whole
            if (whole is not None and batch.first_offset <= last
                    and ack.first_offset <= batch.last_offset):
                if whole.state != RecordState.ACQUIRED or whole.member_id != member_id:
                    raise _AckError(ErrorCode.invalid_record_state)
                batch.split()
            for offset, _, state in batch.states(ack.first_offset, last):
                if state.state != RecordState.ACQUIRED or state.member_id != member_id:
                    raise _AckError(ErrorCode.invalid_record_state)
                types = ack.acknowledge_types
                ack_type = types[offset - ack.first_offset] if len(types) > 1 else types[0]
                changes.touch(offset, offset, state, persist=False)
                if ack_type == AcknowledgeType.RENEW:
                    state.deadline_ms = now_ms + self.config.record_lock_duration_ms
                else:
                    state.settle(RecordState.ARCHIVED)
                held += 1
        if held != last - ack.first_offset + 1:
            raise _AckError(ErrorCode.invalid_record_state)

    def _overlapping_for_ack(self, ack: AcknowledgementBatch) -> list[_Batch]:
        """Kafka's fetchSubMapForAcknowledgementBatch (offsets below the start offset are
        checked before: the start offset's batch is in flight when they are named)."""
        floor = self._floor(max(ack.first_offset, self.start_offset))
        if floor is None:
            raise _AckError(ErrorCode.invalid_record_state)
        overlapping = [b for b in self._batches
                       if floor.first_offset <= b.first_offset <= ack.last_offset]
        if ack.last_offset > overlapping[-1].last_offset:
            raise _AckError(ErrorCode.invalid_request)
        return overlapping

    def _acknowledge_state(self, first: int, last: int, state: _State, member_id: str,
                           ack_type: int, now_ms: int, changes: _Changes) -> None:
        if state.state != RecordState.ACQUIRED or state.member_id != member_id:
            raise _AckError(ErrorCode.invalid_record_state)
        if ack_type == AcknowledgeType.RENEW:
            changes.touch(first, last, state, persist=False)
            state.deadline_ms = now_ms + self.config.record_lock_duration_ms
            return
        target = _ACK_TARGET[AcknowledgeType(ack_type)]
        if (target == RecordState.AVAILABLE
                and state.delivery_count >= self.config.delivery_count_limit):
            target = RecordState.ARCHIVED
        changes.touch(first, last, state).settle(target)

    # Releasing.

    def expire_locks(self, now_ms: int) -> StateWrite | None:
        """Records whose acquisition lock has run out at `now_ms` become AVAILABLE again,
        or ARCHIVED at the delivery count limit or below the start offset."""
        return self._release(lambda s: s.deadline_ms is not None and s.deadline_ms <= now_ms,
                             expired=True)

    def release_acquired_records(self, member_id: str) -> StateWrite | None:
        """A member left: the records it holds become AVAILABLE, or ARCHIVED at the delivery
        count limit, as when their lock runs out. Their delivery count stays as it is, as
        Kafka 4.3 keeps it (DeliveryCountOps.NO_OP): the member may have handed them to its
        application, and a consumer that closes without acknowledging what it last polled
        would otherwise have them delivered again as first deliveries."""
        return self._release(lambda s: s.member_id == member_id, expired=False)

    def _release(self, which: Callable[[_State], bool], expired: bool) -> StateWrite | None:
        changes = _Changes()
        for batch in self._batches:
            whole = batch.whole
            if (whole is not None and whole.state == RecordState.ACQUIRED and which(whole)
                    and batch.first_offset < self.start_offset <= batch.last_offset):
                batch.split()
            for first, last, state in list(batch.states(batch.first_offset, batch.last_offset)):
                if state.state != RecordState.ACQUIRED or not which(state):
                    continue
                changes.touch(first, last, state)
                if expired:
                    self.lock_timeouts += last - first + 1
                if (last < self.start_offset
                        or state.delivery_count >= self.config.delivery_count_limit):
                    state.settle(RecordState.ARCHIVED)
                else:
                    state.settle(RecordState.AVAILABLE)
        return self._write(changes) if changes.ranges else None

    def update_log_start_offset(self, log_start_offset: int) -> None:
        """Kafka's updateCacheAndOffsets: the log no longer holds records below
        `log_start_offset`; AVAILABLE ones are archived and the start offset moves there.
        ACQUIRED ones stay until acknowledged or their lock runs out (then ARCHIVED). The
        new start offset is persisted with the next write, as in Kafka."""
        if log_start_offset <= self.start_offset:
            return
        if self._batches:
            self._archive(self.start_offset, log_start_offset - 1, RecordState.AVAILABLE,
                          _Changes())
        self.start_offset = log_start_offset
        self._advance_start_offset()

    # Shared helpers.

    def _archive(self, lo: int, hi: int, from_state: RecordState, changes: _Changes) -> None:
        for batch in self._batches:
            if batch.first_offset > hi:
                break
            if batch.last_offset < lo:
                continue
            whole = batch.whole
            if whole is not None:
                if whole.state != from_state:
                    continue
                if batch.first_offset < lo or batch.last_offset > hi:
                    batch.split()
            for first, last, state in list(batch.states(lo, hi)):
                if state.state == from_state:
                    changes.touch(first, last, state).settle(RecordState.ARCHIVED)

    def _advance_start_offset(self) -> None:
        """Kafka's maybeUpdateCachedStateAndOffsets: move the start offset to the first
        in-flight record not yet acknowledged or archived (past the last in-flight offset
        when there is none) and drop the batches wholly below it."""
        for batch in self._batches:
            if batch.last_offset < self.start_offset:
                continue
            pending = next((first for first, _, s in batch.states(
                self.start_offset, batch.last_offset) if not s.state.terminal), None)
            if pending is not None:
                self.start_offset = pending
                self._batches = [b for b in self._batches if b.last_offset >= pending]
                return
        if self._batches:
            self.start_offset = max(self.start_offset, self._batches[-1].last_offset + 1)
            self._batches.clear()
        self.end_offset = self.start_offset

    def _write(self, changes: _Changes) -> StateWrite:
        self._advance_start_offset()
        ranges: list[StateBatch] = []
        for first, last, state in sorted(changes.ranges, key=lambda r: r[0]):
            batch = StateBatch(first, last, state.state, state.delivery_count)
            previous = ranges[-1] if ranges else None
            if (previous is not None and previous.last_offset + 1 == first
                    and (previous.delivery_state, previous.delivery_count)
                    == (batch.delivery_state, batch.delivery_count)):
                ranges[-1] = StateBatch(previous.first_offset, last, batch.delivery_state,
                                        batch.delivery_count)
            else:
                ranges.append(batch)
        return StateWrite(self.state_epoch, self.leader_epoch, self.start_offset,
                          self.delivery_complete_count(), tuple(ranges))

    def in_flight_count(self) -> int:
        """Records from the start offset to the end offset, while any is in flight."""
        return self.end_offset - self.start_offset + 1 if self._batches else 0

    def in_flight_batch_count(self) -> int:
        return len(self._batches)

    def take_new_batch_sizes(self) -> list[int]:
        """`new_batch_sizes`, emptied."""
        sizes, self.new_batch_sizes = self.new_batch_sizes, []
        return sizes

    def _floor(self, offset: int) -> _Batch | None:
        index = bisect.bisect_right(self._batches, offset, key=lambda b: b.first_offset)
        return self._batches[index - 1] if index else None

    def _insert(self, batch: _Batch) -> None:
        bisect.insort(self._batches, batch, key=lambda b: b.first_offset)

    def _append(self, batch: _Batch) -> None:
        self._batches.append(batch)


def _last_offset_of_batch_with(batches: Sequence[tuple[int, int]], offset: int) -> int:
    """Kafka's lastOffsetFromBatchWithRequestOffset: the last offset of the fetched batch
    holding `offset` (so a batch is acquired whole), else `offset`."""
    holder = None
    for first, last in batches:
        if offset < first:
            break
        holder = (first, last)
    return holder[1] if holder is not None and offset <= holder[1] else offset


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """What `aborted_batch_ranges` needs of a fetched batch's header (control batches: the
    type of their one control record, which the leader reads from its key)."""

    first_offset: int
    last_offset: int
    producer_id: int = -1
    transactional: bool = False
    abort_marker: bool = False


def aborted_batch_ranges(batches: Sequence[FetchedBatch],
                         aborted_transactions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Kafka's fetchAbortedTransactionRecordBatches: the offset ranges of the fetched
    transactional batches that aborted transactions wrote, given the fetch's aborted
    transactions as (producer id, first offset)."""
    pending = sorted(aborted_transactions, key=lambda t: t[1])
    aborted_producers: set[int] = set()
    ranges = []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        while pending and pending[0][1] <= batch.last_offset:
            aborted_producers.add(pending.pop(0)[0])
        if batch.abort_marker:
            aborted_producers.discard(batch.producer_id)
        elif batch.transactional and batch.producer_id in aborted_producers:
            ranges.append((batch.first_offset, batch.last_offset))
    return ranges


def initial_start_offset(strategy: str, duration_ms: int | None, log_start_offset: int,
                         log_end_offset: int, now_ms: int,
                         offset_for_timestamp: Callable[[int], int | None] | None = None) -> int:
    """The start offset of a share-partition never initialized (Kafka's
    startOffsetDuringInitialization), by `share.auto.offset.reset`'s strategy
    (odradek/config/group.py parses it): the log's end for "latest", its start for
    "earliest", and for "by_duration" the first offset at or after `now_ms` less the
    duration (`offset_for_timestamp`, as ListOffsets finds it; the log's end when none is)."""
    if strategy == "latest":
        return log_end_offset
    if strategy == "earliest":
        return log_start_offset
    found = (offset_for_timestamp(now_ms - (duration_ms or 0)) if offset_for_timestamp
             else None)
    return log_end_offset if found is None else found
