"""The retention rule of log compaction (Kafka's Cleaner), with no IO: the caller reads the
segments, passes whole batches in offset order and writes back what it is given. Which log
to clean, over which range and into which segments is `cleaning_plan`'s.

One cleaning round, as in Kafka's `Cleaner.doClean`, once `cleaning_plan` has picked the
log (`filthiest`) and its dirty range (`log_to_clean`):

1. `build_offset_map` maps each key in the dirty range to its last offset, stopping when
   the map is full; the round then cleans up to `offset_map.latest_offset + 1` (the next
   checkpoint), and the next round carries on from there.
2. One `Cleaning` walks the segments below that offset (grouped into replacement segments
   by `cleaning_plan.group_segments_by_size`), from the start of the log, batch by batch,
   and `Cleaning.filter_batch` says what to write for each batch.

Record rules (Cleaner.shouldRetainRecord): a record past the map's latest offset stays; else
it needs a key, the latest offset for that key, and a value or a delete horizon not yet
passed. The first round to keep a tombstone (or a discardable transaction marker) stamps
its batch with a delete horizon, now + delete.retention.ms (KIP-534); a later round past
that horizon removes it.
"""

from __future__ import annotations

import hashlib
import heapq
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from odradek.log.txn_index import AbortedTxn
from odradek.protocol.control import ControlType
from odradek.protocol.record_codec import Record, build_batch, decode_records, empty_batch
from odradek.protocol.records import (
    LOG_APPEND_TIME,
    BatchInfo,
    Buffer,
    InvalidRecordsError,
    parse_batch_header,
)

BYTES_PER_ENTRY = 24
"""An MD5 digest (16 bytes) and an offset (8 bytes), as in Kafka's SkimpyOffsetMap."""

_CONTROL_KEY = struct.Struct(">hh")


class OffsetMap:
    """key -> last offset for the dirty range (Kafka's SkimpyOffsetMap).

    Keys are stored as their MD5 digest; `capacity` is Kafka's
    `slots * load_factor` with 24-byte slots. A Python dict entry costs more than 24 bytes:
    what is kept from Kafka is how many keys one round may map, not the memory used.
    """

    def __init__(self, buffer_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = buffer_bytes // BYTES_PER_ENTRY
        self.capacity = int(self.slots * load_factor)
        if self.capacity < 1:
            raise ValueError(
                f"an offset map of {buffer_bytes} bytes at load factor {load_factor} "
                "cannot hold a single key, so cleaning would never make progress"
            )
        self._offsets: dict[bytes, int] = {}
        self._latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._offsets)

    @property
    def utilization(self) -> float:
        """Kafka's buffer utilization: entries / slots."""
        return len(self._offsets) / self.slots

    @property
    def latest_offset(self) -> int:
        """The highest offset the map accounts for; -1 when empty."""
        return self._latest_offset

    def update_latest_offset(self, offset: int) -> None:
        self._latest_offset = offset

    def put(self, key: bytes, offset: int) -> bool:
        """Map `key` to `offset`; False (and nothing changes) if the key is new and the map
        is at capacity."""
        digest = hashlib.md5(key, usedforsecurity=False).digest()
        if digest not in self._offsets and len(self._offsets) >= self.capacity:
            return False
        self._offsets[digest] = offset
        self._latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        """The offset mapped for `key`, -1 if none."""
        return self._offsets.get(hashlib.md5(key, usedforsecurity=False).digest(), -1)

    def clear(self) -> None:
        self._offsets.clear()
        self._latest_offset = -1


@dataclass(slots=True)
class CleanerStats:
    """Kafka's CleanerStats, without the timings."""

    map_bytes_read: int = 0
    map_records_read: int = 0
    map_utilization: float = 0.0
    """Keys mapped / slots of the round's offset map."""
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    batches_read: int = 0
    batches_written: int = 0
    invalid_records: int = 0
    """Keyless records removed."""
    latest_delete_horizon_ms: int = -1
    """The latest delete horizon among the batches written (-1: none): once it has passed,
    a round is due even if the log is not dirty (KIP-534)."""

    @property
    def recopy_percent(self) -> float:
        """Bytes written as a percentage of bytes read (the cleaner-recopy-percent gauge)."""
        return 100.0 * self.bytes_written / max(self.bytes_read, 1)


