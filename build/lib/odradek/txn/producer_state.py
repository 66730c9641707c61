"""Per-partition producer state: what idempotent and transactional producers have appended.

Kafka's ProducerStateManager and ProducerAppendInfo, without IO. For every producer id the
state keeps its epoch, the metadata of its last five batches (to answer a retried batch with
its original offsets), the coordinator epoch of its last transaction marker and the first
offset of its ongoing transaction, if any. The ongoing transactions give the partition's
first unstable offset, from which the last stable offset follows.

The leader `check`s a client's batch before appending it; every replica `record`s every
appended batch carrying a producer id (leader, follower and recovery alike).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import crc32c
from kio.schema.errors import ErrorCode

from odradek.protocol.records import BatchInfo

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1
RETAINED_BATCHES = 5
"""Batches remembered per producer for deduplication (the client's max.in.flight bound)."""


class ProducerStateError(Exception):
    """A batch the partition must refuse; `error_code` goes into the produce response."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class CorruptSnapshotError(ValueError):
    """A producer snapshot whose CRC, version or length is wrong."""


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: list[BatchMetadata] = field(default_factory=list)
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def duplicate_of(self, info: BatchInfo) -> BatchMetadata | None:
        if info.producer_epoch != self.epoch:
            return None
        last_seq = last_sequence(info)
        for batch in self.batches:
            if batch.first_seq == info.base_sequence and batch.last_seq == last_seq:
                return batch
        return None

    def _use_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended in this partition, with the last stable offset after it."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool
    last_stable_offset: int


def last_sequence(info: BatchInfo) -> int:
    """The batch's last sequence number; sequences wrap from INT32_MAX to 0."""
    if info.base_sequence > INT32_MAX - info.last_offset_delta:
        return info.last_offset_delta - (INT32_MAX - info.base_sequence) - 1
    return info.base_sequence + info.last_offset_delta


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def _check_epoch(entry: ProducerEntry, producer_epoch: int) -> None:
    if producer_epoch < entry.epoch:
        raise ProducerStateError(
            ErrorCode.invalid_producer_epoch,
            f"epoch {producer_epoch} of producer {entry.producer_id} is smaller than "
            f"the last seen epoch {entry.epoch}",
        )


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}
        """Producer id -> first offset of its ongoing transaction."""
        self._guards: dict[int, object] = {}
        """Producer id -> the guard of a KIP-890 verification in flight for it."""

    # -- the leader's checks ----------------------------------------------------------------

    def check(self, info: BatchInfo) -> BatchMetadata | None:
        """Validate a client's batch before it is appended (Kafka's AppendOrigin.CLIENT).

        Returns the metadata of the original when the batch is a retry of one of the last
        five; raises ProducerStateError for a fenced epoch, a sequence gap, or a plain write
        from a producer in the middle of a transaction.
        """
        entry = self.producers.get(info.producer_id)
        if entry is None:
            return None
        duplicate = entry.duplicate_of(info)
        if duplicate is not None:
            return duplicate
        _check_epoch(entry, info.producer_epoch)
        if info.producer_epoch != entry.epoch:
            if info.base_sequence != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise ProducerStateError(
                    ErrorCode.out_of_order_sequence_number,
                    f"invalid sequence number {info.base_sequence} for the new epoch "
                    f"{info.producer_epoch} of producer {info.producer_id} (expected 0)",
                )
        elif entry.batches and not _in_sequence(entry.last_seq, info.base_sequence):
            raise ProducerStateError(
                ErrorCode.out_of_order_sequence_number,
                f"out of order sequence number for producer {info.producer_id}: "
                f"{info.base_sequence} (incoming seq), {entry.last_seq} (current end seq)",
            )
        if entry.current_txn_first_offset is not None and not info.is_transactional:
            raise ProducerStateError(
                ErrorCode.invalid_txn_state,
                f"expected a transactional write from producer {info.producer_id}, which has "
                f"an ongoing transaction",
            )
        return None

    def check_coordinator_write(self, producer_id: int, producer_epoch: int) -> None:
        """Validate a coordinator's own transactional batch (Kafka's AppendOrigin.COORDINATOR,
        as TxnOffsetCommit writes): its epoch is checked, there are no sequences. A write
        from an epoch older than the last seen, such as one delayed past its transaction's
        abort by a newer epoch, raises ProducerStateError."""
        entry = self.producers.get(producer_id)
        if entry is not None:
            _check_epoch(entry, producer_epoch)

    def check_marker(self, producer_id: int, producer_epoch: int,
                     coordinator_epoch: int) -> None:
        """Validate a transaction marker the coordinator asks to write (WriteTxnMarkers)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.invalid_producer_epoch,
                f"marker epoch {producer_epoch} of producer {producer_id} is smaller than "
                f"the last seen epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise ProducerStateError(
                ErrorCode.transaction_coordinator_fenced,
                f"coordinator epoch {coordinator_epoch} of a marker for producer "
                f"{producer_id} is smaller than the last seen {entry.coordinator_epoch}",
            )

    def in_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Whether the producer has an ongoing transaction here (begun by that epoch, when
        one is given)."""
        if producer_id not in self._ongoing:
            return False
        return producer_epoch is None or self.producers[producer_id].epoch == producer_epoch

    def start_verification(self, producer_id: int) -> object:
        """A guard for a transaction verification about to be asked for (KIP-890): any
        batch or marker of the producer appended meanwhile invalidates it. Verifications in
        flight together share one guard, as Kafka's verification state entry is shared."""
        return self._guards.setdefault(producer_id, object())

    def still_verified(self, producer_id: int, guard: object) -> bool:
        return self._guards.get(producer_id) is guard

    # -- every replica ----------------------------------------------------------------------

    def record(self, info: BatchInfo, marker: tuple[bool, int] | None = None
               ) -> CompletedTxn | None:
        """Apply an appended batch with a producer id; `marker` is (commit, coordinator
        epoch) for a control batch. Returns the transaction a marker completed, if any."""
        self._guards.pop(info.producer_id, None)
        entry = self.producers.get(info.producer_id)
        if entry is None:
            entry = self.producers[info.producer_id] = ProducerEntry(info.producer_id)
        if marker is not None:
            return self._end_transaction(entry, info, *marker)
        entry._use_epoch(info.producer_epoch)
        entry.batches.append(BatchMetadata(info.base_sequence, last_sequence(info),
                                           info.base_offset, info.last_offset,
                                           info.max_timestamp))
        del entry.batches[:-RETAINED_BATCHES]
        entry.last_timestamp = info.max_timestamp
        if info.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = info.base_offset
            self._ongoing[info.producer_id] = info.base_offset
        return None

    def _end_transaction(self, entry: ProducerEntry, info: BatchInfo, commit: bool,
                         coordinator_epoch: int) -> CompletedTxn | None:
        first = entry.current_txn_first_offset
        entry._use_epoch(info.producer_epoch)
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = info.max_timestamp
        self._ongoing.pop(info.producer_id, None)
        if first is None:
            return None
        unstable = self.first_unstable_offset()
        return CompletedTxn(info.producer_id, first, info.base_offset, not commit,
                            info.base_offset + 1 if unstable is None else unstable)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction."""
        return min(self._ongoing.values(), default=None)

    def ongoing(self) -> dict[int, int]:
        """Producer id -> first offset of each ongoing transaction."""
        return dict(self._ongoing)

    # -- retention and expiry ---------------------------------------------------------------

    def forget_before(self, log_start_offset: int) -> None:
        """Forget producers whose every batch lies below the log start offset (retention or
        DeleteRecords removed them): their next batch is accepted at any sequence."""
        for producer_id, entry in list(self.producers.items()):
            if entry.current_txn_first_offset is None and entry.last_offset < log_start_offset:
                del self.producers[producer_id]

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for longer than producer.id.expiration.ms; returns how many."""
        expired = [
            producer_id for producer_id, entry in self.producers.items()
            if entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """Kafka's producer snapshot format (version 1): the last batch of each producer."""
        body = bytearray(_COUNT.pack(len(self.producers)))
        for entry in self.producers.values():
            last = entry.batches[-1] if entry.batches else None
            body += _ENTRY.pack(
                entry.producer_id, entry.epoch,
                NO_SEQUENCE if last is None else last.last_seq,
                -1 if last is None else last.last_offset,
                0 if last is None else last.last_offset - last.first_offset,
                entry.last_timestamp, entry.coordinator_epoch,
                -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
            )
        return _VERSION.pack(SNAPSHOT_VERSION) + _CRC.pack(crc32c.crc32c(body)) + bytes(body)

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        if len(data) < _HEADER_SIZE:
            raise CorruptSnapshotError(f"a producer snapshot of {len(data)} bytes")
        (version,) = _VERSION.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"producer snapshot version {version}")
        (crc,) = _CRC.unpack_from(data, _VERSION.size)
        body = memoryview(data)[_VERSION.size + _CRC.size:]
        if crc32c.crc32c(body) != crc:
            raise CorruptSnapshotError("producer snapshot CRC mismatch")
        (count,) = _COUNT.unpack_from(body, 0)
        if len(body) != _COUNT.size + count * _ENTRY.size:
            raise CorruptSnapshotError(f"producer snapshot of {len(body)} bytes for {count} "
                                       "entries")
        state = cls()
        for i in range(count):
            (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp,
             coordinator_epoch, txn_first) = _ENTRY.unpack_from(body, _COUNT.size + i * _ENTRY.size)
            entry = ProducerEntry(producer_id, epoch, coordinator_epoch=coordinator_epoch,
                                  last_timestamp=timestamp)
            if last_offset >= 0:
                first_seq = (last_seq - offset_delta if last_seq >= offset_delta
                             else INT32_MAX - (offset_delta - last_seq) + 1)
                entry.batches.append(BatchMetadata(first_seq, last_seq,
                                                   last_offset - offset_delta, last_offset,
                                                   timestamp))
            if txn_first >= 0:
                entry.current_txn_first_offset = txn_first
                state._ongoing[producer_id] = txn_first
            state.producers[producer_id] = entry
        return state


SNAPSHOT_VERSION = 1
_VERSION = struct.Struct(">h")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_HEADER_SIZE = _VERSION.size + _CRC.size + _COUNT.size
