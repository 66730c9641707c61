"""Kafka record batches (magic v2) as a zero-copy view of their headers, for the hot paths.

The produce and fetch paths only touch batch headers: `validate_batches` checks a produce
request's records blob (sizes, magic, CRC32C) without decoding a record, `assign_offsets`
patches offsets (and timestamps for LogAppendTime) in place, `iter_batches` walks complete
batches, and `scan_valid_prefix` finds where a log segment stops being trustworthy.
`pack_batch` writes a header around records already encoded. Decoding and encoding the
records themselves is `record_codec`'s; compression is `compression`'s.

Batch layout (big-endian), from `DefaultRecordBatch.java`:

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records

The CRC32C covers attributes..end of batch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias

import crc32c
from kio.schema.errors import ErrorCode

Buffer: TypeAlias = bytes | bytearray | memoryview

BATCH_OVERHEAD = 61
LOG_OVERHEAD = 12
MAGIC = 2

NO_COMPRESSION = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CREATE_TIME = 0
LOG_APPEND_TIME = 1

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
"""Set by the log cleaner (KIP-534): baseTimestamp then holds the batch's delete horizon."""

_MIN_BATCH_LENGTH = BATCH_OVERHEAD - LOG_OVERHEAD
_PARTITION_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")



class InvalidRecordsError(Exception):
    """A records blob that Kafka would reject; `error_code` goes into the partition response."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @classmethod
    def corrupt(cls, message: str) -> InvalidRecordsError:
        """CORRUPT_MESSAGE: bytes that do not decode."""
        return cls(ErrorCode.corrupt_message, message)


@dataclass(slots=True, frozen=True)
class BatchInfo:
    """The header of one batch, and where it sits in the buffer it was parsed from."""

    position: int
    size: int
    base_offset: int
    last_offset_delta: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def end(self) -> int:
        """Position just past this batch in its buffer."""
        return self.position + self.size

    @property
    def compression(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner may drop this batch's tombstones (or marker); None if not yet set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None


def _unpack_header(buf: Buffer, position: int) -> BatchInfo:
    (
        base_offset,
        batch_length,
        partition_leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = _HEADER.unpack_from(buf, position)
    return BatchInfo(
        position,
        LOG_OVERHEAD + batch_length,
        base_offset,
        last_offset_delta,
        partition_leader_epoch,
        magic,
        crc,
        attributes,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )


def parse_batch_header(buf: Buffer, position: int = 0) -> BatchInfo:
    """Read the batch header at `position`; checks only that 61 bytes are there."""
    if len(buf) - position < BATCH_OVERHEAD:
        raise InvalidRecordsError(
            ErrorCode.corrupt_message,
            f"{len(buf) - position} bytes at position {position}, "
            f"fewer than a batch header ({BATCH_OVERHEAD})",
        )
    return _unpack_header(buf, position)


def validate_batches(
    buf: Buffer, max_batch_bytes: int, *, from_client: bool = True
) -> list[BatchInfo]:
    """Check a produce request's records blob batch by batch, without decoding records.

    Raises InvalidRecordsError with Kafka's error code for the first problem found.
    `from_client=False` (replication, coordinators) skips the checks Kafka's LogValidator
    applies only to clients: record count matching the offset range (compaction breaks
    that), no control batches, a base sequence for idempotent producers.
    """
    if len(buf) == 0:
        raise InvalidRecordsError(
            ErrorCode.invalid_record, "produce requests must have at least one record batch"
        )
    with memoryview(buf) as view:
        return _validate(view, max_batch_bytes, from_client)


def _validate(view: memoryview, max_batch_bytes: int, from_client: bool) -> list[BatchInfo]:
    end = len(view)
    batches: list[BatchInfo] = []
    position = 0
    while position < end:
        remaining = end - position
        if remaining <= _MAGIC_OFFSET:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"trailing partial batch of {remaining} bytes at position {position}",
            )
        magic = view[position + _MAGIC_OFFSET]
        if magic != MAGIC:
            raise InvalidRecordsError(
                ErrorCode.invalid_record,
                f"record batch magic {magic} at position {position}; "
                "produce requests may only contain magic 2 batches",
            )
        if remaining < BATCH_OVERHEAD:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"trailing partial batch of {remaining} bytes at position {position}",
            )
        info = _unpack_header(view, position)
        size = info.size
        if size < BATCH_OVERHEAD:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"batch length {size - LOG_OVERHEAD} at position {position} is smaller "
                f"than the minimum {_MIN_BATCH_LENGTH}",
            )
        if size > max_batch_bytes:
            raise InvalidRecordsError(
                ErrorCode.message_too_large,
                f"batch of {size} bytes exceeds the maximum of {max_batch_bytes}",
            )
        if size > remaining:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"batch at position {position} declares {size} bytes, {remaining} present",
            )
        crc = crc32c.crc32c(view[position + _ATTRIBUTES_OFFSET : position + size])
        if crc != info.crc:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"batch at position {position}: CRC32C {crc:#010x}, header says {info.crc:#010x}",
            )
        if info.compression > ZSTD:
            raise InvalidRecordsError(
                ErrorCode.corrupt_message,
                f"batch at position {position}: unknown compression codec {info.compression}",
            )
        if from_client:
            _check_client_batch(info)
        batches.append(info)
        position += size
    return batches


def _check_client_batch(info: BatchInfo) -> None:
    """LogValidator.validateBatch's checks for AppendOrigin.CLIENT."""
    count_from_offsets = info.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordsError(
            ErrorCode.invalid_record,
            f"batch has an invalid offset range: [{info.base_offset}, {info.last_offset}]",
        )
    if info.record_count != count_from_offsets:
        raise InvalidRecordsError(
            ErrorCode.invalid_record,
            f"inconsistent batch offset range [{info.base_offset}, {info.last_offset}] "
            f"and count of records {info.record_count}",
        )
    if info.is_control:
        raise InvalidRecordsError(
            ErrorCode.invalid_record, "clients are not allowed to write control records"
        )
    if info.producer_id >= 0 and info.base_sequence < 0:
        raise InvalidRecordsError(
            ErrorCode.invalid_record,
            f"invalid sequence number {info.base_sequence} for producer {info.producer_id}",
        )


