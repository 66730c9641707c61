"""Record batches (magic v2): validation, offset assignment, scanning, and the record codec."""

from __future__ import annotations

import struct
from itertools import islice
from types import SimpleNamespace

import cramjam
import crc32c
import kafka.codec
import kafka.record.default_records as kafka_records
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode

from odradek.protocol.record_codec import Record, build_batch, decode_records
from odradek.protocol.records import (
    BATCH_OVERHEAD,
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NO_COMPRESSION,
    SNAPPY,
    ZSTD,
    BatchInfo,
    InvalidRecordsError,
    assign_offsets,
    iter_batches,
    parse_batch_header,
    scan_valid_prefix,
    validate_batches,
)

CODECS = [NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD]
MAX = 1 << 20
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21

# Built by kafka-python 3.0.12's DefaultRecordBatchBuilder (uncompressed, producer 4000,
# epoch 3, base sequence 17): three records, one with two headers, a null key, a null value.
GOLDEN = bytes.fromhex(
    "0000000000000000000000660000000002a478ce210000000000020000018bcfe568000000018bcfe568"
    "050000000000000fa000030000001100000003240000000a6b65792d300e76616c75652d300030000a02"
    "01047631040a74726163650401020a656d7074790110001304046b320100"
)
GOLDEN_RECORDS = [
    Record(0, 1_700_000_000_000, b"key-0", b"value-0"),
    Record(1, 1_700_000_000_005, None, b"v1", (("trace", b"\x01\x02"), ("empty", None))),
    Record(2, 1_699_999_999_990, b"k2", None),
]

SETTINGS = settings(deadline=None, max_examples=60)

optional_bytes = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=10), optional_bytes), max_size=3).map(tuple)
timestamps = st.integers(min_value=0, max_value=2**45)


@st.composite
def record_lists(draw: st.DrawFn, min_size: int = 1, max_size: int = 20) -> list[Record]:
    """Records with contiguous offsets from 0, arbitrary timestamps, keys, values, headers."""
    count = draw(st.integers(min_value=min_size, max_value=max_size))
    return [
        Record(i, draw(timestamps), draw(optional_bytes), draw(optional_bytes), draw(headers))
        for i in range(count)
    ]


def recrc(batch: bytearray, position: int = 0) -> None:
    """Recompute the CRC of the batch at `position` after a deliberate edit."""
    info = parse_batch_header(batch, position)
    crc = crc32c.crc32c(bytes(batch[position + ATTRIBUTES_OFFSET : position + info.size]))
    struct.pack_into(">I", batch, position + CRC_OFFSET, crc)


def error_code_of(blob: bytes | bytearray, max_batch_bytes: int = MAX) -> ErrorCode:
    with pytest.raises(InvalidRecordsError) as raised:
        validate_batches(blob, max_batch_bytes)
    return raised.value.error_code


def batches_of(sizes: list[int], compression: int = NO_COMPRESSION) -> bytearray:
    """Concatenated batches with increasing base offsets, `sizes[i]` records each."""
    blob = bytearray()
    offset = 0
    for size in sizes:
        records = [(b"k%d" % i, b"v" * i) for i in range(size)]
        blob += build_batch(records, base_offset=offset, compression=compression)
        offset += size
    return blob


# --- round trips -----------------------------------------------------------------------


@pytest.mark.parametrize("compression", CODECS)
@SETTINGS
@given(records=record_lists())
def test_build_validate_decode_round_trip(compression: int, records: list[Record]) -> None:
    batch = build_batch(
        records,
        compression=compression,
        producer_id=7,
        producer_epoch=1,
        base_sequence=42,
        is_transactional=True,
    )
    [info] = validate_batches(batch, MAX)
    assert info == parse_batch_header(batch)
    assert (info.position, info.size) == (0, len(batch))
    assert info.compression == compression
    assert info.record_count == len(records)
    assert info.last_offset == len(records) - 1
    assert info.base_timestamp == records[0].timestamp
    assert info.max_timestamp == max(r.timestamp for r in records)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (7, 1, 42)
    assert info.is_transactional and not info.is_control
    assert decode_records(batch) == records


