"""The share coordinator of one `__share_group_state` partition as a state machine without
IO, after Kafka's ShareCoordinatorShard (share-coordinator/.../ShareCoordinatorShard.java).

It keeps the persisted state of share-partitions (a share group's view of one topic
partition: start offset, state batches, state and leader epochs) for the share-partition
leaders, which call InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary. Each handler serves one share-partition
(the shell splits requests by key, as Kafka's ShareCoordinatorService does) and returns its
result with an `Output`: the records to append before the result may be sent. Durable state
changes only in `replay`, which handlers call on the records they emit and loading calls on
the records it reads, so serving and loading take one path.

A write becomes a ShareUpdate record holding the changed batches, or, once
`share.coordinator.snapshot.update.records.per.snapshot` updates followed the last snapshot,
a ShareSnapshot record with the whole merged state. Records below the oldest of the
share-partitions' last snapshots are redundant (`last_redundant_offset`, Kafka's
ShareCoordinatorOffsetsManager): the runtime deletes them. Leader epochs fence deposed partition
leaders (FENCED_LEADER_EPOCH), state epochs fence writers of a state that was initialized
again since (FENCED_STATE_EPOCH); a read by a newer leader records its epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from odradek.group.partitioning import partition_for
from odradek.share.records import (
    SharePartitionKey,
    ShareRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
    offsets_without,
)

UNINITIALIZED = -1
"""Kafka's -1 for a start offset, epoch or count a request leaves unset."""
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
NEGATIVE_PARTITION = "The partition id cannot be a negative number."
UNKNOWN_PARTITION = "Topic/TopicPartition not found in metadata image."


def coordinator_partition(key: SharePartitionKey, num_partitions: int) -> int:
    """The `__share_group_state` partition of a share-partition: Kafka hashes
    "groupId:topicId:partition" as it hashes a group id over the topic's partitions."""
    return partition_for(key.coordinator_key, num_partitions)


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    snapshot_update_records_per_snapshot: int = 500
    """share.coordinator.snapshot.update.records.per.snapshot"""
    cold_partition_snapshot_interval_ms: int = 300000
    """share.coordinator.cold.partition.snapshot.interval.ms"""


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """A share-partition's persisted state, as Kafka's ShareGroupOffset."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]
    create_timestamp: int
    write_timestamp: int


@dataclass(slots=True)
class Output:
    """Records to append before a handler's result goes out (the runtime's Output)."""

    records: list[ShareRecord] = field(default_factory=list)
    responses: list[tuple[object, object]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Result:
    """Initialize, Write and Delete: the partition's error."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    state_epoch: int = 0
    start_offset: int = UNINITIALIZED
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class SummaryResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = UNINITIALIZED
    delivery_complete_count: int = UNINITIALIZED