def assign_offsets(
    buf: bytearray,
    batches: list[BatchInfo],
    first_offset: int,
    log_append_time_ms: int | None = None,
    partition_leader_epoch: int | None = None,
) -> list[BatchInfo]:
    """Give `batches` consecutive offsets from `first_offset`, patching `buf` in place.

    baseOffset and partitionLeaderEpoch lie outside the CRC. With `log_append_time_ms`,
    the batch becomes LogAppendTime with that maxTimestamp and its CRC is recomputed; as in
    Kafka's in-place path (`DefaultRecordBatch.setMaxTimestamp`), baseTimestamp is kept
    (readers take every record's timestamp from maxTimestamp for LogAppendTime).
    """
    assigned: list[BatchInfo] = []
    next_offset = first_offset
    for info in batches:
        position = info.position
        _INT64.pack_into(buf, position, next_offset)
        leader_epoch = info.partition_leader_epoch
        if partition_leader_epoch is not None:
            leader_epoch = partition_leader_epoch
            _INT32.pack_into(buf, position + _PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        attributes = info.attributes
        max_timestamp = info.max_timestamp
        crc = info.crc
        if log_append_time_ms is not None:
            attributes |= _TIMESTAMP_TYPE_BIT
            max_timestamp = log_append_time_ms
            _INT16.pack_into(buf, position + _ATTRIBUTES_OFFSET, attributes)
            _INT64.pack_into(buf, position + _MAX_TIMESTAMP_OFFSET, max_timestamp)
            with memoryview(buf) as view:
                crc = crc32c.crc32c(view[position + _ATTRIBUTES_OFFSET : position + info.size])
            _UINT32.pack_into(buf, position + _CRC_OFFSET, crc)
        assigned.append(
            BatchInfo(
                position,
                info.size,
                next_offset,
                info.last_offset_delta,
                leader_epoch,
                info.magic,
                crc,
                attributes,
                info.base_timestamp,
                max_timestamp,
                info.producer_id,
                info.producer_epoch,
                info.base_sequence,
                info.record_count,
            )
        )
        next_offset += info.last_offset_delta + 1
    return assigned


def iter_batches(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[BatchInfo]:
    """Yield the complete batches in buf[start:end]; stop silently at an incomplete tail.

    Nothing is verified beyond sizes: this walks data that was validated when appended.
    """
    limit = len(buf) if end is None else min(end, len(buf))
    position = start
    while limit - position >= BATCH_OVERHEAD:
        info = _unpack_header(buf, position)
        if info.size < BATCH_OVERHEAD or position + info.size > limit:
            return
        yield info
        position += info.size


def scan_valid_prefix(buf: Buffer, start: int = 0) -> tuple[list[BatchInfo], int]:
    """Walk buf from `start` while batches are complete, magic 2, CRC-valid and in order.

    Returns those batches and the position just past the last of them (`start` if none):
    everything from there on is a torn write or garbage for log recovery to truncate.
    """
    with memoryview(buf) as view:
        return _scan(view, start)


def _scan(view: memoryview, start: int) -> tuple[list[BatchInfo], int]:
    end = len(view)
    batches: list[BatchInfo] = []
    position = start
    previous_last_offset: int | None = None
    while end - position >= BATCH_OVERHEAD:
        info = _unpack_header(view, position)
        size = info.size
        if (
            info.magic != MAGIC
            or size < BATCH_OVERHEAD
            or position + size > end
            or info.last_offset_delta < 0
            or (previous_last_offset is not None and info.base_offset <= previous_last_offset)
            or crc32c.crc32c(view[position + _ATTRIBUTES_OFFSET : position + size]) != info.crc
        ):
            break
        batches.append(info)
        previous_last_offset = info.last_offset
        position += size
    return batches, position


def batch_attributes(
    compression: int, log_append_time: bool, is_transactional: bool, is_control: bool
) -> int:
    """The attributes field of a batch with these properties (no delete horizon)."""
    attributes = compression
    if log_append_time:
        attributes |= _TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    return attributes


def pack_batch(
    payload: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
) -> bytes:
    """A whole batch: a header with these fields and its CRC32C, then `payload` (the
    records, encoded and compressed)."""
    out = bytearray(BATCH_OVERHEAD)
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        BATCH_OVERHEAD - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    out += payload
    _UINT32.pack_into(out, _CRC_OFFSET, crc32c.crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))
    return bytes(out)