@SETTINGS
@given(
    records=st.lists(
        st.tuples(st.integers(min_value=1, max_value=1000), optional_bytes, optional_bytes),
        min_size=1,
        max_size=10,
    ),
    base_offset=st.integers(min_value=0, max_value=2**40),
)
def test_offset_gaps_round_trip_as_compacted_batches_do(
    records: list[tuple[int, bytes | None, bytes | None]], base_offset: int
) -> None:
    offsets = []
    offset = base_offset
    for gap, _, _ in records:
        offset += gap
        offsets.append(offset)
    originals = [Record(o, 5, k, v) for o, (_, k, v) in zip(offsets, records, strict=True)]
    batch = build_batch(originals, base_offset=base_offset)
    [info] = validate_batches(batch, MAX, from_client=False)
    assert info.last_offset == offsets[-1]
    assert decode_records(batch) == originals


def test_build_batch_rejects_empty_and_unordered_input() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([Record(3, 0, None, b"a"), Record(3, 0, None, b"b")])
    with pytest.raises(ValueError):
        build_batch([Record(1, 0, None, b"a")], base_offset=2)


def test_non_utf8_header_keys_survive_a_round_trip() -> None:
    raw = bytearray(build_batch([Record(0, 0, None, None, (("ab", b"x"),))]))
    position = raw.index(b"ab")
    raw[position : position + 2] = b"\xff\xfe"
    recrc(raw)
    [record] = decode_records(raw)
    assert build_batch([record]) == bytes(raw)


# --- validation ------------------------------------------------------------------------


@pytest.mark.parametrize("compression", CODECS)
@SETTINGS
@given(data=st.data())
def test_any_flipped_byte_under_the_crc_is_caught(compression: int, data: st.DataObject) -> None:
    batch = bytearray(batches_of([3], compression))
    index = data.draw(st.integers(min_value=CRC_OFFSET, max_value=len(batch) - 1))
    batch[index] ^= data.draw(st.integers(min_value=1, max_value=255))
    assert error_code_of(batch) is ErrorCode.corrupt_message
    assert scan_valid_prefix(batch) == ([], 0)


@SETTINGS
@given(data=st.data())
def test_a_corrupt_second_batch_is_caught(data: st.DataObject) -> None:
    blob = batches_of([2, 3])
    first_size = parse_batch_header(blob).size
    index = data.draw(st.integers(min_value=first_size + CRC_OFFSET, max_value=len(blob) - 1))
    blob[index] ^= 0x40
    assert error_code_of(blob) is ErrorCode.corrupt_message
    batches, valid = scan_valid_prefix(blob)
    assert (len(batches), valid) == (1, first_size)


@SETTINGS
@given(data=st.data())
def test_truncated_blobs_are_rejected(data: st.DataObject) -> None:
    blob = batches_of([2, 1, 4])
    cut = data.draw(st.integers(min_value=1, max_value=len(blob) - 1))
    assume(cut not in {info.end for info in iter_batches(blob)})
    assert error_code_of(blob[:cut]) is ErrorCode.corrupt_message


def test_empty_blob_is_rejected() -> None:
    assert error_code_of(b"") is ErrorCode.invalid_record


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_only_magic_2_is_accepted(magic: int) -> None:
    batch = bytearray(batches_of([1]))
    batch[16] = magic
    assert error_code_of(batch) is ErrorCode.invalid_record
    assert scan_valid_prefix(batch) == ([], 0)


def test_a_legacy_message_shorter_than_a_v2_header_is_rejected_for_its_magic() -> None:
    legacy_v1 = struct.pack(">qiIbbq", 0, 22, 0, 1, 0, 0) + struct.pack(">ii", -1, -1)
    assert error_code_of(legacy_v1) is ErrorCode.invalid_record


def test_batch_length_below_the_header_is_corrupt() -> None:
    batch = bytearray(batches_of([1]))
    struct.pack_into(">i", batch, 8, BATCH_OVERHEAD - 12 - 1)
    assert error_code_of(batch) is ErrorCode.corrupt_message


def test_batches_above_the_limit_are_too_large() -> None:
    blob = batches_of([1, 5])
    largest = max(info.size for info in iter_batches(blob))
    assert len(validate_batches(blob, largest)) == 2
    assert error_code_of(blob, largest - 1) is ErrorCode.message_too_large