class ShareCoordinatorShard:
    """The share-partition states of one `__share_group_state` partition."""

    def __init__(self, config: ShareCoordinatorConfig,
                 partition_count: Callable[[str], int | None],
                 next_offset: Callable[[], int] = lambda: UNINITIALIZED) -> None:
        """`partition_count(topic_id)`: the topic's partition count in the metadata image,
        None when there is no such topic (requests about it get UNKNOWN_TOPIC_OR_PARTITION).
        `next_offset()`: the offset the next record appended to the partition gets (-1:
        unknown, and the record's offset not counted)."""
        self.config = config
        self.partition_count = partition_count
        self.next_offset = next_offset
        self.redundant = RedundantOffsets()
        self.states: dict[SharePartitionKey, ShareGroupOffset] = {}
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self._update_counts: dict[SharePartitionKey, int] = {}
        """ShareUpdate records replayed since the last snapshot, per share-partition."""

    # Replay: the only place durable state changes.

    def replay(self, record: ShareRecord, offset: int = UNINITIALIZED) -> None:
        """Apply a record; `offset`, its offset in the partition (-1: unknown)."""
        key, value = record
        k = key.key
        if isinstance(key, ShareSnapshotKey):
            if offset >= 0:
                self.redundant.snapshot(k, offset, deleted=value is None)
            if value is None:
                for table in (self.states, self._leader_epochs, self._state_epochs,
                              self._update_counts):
                    table.pop(k, None)
                return
            assert isinstance(value, ShareSnapshotValue)
            self._raise_epoch(self._leader_epochs, k, value.leader_epoch)
            self._raise_epoch(self._state_epochs, k, value.state_epoch)
            self.states[k] = ShareGroupOffset(
                value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset,
                value.delivery_complete_count, value.state_batches, value.create_timestamp,
                value.write_timestamp)
            if self._update_counts.get(k, 0) >= self.config.snapshot_update_records_per_snapshot:
                self._update_counts[k] = 0
            return
        assert isinstance(value, ShareUpdateValue)
        self._raise_epoch(self._leader_epochs, k, value.leader_epoch)
        current = self.states.get(k)
        if current is None:
            self.states[k] = ShareGroupOffset(value.snapshot_epoch, 0, value.leader_epoch,
                                              value.start_offset, value.delivery_complete_count,
                                              value.state_batches, 0, 0)
        else:
            start = current.start_offset if value.start_offset == -1 else value.start_offset
            self.states[k] = ShareGroupOffset(
                current.snapshot_epoch, current.state_epoch,
                current.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
                start, value.delivery_complete_count,
                combine_state_batches(current.state_batches, value.state_batches, start),
                current.create_timestamp, current.write_timestamp)
        self._update_counts[k] = self._update_counts.get(k, 0) + 1

    @staticmethod
    def _raise_epoch(table: dict[SharePartitionKey, int], key: SharePartitionKey,
                     epoch: int) -> None:
        if epoch > table.get(key, epoch - 1):
            table[key] = epoch

    def _emit(self, records: list[ShareRecord]) -> Output:
        """Apply the records a handler emits, appended right after at `next_offset()`."""
        base = self.next_offset()
        for index, record in enumerate(records):
            self.replay(record, UNINITIALIZED if base < 0 else base + index)
        return Output(records)

    # The handlers.

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int,
                    start_offset: int, delivery_complete_count: int,
                    batches: Sequence[StateBatch], now_ms: int) -> tuple[Result, Output]:
        """WriteShareGroupState for one share-partition."""
        error = self._invalid(key)
        if error is None and key not in self.states:
            error = Result(ErrorCode.invalid_request, WRITE_UNINITIALIZED)
        error = error or self._fenced(self._leader_epochs, key, leader_epoch,
                                      ErrorCode.fenced_leader_epoch)
        error = error or self._fenced(self._state_epochs, key, state_epoch,
                                      ErrorCode.fenced_state_epoch)
        error = error or self._unknown(key)
        if error is not None:
            return error, Output()
        record = self._state_record(key, leader_epoch=None, start_offset=start_offset,
                                    delivery_complete_count=delivery_complete_count,
                                    batches=tuple(batches), now_ms=now_ms)
        return Result(), self._emit([record])

    def read_state(self, key: SharePartitionKey, leader_epoch: int,
                   now_ms: int) -> tuple[ReadResult, Output]:
        """ReadShareGroupState for one share-partition (Kafka's
        readStateAndMaybeUpdateLeaderEpoch): a newer leader's read records its epoch."""
        error = self._invalid(key)
        if error is None and key not in self.states:
            error = Result(ErrorCode.invalid_request, READ_UNINITIALIZED)
        error = error or self._fenced(self._leader_epochs, key, leader_epoch,
                                      ErrorCode.fenced_leader_epoch)
        error = error or self._unknown(key)
        if error is not None:
            return ReadResult(error.error, error.message), Output()
        state = self.states[key]
        result = ReadResult(state_epoch=state.state_epoch, start_offset=state.start_offset,
                            state_batches=state.state_batches)
        if leader_epoch == -1 or self._leader_epochs.get(key) == leader_epoch:
            return result, Output()
        record = self._state_record(key, leader_epoch=leader_epoch,
                                    start_offset=state.start_offset,
                                    delivery_complete_count=state.delivery_complete_count,
                                    batches=(), now_ms=now_ms)
        return result, self._emit([record])

    def read_state_summary(self, key: SharePartitionKey) -> tuple[SummaryResult, Output]:
        """ReadShareGroupStateSummary for one share-partition: no state reads as start
        offset -1."""
        error = self._invalid(key) or self._unknown(key)
        if error is not None:
            return SummaryResult(error.error, error.message), Output()
        state = self.states.get(key)
        if state is None:
            return SummaryResult(), Output()
        return SummaryResult(state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                             start_offset=state.start_offset,
                             delivery_complete_count=state.delivery_complete_count), Output()

    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int,
                         now_ms: int) -> tuple[Result, Output]:
        """InitializeShareGroupState: a new state (epoch and start offset, no batches)
        replaces any earlier one."""
        error = self._invalid(key)
        error = error or self._fenced(self._state_epochs, key, state_epoch,
                                      ErrorCode.fenced_state_epoch)
        error = error or self._unknown(key)
        if error is not None:
            return error, Output()
        current = self.states.get(key)
        value = ShareSnapshotValue(
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            state_epoch=state_epoch, leader_epoch=0, start_offset=start_offset,
            create_timestamp=now_ms, write_timestamp=now_ms, state_batches=(),
            delivery_complete_count=-1 if start_offset == -1 else 0)
        return Result(), self._emit([(ShareSnapshotKey(key), value)])

    def delete_state(self, key: SharePartitionKey) -> tuple[Result, Output]:
        """DeleteShareGroupState: a tombstone; deleting no state succeeds."""
        error = self._invalid(key) or self._unknown(key)
        if error is not None:
            return error, Output()
        if key not in self.states:
            return Result(), Output()
        return Result(), self._emit([(ShareSnapshotKey(key), None)])

    def snapshot_cold_partitions(self, now_ms: int) -> Output:
        """Kafka's snapshotColdPartitions: a new snapshot of the same state for every
        share-partition whose last snapshot is `cold_partition_snapshot_interval_ms` old, so
        that one not written to does not hold pruning back; nothing once every one has had
        such a snapshot (its create and write timestamps differ) and none was made since."""
        states = self.states.values()
        if all(state.create_timestamp != state.write_timestamp for state in states):
            return Output()
        interval = self.config.cold_partition_snapshot_interval_ms
        return self._emit([
            (ShareSnapshotKey(key), ShareSnapshotValue(
                snapshot_epoch=state.snapshot_epoch + 1, state_epoch=state.state_epoch,
                leader_epoch=state.leader_epoch, start_offset=state.start_offset,
                create_timestamp=state.create_timestamp, write_timestamp=now_ms,
                state_batches=state.state_batches,
                delivery_complete_count=state.delivery_complete_count))
            for key, state in self.states.items()
            if now_ms - state.write_timestamp >= interval])

    def last_redundant_offset(self) -> int | None:
        """Kafka's lastRedundantOffset: the records below it are needed by no
        share-partition; None while there is nothing to delete."""
        return self.redundant.last

    # The runtime's timer interface: the shard has no timers of its own.

    def next_deadline(self) -> int | None:
        return None

    def tick(self, now_ms: int) -> Output:
        return Output()

    # Helpers.

    def _state_record(self, key: SharePartitionKey, leader_epoch: int | None,
                      start_offset: int, delivery_complete_count: int,
                      batches: tuple[StateBatch, ...], now_ms: int) -> ShareRecord:
        """Kafka's generateShareStateRecord: an update, or a snapshot of the merged state
        once enough updates followed the last one. `leader_epoch` (a read's) replaces the
        recorded one; a write keeps it."""
        current = self.states[key]
        epoch = current.leader_epoch if leader_epoch is None else leader_epoch
        if self._update_counts.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            return ShareSnapshotKey(key), ShareSnapshotValue(
                snapshot_epoch=current.snapshot_epoch + 1, state_epoch=current.state_epoch,
                leader_epoch=epoch, start_offset=start, create_timestamp=now_ms,
                write_timestamp=now_ms,
                state_batches=combine_state_batches(current.state_batches, batches, start),
                delivery_complete_count=delivery_complete_count)
        return ShareUpdateKey(key), ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch, leader_epoch=epoch, start_offset=start_offset,
            state_batches=combine_state_batches((), batches, -1),
            delivery_complete_count=delivery_complete_count)

    @staticmethod
    def _fenced(recorded: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int,
                code: ErrorCode) -> Result | None:
        """A request's epoch (-1: unset) below the one recorded for the key."""
        if epoch != -1 and recorded.get(key, epoch) > epoch:
            return Result(code, f"{code.name.upper()}: epoch {epoch} < {recorded[key]}")
        return None

    @staticmethod
    def _invalid(key: SharePartitionKey) -> Result | None:
        if key.partition < 0:
            return Result(ErrorCode.invalid_request, NEGATIVE_PARTITION)
        return None

    def _unknown(self, key: SharePartitionKey) -> Result | None:
        count = self.partition_count(key.topic_id)
        if count is None or key.partition >= count:
            return Result(ErrorCode.unknown_topic_or_partition, UNKNOWN_PARTITION)
        return None


