"""The record layer of magic v2 batches: decoding and encoding the records themselves,
after Kafka's DefaultRecord and MemoryRecordsBuilder. Not for the produce or fetch paths,
which only touch batch headers (`records`): ListOffsets by timestamp, the log cleaner,
coordinators, tools and tests use it.

Record layout (varints are zigzag): length varint | attributes int8 |
timestampDelta varlong | offsetDelta varint | key (varint length, bytes) |
value (varint length, bytes) | header count varint | headers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from odradek.protocol.compression import compress, decompress
from odradek.protocol.records import (
    BATCH_OVERHEAD,
    CREATE_TIME,
    DELETE_HORIZON_BIT,
    LOG_APPEND_TIME,
    MAGIC,
    NO_COMPRESSION,
    BatchInfo,
    Buffer,
    InvalidRecordsError,
    batch_attributes,
    pack_batch,
    parse_batch_header,
)


@dataclass(slots=True, frozen=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


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
        raise InvalidRecordsError.corrupt("truncated varint")
    raise InvalidRecordsError.corrupt(f"varint longer than {max_bytes} bytes")


def _read_bytes(data: bytes, position: int, what: str) -> tuple[bytes | None, int]:
    length, position = _read_varint(data, position, 5)
    if length < 0:  # Java's DefaultRecord reads any negative length as null
        return None, position
    end = position + length
    if end > len(data):
        raise InvalidRecordsError.corrupt(
            f"{what} of {length} bytes runs past the end of the records")
    return data[position:end], end


def decode_records(batch: Buffer) -> list[Record]:
    """Decode every record of the batch that starts `batch` (bytes after it are ignored).

    The CRC is not checked: `validate_batches` and `scan_valid_prefix` do that.

    Timestamps of a LogAppendTime batch are its maxTimestamp, as Kafka's readers report.
    Header keys that are not UTF-8 decode with surrogate escapes (Java would substitute
    U+FFFD); `build_batch` encodes them back to the same bytes.
    """
    info = parse_batch_header(batch)
    if info.magic != MAGIC:
        raise InvalidRecordsError.corrupt(
            f"record batch magic {info.magic}, only magic 2 is supported")
    data = _records_data(batch, info)
    if info.record_count < 0:
        raise InvalidRecordsError.corrupt(f"negative record count {info.record_count}")
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
            raise InvalidRecordsError.corrupt(f"invalid header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            header_key, position = _read_bytes(data, position, "header key")
            if header_key is None:
                raise InvalidRecordsError.corrupt("invalid negative header key size")
            header_value, position = _read_bytes(data, position, "header value")
            headers.append((header_key.decode(errors="surrogateescape"), header_value))
        if position != record_end:
            raise InvalidRecordsError.corrupt(
                f"record declares {record_end - start} bytes but its fields do not fill them")
        timestamp = info.max_timestamp if log_append_time else info.base_timestamp + timestamp_delta
        records.append(
            Record(info.base_offset + offset_delta, timestamp, key, value, tuple(headers))
        )
    if position != len(data):
        raise InvalidRecordsError.corrupt(
            f"{len(data) - position} bytes left after {info.record_count} records")
    return records


def _records_data(batch: Buffer, info: BatchInfo) -> bytes:
    """The batch's records section, decompressed."""
    if info.size < BATCH_OVERHEAD or info.size > len(batch):
        raise InvalidRecordsError.corrupt(f"batch declares {info.size} bytes, {len(batch)} present")
    data = bytes(batch[BATCH_OVERHEAD : info.size])
    if info.compression != NO_COMPRESSION:
        data = decompress(info.compression, data)
    return data


def _record_spans(data: bytes, count: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each of the `count` records in `data`, after its length prefix, which
    must stay within `data`."""
    position = 0
    for _ in range(count):
        length, position = _read_varint(data, position, 5)
        end = position + length
        if length < 0 or end > len(data):
            raise InvalidRecordsError.corrupt(
                f"record of {length} bytes runs past the end of the batch")
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
    payload = bytes(body) if compression == NO_COMPRESSION else compress(compression, bytes(body))
    attributes = batch_attributes(
        compression, log_append_time_ms is not None, is_transactional, is_control
    )
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT
    return pack_batch(
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
    return pack_batch(
        b"",
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=batch_attributes(
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
