"""Kafka record batches (magic v2): a zero-copy view for the hot paths, and a record codec.

The produce and fetch paths only touch batch headers: `validate_batches` checks a produce
request's records blob (sizes, magic, CRC32C) without decoding a record, `assign_offsets`
patches offsets (and timestamps for LogAppendTime) in place, `iter_batches` walks complete
batches, and `scan_valid_prefix` finds where a log segment stops being trustworthy.
`decode_records` and `build_batch` decode and encode the records themselves; they are for
ListOffsets by timestamp, coordinators, tests and tools.

Batch layout (big-endian), from `DefaultRecordBatch.java`:

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
    maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
    recordsCount int32 | records

The CRC32C covers attributes..end of batch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import cramjam
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

_XERIAL_HEADER = b"\x82SNAPPY\x00"
_XERIAL_PREAMBLE = _XERIAL_HEADER + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024


class InvalidRecordsError(Exception):
    """A records blob that Kafka would reject; `error_code` goes into the partition response."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


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


# ---------------------------------------------------------------------------------------
# The record layer: not for the produce or fetch paths.


@dataclass(slots=True, frozen=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _corrupt(message: str) -> InvalidRecordsError:
    return InvalidRecordsError(ErrorCode.corrupt_message, message)


def _read_varint(data: bytes, position: int, max_bytes: int) -> tuple[int, int]:
    """Decode a zigzag varint (max_bytes 5) or varlong (max_bytes 10) at `position`."""
    result = 0
    shift = 0
    limit = min(len(data), position + max_bytes)
    while position < limit:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7
    if position >= len(data):
        raise _corrupt("truncated varint")
    raise _corrupt(f"varint longer than {max_bytes} bytes")


def _read_bytes(data: bytes, position: int, what: str) -> tuple[bytes | None, int]:
    length, position = _read_varint(data, position, 5)
    if length < 0:  # Java's DefaultRecord reads any negative length as null
        return None, position
    end = position + length
    if end > len(data):
        raise _corrupt(f"{what} of {length} bytes runs past the end of the records")
    return data[position:end], end


def _decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            if data.startswith(_XERIAL_HEADER):
                return _xerial_decompress(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as error:
        raise _corrupt(f"cannot decompress records: {error}") from error
    raise _corrupt(f"unknown compression codec {codec}")


def _xerial_decompress(data: bytes) -> bytes:
    """snappy-java's SnappyOutputStream framing: preamble, then (int32 length, block)*."""
    chunks: list[bytes] = []
    position = len(_XERIAL_PREAMBLE)
    while position < len(data):
        if len(data) - position < 4:
            raise _corrupt("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise _corrupt(f"xerial snappy block of {length} bytes runs past the end")
        chunks.append(bytes(cramjam.snappy.decompress_raw(data[position : position + length])))
        position += length
    return b"".join(chunks)


def _compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        parts = [_XERIAL_PREAMBLE]
        for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
            parts += (_INT32.pack(len(block)), block)
        return b"".join(parts)
    if codec == LZ4:
        # Independent blocks and no content checksum, as KafkaLZ4BlockOutputStream writes.
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def decode_records(batch: Buffer) -> list[Record]:
    """Decode every record of the batch that starts `batch` (bytes after it are ignored).

    The CRC is not checked: `validate_batches` and `scan_valid_prefix` do that.

    Timestamps of a LogAppendTime batch are its maxTimestamp, as Kafka's readers report.
    Header keys that are not UTF-8 decode with surrogate escapes (Java would substitute
    U+FFFD); `build_batch` encodes them back to the same bytes.
    """
    info = parse_batch_header(batch)
    if info.magic != MAGIC:
        raise _corrupt(f"record batch magic {info.magic}, only magic 2 is supported")
    data = _records_data(batch, info)
    if info.record_count < 0:
        raise _corrupt(f"negative record count {info.record_count}")
    log_append_time = info.timestamp_type == LOG_APPEND_TIME
    records: list[Record] = []
    position = 0
    for start, record_end in _record_spans(data, info.record_count):
        position = start + 1  # record attributes: unused
        timestamp_delta, position = _read_varint(data, position, 10)
        offset_delta, position = _read_varint(data, position, 5)
        key, position = _read_bytes(data, position, "key")
        value, position = _read_bytes(data, position, "value")
        header_count, position = _read_varint(data, position, 5)
        if header_count < 0:
            raise _corrupt(f"invalid header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            header_key, position = _read_bytes(data, position, "header key")
            if header_key is None:
                raise _corrupt("invalid negative header key size")
            header_value, position = _read_bytes(data, position, "header value")
            headers.append((header_key.decode(errors="surrogateescape"), header_value))
        if position != record_end:
            raise _corrupt(f"record declares {record_end - start} bytes but its fields do not "
                           "fill them")
        timestamp = info.max_timestamp if log_append_time else info.base_timestamp + timestamp_delta
        records.append(
            Record(info.base_offset + offset_delta, timestamp, key, value, tuple(headers))
        )
    if position != len(data):
        raise _corrupt(f"{len(data) - position} bytes left after {info.record_count} records")
    return records


def _records_data(batch: Buffer, info: BatchInfo) -> bytes:
    """The batch's records section, decompressed."""
    if info.size < BATCH_OVERHEAD or info.size > len(batch):
        raise _corrupt(f"batch declares {info.size} bytes, {len(batch)} present")
    data = bytes(batch[BATCH_OVERHEAD : info.size])
    if info.compression != NO_COMPRESSION:
        data = _decompress(info.compression, data)
    return data


def _record_spans(data: bytes, count: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each of the `count` records in `data`, after its length prefix, which
    must stay within `data`."""
    position = 0
    for _ in range(count):
        length, position = _read_varint(data, position, 5)
        end = position + length
        if length < 0 or end > len(data):
            raise _corrupt(f"record of {length} bytes runs past the end of the batch")
        yield position, end
        position = end


def _write_varint(out: bytearray, value: int) -> None:
    zigzag = (value << 1) ^ (value >> 63)
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None] | Record],
    *,
    base_offset: int = 0,
    timestamp_ms: int = 0,
    compression: int = NO_COMPRESSION,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    log_append_time_ms: int | None = None,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Encode a batch of magic v2.

    A `(key, value)` pair gets the next offset delta, `timestamp_ms` and no headers. A
    `Record` brings its own timestamp and headers, and its offset (which must be at least
    `base_offset` and increasing), so decoded records re-encode to the same batch.

    The keywords after `is_control` let the log cleaner rebuild a batch as Kafka's
    MemoryRecordsBuilder does: `log_append_time_ms` makes a LogAppendTime batch with that
    maxTimestamp; `delete_horizon_ms` sets the delete-horizon bit and becomes baseTimestamp
    (timestamp deltas are taken from it, so record timestamps do not change); and
    `last_offset_delta` keeps the original batch's last offset (so the producer's last
    sequence survives) when its last records were removed.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    timestamps: list[int] = []
    offset_deltas: list[int] = []
    for index, item in enumerate(records):
        if isinstance(item, Record):
            offset_delta = item.offset - base_offset
            timestamps.append(item.timestamp)
        else:
            offset_delta = index if not offset_deltas else offset_deltas[-1] + 1
            timestamps.append(timestamp_ms)
        if offset_delta < 0 or (offset_deltas and offset_delta <= offset_deltas[-1]):
            raise ValueError(f"offset delta {offset_delta} out of order at record {index}")
        offset_deltas.append(offset_delta)
    if last_offset_delta is None:
        last_offset_delta = offset_deltas[-1]
    elif last_offset_delta < offset_deltas[-1]:
        raise ValueError(
            f"last offset delta {last_offset_delta} is below the last record's {offset_deltas[-1]}"
        )
    base_timestamp = timestamps[0] if delete_horizon_ms is None else delete_horizon_ms
    body = bytearray()
    record_bytes = bytearray()
    for item, offset_delta, timestamp in zip(records, offset_deltas, timestamps, strict=True):
        if isinstance(item, Record):
            key, value, headers = item.key, item.value, item.headers
        else:
            (key, value), headers = item, ()
        record_bytes.clear()
        record_bytes.append(0)
        _write_varint(record_bytes, timestamp - base_timestamp)
        _write_varint(record_bytes, offset_delta)
        _write_bytes(record_bytes, key)
        _write_bytes(record_bytes, value)
        _write_varint(record_bytes, len(headers))
        for header_key, header_value in headers:
            _write_bytes(record_bytes, header_key.encode(errors="surrogateescape"))
            _write_bytes(record_bytes, header_value)
        _write_varint(body, len(record_bytes))
        body += record_bytes
    payload = bytes(body) if compression == NO_COMPRESSION else _compress(compression, bytes(body))
    attributes = _attributes(
        compression, log_append_time_ms is not None, is_transactional, is_control
    )
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT
    return _pack_batch(
        payload,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max(timestamps) if log_append_time_ms is None else log_append_time_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
    )


def empty_batch(
    *,
    base_offset: int,
    last_offset: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    timestamp_type: int = CREATE_TIME,
    max_timestamp: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """A batch of no records covering [base_offset, last_offset] (Kafka's writeEmptyHeader).

    The log cleaner writes one in place of a batch it emptied when the batch must stay, to
    keep a producer's last sequence and epoch. As in Kafka: no compression, no delete
    horizon, baseTimestamp -1.
    """
    return _pack_batch(
        b"",
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=_attributes(
            NO_COMPRESSION, timestamp_type == LOG_APPEND_TIME, is_transactional, is_control
        ),
        last_offset_delta=last_offset - base_offset,
        base_timestamp=-1,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=0,
    )


def _attributes(
    compression: int, log_append_time: bool, is_transactional: bool, is_control: bool
) -> int:
    attributes = compression
    if log_append_time:
        attributes |= _TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    return attributes


def _pack_batch(
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


def keyless_records(batch: Buffer) -> list[int]:
    """Indexes of the records without a key in the batch at the start of `batch` (compacted
    topics refuse them: INVALID_RECORD, each one named in the Produce response).

    Decompresses, but only walks record lengths and key lengths.
    """
    info = parse_batch_header(batch)
    data = _records_data(batch, info)
    keyless = []
    for index, (start, _) in enumerate(_record_spans(data, info.record_count)):
        _, field = _read_varint(data, start + 1, 10)  # skip attributes, timestamp delta
        _, field = _read_varint(data, field, 5)  # offset delta
        key_length, _ = _read_varint(data, field, 5)
        if key_length < 0:
            keyless.append(index)
    return keyless