class CleanedTransactions:
    """Kafka's CleanedTransactionMetadata: tracks transactions while walking the log in
    offset order, to drop aborted data and decide when markers may go.

    `aborted` are the aborted-transaction index entries for the range walked; an entry
    becomes ongoing once the walk reaches its first offset.
    """

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._pending = [(txn.first_offset, index, txn) for index, txn in enumerate(aborted)]
        heapq.heapify(self._pending)
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _OngoingAbort] = {}
        self.retained_aborted: list[AbortedTxn] = []
        """Index entries of the abort markers kept, for the cleaned segment's .txnindex."""

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _OngoingAbort(txn))

    def on_batch_read(self, info: BatchInfo) -> bool:
        """A data batch; True when it belongs to an aborted transaction."""
        self._consume_up_to(info.last_offset)
        if not info.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(info.producer_id)
        if ongoing is not None:
            ongoing.batch_seen = True
            return True
        self._ongoing_committed.add(info.producer_id)
        return False

    def on_control_batch_read(self, info: BatchInfo, records: Sequence[Record]) -> bool:
        """A control batch (decoded as `records`); True when it may be discarded: an abort
        marker none of whose transaction's batches was seen, a commit marker none of whose
        transaction's batches was traversed, or an already emptied batch."""
        self._consume_up_to(info.last_offset)
        if not records:
            return True
        control_type = _control_type(records[0])
        producer_id = info.producer_id
        if control_type == ControlType.ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing.batch_seen:
                self.retained_aborted.append(ongoing.txn)
                return False
            return True
        if control_type == ControlType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


@dataclass(slots=True)
class _OngoingAbort:
    txn: AbortedTxn
    batch_seen: bool = False
    """A batch of the transaction was walked: its marker must stay."""