def test_unknown_compression_codec_is_corrupt() -> None:
    batch = bytearray(batches_of([1]))
    batch[ATTRIBUTES_OFFSET + 1] |= 0x05
    recrc(batch)
    assert error_code_of(batch) is ErrorCode.corrupt_message


@pytest.mark.parametrize(
    ("last_offset_delta", "record_count"), [(2, 2), (2, 0), (-1, 3), (-1, 0), (-5, -4)]
)
def test_client_batches_need_consistent_counts(last_offset_delta: int, record_count: int) -> None:
    batch = bytearray(batches_of([3]))
    struct.pack_into(">i", batch, 23, last_offset_delta)
    struct.pack_into(">i", batch, 57, record_count)
    recrc(batch)
    assert error_code_of(batch) is ErrorCode.invalid_record
    assert len(validate_batches(batch, MAX, from_client=False)) == 1


def test_clients_may_not_write_control_batches() -> None:
    control = build_batch(
        [(b"\x00\x00\x00\x00", b"")],
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
        is_control=True,
    )
    assert error_code_of(control) is ErrorCode.invalid_record
    assert validate_batches(control, MAX, from_client=False)[0].is_control


def test_idempotent_batches_need_a_sequence() -> None:
    batch = build_batch([(None, b"v")], producer_id=9, producer_epoch=0, base_sequence=-1)
    assert error_code_of(batch) is ErrorCode.invalid_record


def test_parse_batch_header_needs_a_whole_header() -> None:
    with pytest.raises(InvalidRecordsError) as raised:
        parse_batch_header(GOLDEN[: BATCH_OVERHEAD - 1])
    assert raised.value.error_code is ErrorCode.corrupt_message
    assert parse_batch_header(b"\x00" + GOLDEN, 1).crc == parse_batch_header(GOLDEN).crc


# --- offset assignment -----------------------------------------------------------------


@SETTINGS
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=4),
    compression=st.sampled_from(CODECS),
    first_offset=st.integers(min_value=0, max_value=2**50),
    append_time=st.none() | timestamps,
    leader_epoch=st.none() | st.integers(min_value=0, max_value=2**31 - 1),
)
def test_assign_offsets_keeps_batches_valid(
    sizes: list[int],
    compression: int,
    first_offset: int,
    append_time: int | None,
    leader_epoch: int | None,
) -> None:
    blob = batches_of(sizes, compression)
    before = validate_batches(blob, MAX)
    assigned = assign_offsets(blob, before, first_offset, append_time, leader_epoch)

    assert validate_batches(blob, MAX) == assigned
    assert [info.base_offset for info in assigned] == [
        first_offset + sum(sizes[:i]) for i in range(len(sizes))
    ]
    offsets = []
    for old, new in zip(before, assigned, strict=True):
        assert new.partition_leader_epoch == (
            old.partition_leader_epoch if leader_epoch is None else leader_epoch
        )
        assert new.base_timestamp == old.base_timestamp
        records = decode_records(blob[new.position : new.end])
        offsets += [r.offset for r in records]
        if append_time is None:
            assert new.crc == old.crc and new.timestamp_type == 0
        else:
            assert new.timestamp_type == LOG_APPEND_TIME
            assert new.max_timestamp == append_time
            assert {r.timestamp for r in records} == {append_time}
            kafka_batch = DefaultRecordBatch(blob[new.position : new.end])
            assert kafka_batch.validate_crc()
            assert kafka_batch.timestamp_type == 1 and kafka_batch.max_timestamp == append_time
    assert offsets == list(range(first_offset, first_offset + sum(sizes)))


def test_assign_offsets_leaves_the_crc_alone_without_append_time() -> None:
    blob = batches_of([2])
    untouched = bytes(blob[CRC_OFFSET:])
    assign_offsets(blob, validate_batches(blob, MAX), 1234, partition_leader_epoch=5)
    assert bytes(blob[CRC_OFFSET:]) == untouched
    assert struct.unpack_from(">qii", blob) == (1234, len(blob) - 12, 5)


# --- walking and recovery --------------------------------------------------------------