class RedundantOffsets:
    """Kafka's ShareCoordinatorOffsetsManager: the offset of each share-partition's last
    snapshot (or tombstone), and the smallest of them, below which every record was
    overridden by a later one. A deleted share-partition counts once, at its tombstone, and
    is then forgotten: nothing after it depends on its records."""

    def __init__(self) -> None:
        self.offsets: dict[SharePartitionKey, int] = {}
        self._last: int | None = None

    def snapshot(self, key: SharePartitionKey, offset: int, deleted: bool) -> None:
        self.offsets[key] = offset
        self._last = min(self.offsets.values())
        if deleted:
            del self.offsets[key]

    @property
    def last(self) -> int | None:
        return self._last if self._last else None


def combine_state_batches(current: Sequence[StateBatch], new: Sequence[StateBatch],
                          start_offset: int) -> tuple[StateBatch, ...]:
    """Kafka's PersisterStateBatchCombiner: `new` laid over `current`, cut below the start
    offset (-1: no cut), sorted, adjacent batches of one state and count merged. Where
    batches overlap the newer one holds (Kafka keeps the one of higher delivery count,
    then state, which is the newer one for every write a share-partition makes)."""
    pieces: list[StateBatch] = []
    for batch in current:
        parts = [(batch.first_offset, batch.last_offset)]
        for over in new:
            parts = [p for lo, hi in parts
                     for p in offsets_without(lo, hi, over.first_offset, over.last_offset)]
        pieces += [StateBatch(lo, hi, batch.delivery_state, batch.delivery_count)
                   for lo, hi in parts]
    pieces += new
    if start_offset != -1:
        pieces = [StateBatch(max(b.first_offset, start_offset), b.last_offset, b.delivery_state,
                             b.delivery_count) for b in pieces if b.last_offset >= start_offset]
    merged: list[StateBatch] = []
    for batch in sorted(pieces, key=lambda b: (b.first_offset, b.last_offset)):
        last = merged[-1] if merged else None
        if (last is not None and last.last_offset + 1 >= batch.first_offset
                and (last.delivery_state, last.delivery_count)
                == (batch.delivery_state, batch.delivery_count)):
            merged[-1] = StateBatch(last.first_offset, max(last.last_offset, batch.last_offset),
                                    last.delivery_state, last.delivery_count)
        else:
            merged.append(batch)
    return tuple(merged)

