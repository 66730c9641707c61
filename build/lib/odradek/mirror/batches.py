"""The mirror's data path without IO: the record batches of a source Fetch response (read
with read_committed) turned into batches for the mirror's own producer on the target.

`select_batches` walks the fetched bytes batch by batch, reading headers only: it drops
control batches and the batches of aborted transactions (the consumer's read_committed
filter, Kafka's CompletedFetch), and keeps every other batch as a slice of the fetched
bytes. `stamp_batches` then writes the mirror producer's id, epoch and sequence and the
transactional bit into each and recomputes its CRC32C. Keys, values, headers, timestamps
and compression are the source's bytes.

A batch is decoded and encoded again only where the broker would refuse it from a client
or where it holds records that must not be copied: a batch of a compacted partition, whose
record count no longer matches its offset range; one that starts before the fetch
position (a resume inside a batch, DeleteRecords); a LogAppendTime batch or one carrying a
delete horizon, whose timestamp fields mean something else on the target.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import crc32c

from odradek.protocol.control import ControlType, read_marker
from odradek.protocol.record_codec import Record, build_batch, decode_records
from odradek.protocol.records import (
    DELETE_HORIZON_BIT,
    LOG_APPEND_TIME,
    BatchInfo,
    Buffer,
    InvalidRecordsError,
    iter_batches,
)

SEQUENCE_LIMIT = 1 << 31
"""Sequence numbers wrap to 0 after Int.MAX, as in Kafka's producer."""

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qhi")
_PARTITION_LEADER_EPOCH_OFFSET = 12
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_PRODUCER_OFFSET = 43
_TRANSACTIONAL_BIT = 0x10
_NO_PARTITION_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class Chunk:
    """One batch to write to the target: its bytes (a slice of the fetched response, or a
    batch encoded again) and the upstream offset of each of its records, in order."""

    data: Buffer
    upstream: Sequence[int]
    max_timestamp: int

    @property
    def record_count(self) -> int:
        return len(self.upstream)


@dataclass(frozen=True, slots=True)
class Selection:
    chunks: list[Chunk]
    next_offset: int
    """Where the next fetch starts: past every complete batch seen, dropped ones included."""
    reencoded: int
    """How many of `chunks` had to be decoded and encoded again."""


def select_batches(records: Buffer, fetch_offset: int,
                   aborted: Iterable[tuple[int, int]] | None) -> Selection:
    """The batches of a read_committed Fetch response's `records` for one partition, fetched
    from `fetch_offset`, with the response's aborted transactions ((producer id, first
    offset) pairs). A trailing partial batch is left for the next fetch. Raises
    InvalidRecordsError for a batch whose CRC32C does not match its bytes."""
    pending = sorted(aborted or (), key=lambda a: a[1])
    aborting: set[int] = set()
    chunks: list[Chunk] = []
    next_offset = fetch_offset
    reencoded = 0
    view = memoryview(records)  # the chunks' slices keep it
    for info in iter_batches(view):
        batch = view[info.position:info.end]
        _check_crc(batch, info)
        next_offset = max(next_offset, info.next_offset)
        if info.producer_id >= 0:
            while pending and pending[0][1] <= info.last_offset:
                aborting.add(pending.pop(0)[0])
            if info.is_control:
                if info.producer_id in aborting and _is_abort_marker(batch):
                    aborting.discard(info.producer_id)
                continue
            if info.is_transactional and info.producer_id in aborting:
                continue
        if info.is_control or info.record_count == 0 or info.last_offset < fetch_offset:
            continue
        if _copyable(info, fetch_offset):
            chunks.append(Chunk(batch, range(info.base_offset, info.next_offset),
                                info.max_timestamp))
            continue
        chunk = _reencode(batch, info, fetch_offset)
        if chunk is not None:
            chunks.append(chunk)
            reencoded += 1
    return Selection(chunks, next_offset, reencoded)


def _check_crc(batch: memoryview, info: BatchInfo) -> None:
    if crc32c.crc32c(batch[_ATTRIBUTES_OFFSET:]) != info.crc:
        raise InvalidRecordsError.corrupt(
            f"fetched batch at offset {info.base_offset} fails its CRC32C")


def _is_abort_marker(batch: memoryview) -> bool:
    try:
        control, _ = read_marker(batch)
    except InvalidRecordsError:
        return False
    return control == ControlType.ABORT


def _copyable(info: BatchInfo, fetch_offset: int) -> bool:
    """A batch a client may send as it is, holding no record below the fetch position."""
    return (info.record_count == info.last_offset_delta + 1
            and info.base_offset >= fetch_offset
            and info.timestamp_type != LOG_APPEND_TIME
            and not info.attributes & DELETE_HORIZON_BIT)


def _reencode(batch: memoryview, info: BatchInfo, fetch_offset: int) -> Chunk | None:
    """The batch's records from `fetch_offset` on, numbered contiguously, with their
    timestamps (as CreateTime), keys, values and headers, in the batch's codec."""
    records = [r for r in decode_records(batch) if r.offset >= fetch_offset]
    if not records:
        return None
    data = build_batch(
        [Record(index, r.timestamp, r.key, r.value, r.headers)
         for index, r in enumerate(records)],
        compression=info.compression)
    return Chunk(data, [r.offset for r in records], max(r.timestamp for r in records))


@dataclass(frozen=True, slots=True)
class ProducerStamp:
    """The mirror's producer as it writes one partition."""

    producer_id: int
    producer_epoch: int
    transactional: bool


def stamp_batches(chunks: Sequence[Chunk], producer: ProducerStamp,
                  first_sequence: int) -> tuple[bytes, int]:
    """The records field of a Produce request for `chunks`, each batch carrying `producer`
    and the next sequence numbers from `first_sequence`; and the sequence after them."""
    out = bytearray().join(chunk.data for chunk in chunks)
    position = 0
    sequence = first_sequence
    for chunk in chunks:
        size = len(chunk.data)
        _INT64.pack_into(out, position, 0)  # baseOffset: the target's broker assigns it
        _INT32.pack_into(out, position + _PARTITION_LEADER_EPOCH_OFFSET,
                         _NO_PARTITION_LEADER_EPOCH)
        (attributes,) = _ATTRIBUTES.unpack_from(out, position + _ATTRIBUTES_OFFSET)
        attributes = (attributes | _TRANSACTIONAL_BIT if producer.transactional
                      else attributes & ~_TRANSACTIONAL_BIT)
        _ATTRIBUTES.pack_into(out, position + _ATTRIBUTES_OFFSET, attributes)
        _PRODUCER.pack_into(out, position + _PRODUCER_OFFSET, producer.producer_id,
                            producer.producer_epoch, sequence)
        with memoryview(out) as view:
            crc = crc32c.crc32c(view[position + _ATTRIBUTES_OFFSET:position + size])
        _CRC.pack_into(out, position + _CRC_OFFSET, crc)
        sequence = (sequence + chunk.record_count) % SEQUENCE_LIMIT
        position += size
    return bytes(out), sequence