def test_iter_batches_stops_at_every_incomplete_tail() -> None:
    blob = bytes(batches_of([1, 3, 2]))
    whole = list(iter_batches(blob))
    assert [info.position for info in whole] == [0, whole[0].end, whole[1].end]
    assert whole[-1].end == len(blob)
    for cut in range(len(blob) + 1):
        assert list(iter_batches(blob[:cut])) == [info for info in whole if info.end <= cut]
        assert list(iter_batches(blob, 0, cut)) == [info for info in whole if info.end <= cut]
    assert list(iter_batches(blob, whole[1].position)) == whole[1:]


def test_iter_batches_stops_at_a_nonsense_length() -> None:
    blob = bytearray(batches_of([1, 1]))
    second = parse_batch_header(blob).size
    struct.pack_into(">i", blob, second + 8, -12)
    assert len(list(islice(iter_batches(blob), 3))) == 1


def test_scan_valid_prefix_on_a_torn_tail() -> None:
    blob = bytes(batches_of([2, 1, 3]))
    whole = list(iter_batches(blob))
    for cut in range(len(blob) + 1):
        valid = [info for info in whole if info.end <= cut]
        assert scan_valid_prefix(blob[:cut]) == (valid, valid[-1].end if valid else 0)


@SETTINGS
@given(garbage=st.binary(min_size=1, max_size=200))
def test_scan_valid_prefix_stops_at_garbage(garbage: bytes) -> None:
    blob = bytes(batches_of([2, 2]))
    batches, valid = scan_valid_prefix(blob + garbage)
    assert valid == len(blob)
    assert batches == list(iter_batches(blob))


def test_scan_valid_prefix_from_a_start_position() -> None:
    blob = bytes(batches_of([2, 2, 2]))
    whole = list(iter_batches(blob))
    assert scan_valid_prefix(blob, whole[1].position) == (whole[1:], len(blob))


@pytest.mark.parametrize("batch_length", [-12, 9, BATCH_OVERHEAD - 12 - 1])
def test_a_header_with_an_impossible_length_ends_the_valid_prefix(batch_length: int) -> None:
    # A CRC of 0 matches the empty CRC32C region that such a length would imply.
    header = bytearray(BATCH_OVERHEAD)
    struct.pack_into(">qiib", header, 0, 100, batch_length, 0, 2)
    assert scan_valid_prefix(GOLDEN + header) == (list(iter_batches(GOLDEN)), len(GOLDEN))
    assert error_code_of(GOLDEN + header) is ErrorCode.corrupt_message


def test_scan_valid_prefix_stops_when_offsets_go_backwards() -> None:
    blob = batches_of([2, 2])
    second = parse_batch_header(blob).size
    struct.pack_into(">q", blob, second, 1)  # overlaps the first batch's offsets 0..1
    batches, valid = scan_valid_prefix(blob)
    assert (len(batches), valid) == (1, second)


# --- decoding garbage ------------------------------------------------------------------