def _control_type(record: Record) -> int:
    """ControlRecordType.parse: the int16 type after the int16 version of the key."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise InvalidRecordsError(
            ErrorCode.corrupt_message, "invalid size of a control record key"
        )
    return _CONTROL_KEY.unpack_from(record.key)[1]


def build_offset_map(
    batches: Iterable[Buffer],
    offset_map: OffsetMap,
    start_offset: int,
    end_offset: int,
    aborted: Iterable[AbortedTxn],
    stats: CleanerStats | None = None,
) -> bool:
    """Fill a new (or cleared) `offset_map` from the dirty range [start_offset, end_offset)
    (Kafka's buildOffsetMap); True if it filled up before the end of the range.

    `batches` are the whole batches of the dirty segments in offset order (one batch per
    buffer; any before `start_offset` are walked but not mapped), `aborted` the aborted
    transaction entries of those segments. It may instead be called segment by segment
    (Kafka's buildOffsetMapForSegment) until it returns True, with `end_offset` the next
    segment's base offset, and the round's end for the last segment.

    Control batches and aborted transactions' batches are not mapped. As in Kafka, the map
    is full when it holds `capacity` keys, even if the next key is already in it, and
    filling stops there, maybe in the middle of a batch: `latest_offset` is then the offset
    of the last record put, so the round's end (and the next checkpoint) may fall inside a
    batch. When the range is read to its end, `latest_offset` is `end_offset - 1` (Kafka
    fast-forwards over offset gaps).
    """
    stats = stats if stats is not None else CleanerStats()
    transactions = CleanedTransactions(
        txn
        for txn in aborted
        if txn.last_offset >= start_offset and txn.first_offset < end_offset
    )
    for batch in batches:
        info = parse_batch_header(batch)
        if info.base_offset >= end_offset:
            break
        if info.is_control:
            transactions.on_control_batch_read(info, decode_records(batch))
            stats.map_records_read += 1
        elif transactions.on_batch_read(info):
            stats.map_records_read += info.record_count
        else:
            for record in decode_records(batch):
                if record.key is not None and start_offset <= record.offset < end_offset:
                    if offset_map.size >= offset_map.capacity:
                        return True
                    offset_map.put(record.key, record.offset)
                stats.map_records_read += 1
        if info.last_offset >= start_offset:
            offset_map.update_latest_offset(info.last_offset)
        stats.map_bytes_read += info.size
    if end_offset > start_offset:
        offset_map.update_latest_offset(end_offset - 1)
    return False


class ProducerTail(NamedTuple):
    """Kafka's LastRecord for an active producer: its last data offset (None when it has
    no data batch, only markers) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


class Cleaning:
    """One cleaning round over the segments below the round's end offset, from the start of
    the log, batch by batch in offset order (Kafka's cleanSegments / cleanInto and
    MemoryRecords.filterTo).

    `aborted` are the aborted-transaction index entries of the segments walked,
    `producer_tails` Kafka's lastRecordsOfActiveProducers (`ProducerTail` or a
    `(last data offset, epoch)` pair per producer id), and `upper_bound_offset` the round's
    first uncleanable offset: the batch ending just below it is kept, even emptied, so the
    log's end offset survives cleaning.
    """

    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        now_ms: int,
        delete_retention_ms: int,
        aborted: Iterable[AbortedTxn],
        producer_tails: Mapping[int, tuple[int | None, int]],
        upper_bound_offset: int | None = None,
    ) -> None:
        self.offset_map = offset_map
        self.now_ms = now_ms
        self.delete_retention_ms = delete_retention_ms
        self.producer_tails = producer_tails
        self.upper_bound_offset = upper_bound_offset
        self.stats = CleanerStats(map_utilization=offset_map.utilization)
        self._transactions = CleanedTransactions(aborted)

    def take_retained_aborted(self) -> list[AbortedTxn]:
        """The aborted transactions whose markers were kept since the last call: the entries
        of the .txnindex for the segment written since then."""
        retained = self._transactions.retained_aborted
        self._transactions.retained_aborted = []
        return retained

    def filter_batch(self, batch: Buffer) -> Buffer | None:
        """What to write in place of `batch`: `batch` itself when it is kept unchanged, a
        rebuilt batch, an empty batch keeping a producer's state, or None to drop it."""
        info = parse_batch_header(batch)
        stats = self.stats
        stats.bytes_read += info.size
        stats.batches_read += 1
        records = decode_records(batch) if info.is_control else None
        if records is not None:
            can_discard = self._transactions.on_control_batch_read(info, records)
            horizon = info.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= self.now_ms
        else:
            can_discard = discard_records = self._transactions.on_batch_read(info)
        retain_empty = (info.producer_id >= 0 and self._holds_producer_tail(info)) or (
            info.next_offset == self.upper_bound_offset
        )
        if discard_records and not retain_empty:
            return None
        if records is None:
            records = decode_records(batch)
        stats.records_read += len(records)
        if discard_records:
            retained: list[Record] = []
        elif info.is_control:
            retained = records
        else:
            retained = [record for record in records if self._retains(info, record)]
        output: Buffer | None
        if retained:
            needs_horizon = info.delete_horizon_ms is None and (
                (can_discard and info.is_control)
                or any(record.value is None for record in retained)
            )
            horizon = self.now_ms + self.delete_retention_ms if needs_horizon else (
                info.delete_horizon_ms)
            if horizon is not None:
                stats.latest_delete_horizon_ms = max(stats.latest_delete_horizon_ms, horizon)
            if len(retained) == len(records) and not needs_horizon:
                output = batch if len(batch) == info.size else memoryview(batch)[: info.size]
            else:
                output = _rebuild(info, retained, horizon)
        elif retain_empty:
            output = empty_batch(
                base_offset=info.base_offset,
                last_offset=info.last_offset,
                producer_id=info.producer_id,
                producer_epoch=info.producer_epoch,
                base_sequence=info.base_sequence,
                partition_leader_epoch=info.partition_leader_epoch,
                timestamp_type=info.timestamp_type,
                max_timestamp=info.max_timestamp,
                is_transactional=info.is_transactional,
                is_control=info.is_control,
            )
        else:
            return None
        stats.bytes_written += len(output)
        stats.records_retained += len(retained)
        stats.batches_written += 1
        return output

    def _holds_producer_tail(self, info: BatchInfo) -> bool:
        tail = self.producer_tails.get(info.producer_id)
        if tail is None:
            return False
        last_data_offset, producer_epoch = tail
        if last_data_offset is not None:
            return info.last_offset == last_data_offset
        return info.is_control and info.producer_epoch == producer_epoch

    def _retains(self, info: BatchInfo, record: Record) -> bool:
        if record.offset > self.offset_map.latest_offset:
            return True
        if record.key is None:
            self.stats.invalid_records += 1
            return False
        if record.offset < self.offset_map.get(record.key):
            return False
        horizon = info.delete_horizon_ms
        return record.value is not None or horizon is None or self.now_ms < horizon


def _rebuild(info: BatchInfo, records: Sequence[Record], delete_horizon_ms: int | None) -> bytes:
    """Kafka's buildRetainedRecordsInto: the kept records, in a batch with the original's
    offsets, producer fields, leader epoch, attributes and codec."""
    return build_batch(
        records,
        base_offset=info.base_offset,
        compression=info.compression,
        producer_id=info.producer_id,
        producer_epoch=info.producer_epoch,
        base_sequence=info.base_sequence,
        partition_leader_epoch=info.partition_leader_epoch,
        is_transactional=info.is_transactional,
        is_control=info.is_control,
        log_append_time_ms=info.max_timestamp if info.timestamp_type == LOG_APPEND_TIME else None,
        delete_horizon_ms=delete_horizon_ms,
        last_offset_delta=info.last_offset_delta,
    )