@pytest.mark.parametrize("compression", CODECS)
@settings(SETTINGS, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decode_raises_only_invalid_records_on_garbage(
    compression: int, data: st.DataObject
) -> None:
    batch = bytearray(batches_of([4], compression))
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        index = data.draw(st.integers(min_value=BATCH_OVERHEAD, max_value=len(batch) - 1))
        batch[index] = data.draw(st.integers(min_value=0, max_value=255))
    try:
        decode_records(batch)
    except InvalidRecordsError as error:
        assert error.error_code is ErrorCode.corrupt_message


@pytest.mark.parametrize("cut", [BATCH_OVERHEAD - 1, BATCH_OVERHEAD + 3, -1])
def test_decode_rejects_truncated_batches(cut: int) -> None:
    with pytest.raises(InvalidRecordsError):
        decode_records(GOLDEN[:cut])


def test_any_negative_key_length_reads_as_null_as_in_java() -> None:
    batch = bytearray(build_batch([(None, None)]))
    body = b"\x0c\x00\x00\x00\x01\x01\x00"  # length 6, attributes, deltas, key -1, value -1
    assert batch.endswith(body)
    batch[-3] = 0x03  # key length -2
    recrc(batch)
    assert decode_records(batch) == [Record(0, 0, None, None)]


def test_a_header_key_may_not_be_null() -> None:
    batch = bytearray(GOLDEN)
    position = batch.index(b"\x0atrace")
    batch[position] = 0x01  # key length -1
    recrc(batch)
    with pytest.raises(InvalidRecordsError, match="header key"):
        decode_records(batch)


def test_decode_rejects_bytes_left_after_the_last_record() -> None:
    batch = bytearray(GOLDEN + b"\x00")
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    with pytest.raises(InvalidRecordsError):
        decode_records(batch)


def test_decode_reads_raw_snappy_as_librdkafka_may_send() -> None:
    plain = GOLDEN[BATCH_OVERHEAD:]
    batch = bytearray(GOLDEN[:BATCH_OVERHEAD] + bytes(cramjam.snappy.compress_raw(plain)))
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    batch[ATTRIBUTES_OFFSET + 1] |= SNAPPY
    recrc(batch)
    assert validate_batches(batch, MAX)[0].compression == SNAPPY
    assert decode_records(batch) == GOLDEN_RECORDS


# --- golden bytes and kafka-python -----------------------------------------------------


def test_golden_batch_from_kafka_python() -> None:
    [info] = validate_batches(GOLDEN, MAX)
    assert info == BatchInfo(
        position=0,
        size=len(GOLDEN),
        base_offset=0,
        last_offset_delta=2,
        partition_leader_epoch=0,
        magic=2,
        crc=0xA478CE21,
        attributes=0,
        base_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_005,
        producer_id=4000,
        producer_epoch=3,
        base_sequence=17,
        record_count=3,
    )
    assert decode_records(GOLDEN) == GOLDEN_RECORDS
    encoded = build_batch(
        GOLDEN_RECORDS,
        producer_id=4000,
        producer_epoch=3,
        base_sequence=17,
        partition_leader_epoch=0,
    )
    assert encoded == GOLDEN


def test_decode_reads_the_batch_at_the_start_of_a_longer_view() -> None:
    segment = memoryview(b"\x00" * 5 + GOLDEN + batches_of([2]))
    assert decode_records(segment[5:]) == GOLDEN_RECORDS


@pytest.fixture
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give kafka-python codec back ends from cramjam (its optional libraries are absent).

    For snappy only the block codec is swapped: kafka-python's own xerial framing runs.
    For lz4 and zstd the frames come from cramjam, so those cases check the batch
    structure around them (attributes, lengths, CRC), not an independent codec.
    """
    monkeypatch.setattr(
        kafka.codec,
        "snappy",
        SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        ),
    )
    monkeypatch.setattr(kafka.codec, "lz4", SimpleNamespace())
    monkeypatch.setattr(kafka.codec, "zstd", SimpleNamespace())
    monkeypatch.setattr(kafka_records, "lz4_encode", lambda d: bytes(cramjam.lz4.compress(d)))
    monkeypatch.setattr(kafka_records, "lz4_decode", lambda d: bytes(cramjam.lz4.decompress(d)))
    monkeypatch.setattr(kafka_records, "zstd_encode", lambda d: bytes(cramjam.zstd.compress(d)))
    monkeypatch.setattr(kafka_records, "zstd_decode", lambda d: bytes(cramjam.zstd.decompress(d)))


def kafka_python_view(batch: bytes) -> list[Record]:
    reader = DefaultRecordBatch(batch)
    assert reader.validate_crc()
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in reader]


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("compression", CODECS)
@settings(SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=record_lists())
def test_kafka_python_reads_our_batches(compression: int, records: list[Record]) -> None:
    assert kafka_python_view(build_batch(records, compression=compression)) == records


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("compression", CODECS)
@settings(SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=record_lists())
def test_we_read_kafka_python_batches(compression: int, records: list[Record]) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=MAX,
    )
    for record in records:
        builder.append(
            record.offset, record.timestamp, record.key, record.value, list(record.headers)
        )
    batch = bytes(builder.build())
    [info] = validate_batches(batch, MAX)
    # kafka-python falls back to no compression when compressing does not shrink the data.
    assert info.compression in {compression, NO_COMPRESSION}
    assert decode_records(batch) == records
