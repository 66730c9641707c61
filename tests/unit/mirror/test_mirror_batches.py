"""The mirror's batch rewriting: what it copies, what it drops, and that the target's
broker accepts what it writes from a client."""

from __future__ import annotations

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from odradek.mirror.batches import (
    SEQUENCE_LIMIT,
    ProducerStamp,
    select_batches,
    stamp_batches,
)
from odradek.mirror.progress import (
    Progress,
    murmur2,
    partition_for,
    progress_key,
    stretch_starts,
)
from odradek.protocol.control import build_marker_batch
from odradek.protocol.record_codec import Record, build_batch, decode_records
from odradek.protocol.records import (
    CREATE_TIME,
    GZIP,
    LZ4,
    NO_COMPRESSION,
    SNAPPY,
    ZSTD,
    assign_offsets,
    iter_batches,
    parse_batch_header,
    validate_batches,
)

CODECS = st.sampled_from([NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD])
MIRROR = ProducerStamp(producer_id=4242, producer_epoch=3, transactional=True)

headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=8)),
                   max_size=3).map(tuple)
records = st.lists(
    st.tuples(st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=40), headers,
              st.integers(0, 10_000)),
    min_size=1, max_size=8)


def source_batch(items: list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None],
                                                                      ...], int]],
                 base_offset: int, codec: int, producer_id: int = 17,
                 transactional: bool = False, offsets: list[int] | None = None,
                 last_offset_delta: int | None = None) -> bytes:
    """A batch as a source broker stores it: offsets assigned, a producer's fields."""
    offsets = offsets or list(range(base_offset, base_offset + len(items)))
    return build_batch(
        [Record(o, 1_700_000_000_000 + t, k, v, h) for o, (k, v, h, t) in
         zip(offsets, items, strict=True)],
        base_offset=base_offset, compression=codec, producer_id=producer_id,
        producer_epoch=0, base_sequence=0, partition_leader_epoch=5,
        is_transactional=transactional, last_offset_delta=last_offset_delta)


def content(record: Record) -> tuple[object, ...]:
    return record.timestamp, record.key, record.value, record.headers


def stamped_records(data: bytes) -> list[Record]:
    return [r for info in iter_batches(data) for r in decode_records(data[info.position:])]


@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), CODECS, st.integers(0, 10**6),
       st.integers(0, SEQUENCE_LIMIT - 1), st.booleans())
def test_rewrite_keeps_every_record_and_is_accepted_from_a_client(
        batches: list[list[tuple]], codec: int, base: int, sequence: int,
        transactional: bool) -> None:
    blob, offset, expected = b"", base, []
    for items in batches:
        batch = source_batch(items, offset, codec)
        expected += decode_records(batch)
        blob += batch
        offset += len(items)
    selection = select_batches(blob, base, [])
    assert selection.next_offset == offset and selection.reencoded == 0
    assert [u for c in selection.chunks for u in c.upstream] == [r.offset for r in expected]
    producer = ProducerStamp(4242, 3, transactional)
    data, next_sequence = stamp_batches(selection.chunks, producer, sequence)
    infos = validate_batches(data, len(data), from_client=True)
    assert next_sequence == (sequence + len(expected)) % SEQUENCE_LIMIT
    assert [content(r) for r in stamped_records(data)] == [content(r) for r in expected]
    for info in infos:
        assert (info.producer_id, info.producer_epoch) == (4242, 3)
        assert info.is_transactional == transactional
        assert info.compression == codec and info.timestamp_type == CREATE_TIME
    assert [i.base_sequence for i in infos][0] == sequence


def test_the_common_path_keeps_the_record_bytes() -> None:
    batch = source_batch([(b"k", b"v" * 100, (("h", b"1"),), 5)] * 3, 10, LZ4)
    data, _ = stamp_batches(select_batches(batch, 10, []).chunks, MIRROR, 0)
    assert data[61:] == batch[61:]


@settings(max_examples=40, deadline=None)
@given(records.filter(lambda r: len(r) >= 2), CODECS, st.data())
def test_a_compacted_batch_is_renumbered_with_its_upstream_offsets(
        items: list[tuple], codec: int, data: st.DataObject) -> None:
    gaps = data.draw(st.lists(st.integers(0, 3), min_size=len(items), max_size=len(items)))
    offsets, at = [], 100
    for gap in gaps:
        at += gap
        offsets.append(at)
        at += 1
    batch = source_batch(items, 100, codec, offsets=offsets, last_offset_delta=at + 2 - 100)
    selection = select_batches(batch, 100, [])
    (chunk,) = selection.chunks
    assert list(chunk.upstream) == offsets and selection.next_offset == at + 3
    assert selection.reencoded == (1 if parse_batch_header(batch).record_count
                                   != parse_batch_header(batch).last_offset_delta + 1 else 0)
    stamped, _ = stamp_batches(selection.chunks, MIRROR, 0)
    validate_batches(stamped, len(stamped), from_client=True)
    assert [content(r) for r in decode_records(stamped)] == [
        content(r) for r in decode_records(batch)]
    assert parse_batch_header(stamped).compression == codec


def test_a_batch_starting_before_the_fetch_position_keeps_only_the_later_records() -> None:
    batch = source_batch([(b"k%d" % i, b"v", (), i) for i in range(5)], 20, GZIP)
    selection = select_batches(batch, 23, [])
    (chunk,) = selection.chunks
    assert list(chunk.upstream) == [23, 24] and selection.reencoded == 1
    stamped, _ = stamp_batches(selection.chunks, MIRROR, 0)
    validate_batches(stamped, len(stamped), from_client=True)
    assert [r.key for r in decode_records(stamped)] == [b"k3", b"k4"]


def test_a_log_append_time_batch_becomes_create_time_with_the_append_time() -> None:
    batch = bytearray(source_batch([(b"k", b"v", (), 0)] * 2, 0, NO_COMPRESSION))
    assign_offsets(batch, validate_batches(batch, len(batch), from_client=False), 0,
                   log_append_time_ms=1_800_000_000_000)
    stamped, _ = stamp_batches(select_batches(batch, 0, []).chunks, MIRROR, 0)
    assert parse_batch_header(stamped).timestamp_type == CREATE_TIME
    assert {r.timestamp for r in decode_records(stamped)} == {1_800_000_000_000}


def test_read_committed_drops_aborted_transactions_and_markers() -> None:
    committed = source_batch([(b"c", b"1", (), 0)], 0, NO_COMPRESSION, producer_id=7,
                             transactional=True)
    aborted = source_batch([(b"a", b"2", (), 0)] * 2, 1, NO_COMPRESSION, producer_id=8,
                           transactional=True)
    plain = source_batch([(b"p", b"3", (), 0)], 3, NO_COMPRESSION, producer_id=9)
    commit = _marker(7, True, 4)
    abort = _marker(8, False, 5)
    later = source_batch([(b"l", b"4", (), 0)], 6, NO_COMPRESSION, producer_id=8,
                         transactional=True)
    selection = select_batches(committed + aborted + plain + commit + abort + later, 0,
                               [(8, 1)])
    assert [list(c.upstream) for c in selection.chunks] == [[0], [3], [6]]
    assert selection.next_offset == 7


def test_the_aborted_list_filters_nothing_without_it() -> None:
    aborted = source_batch([(b"a", b"2", (), 0)], 0, NO_COMPRESSION, producer_id=8,
                           transactional=True)
    assert len(select_batches(aborted, 0, None).chunks) == 1


def test_a_partial_trailing_batch_is_left_for_the_next_fetch() -> None:
    first = source_batch([(b"k", b"v", (), 0)], 0, NO_COMPRESSION)
    second = source_batch([(b"k", b"v", (), 0)], 1, NO_COMPRESSION)
    selection = select_batches(first + second[:-3], 0, [])
    assert selection.next_offset == 1 and len(selection.chunks) == 1


def test_a_corrupt_fetched_batch_is_refused() -> None:
    batch = bytearray(source_batch([(b"k", b"v", (), 0)], 0, NO_COMPRESSION))
    batch[-1] ^= 0xFF
    try:
        select_batches(bytes(batch), 0, [])
    except Exception as error:
        assert "CRC32C" in str(error)
    else:
        raise AssertionError("a corrupt batch was copied")
    assert crc32c.crc32c(b"") == 0


def _marker(producer_id: int, commit: bool, offset: int) -> bytes:
    marker = build_marker_batch(producer_id, 0, 0, commit, 0)
    assign_offsets(marker, validate_batches(marker, len(marker), from_client=False), offset)
    return bytes(marker)


@given(st.binary(max_size=64))
def test_murmur2_is_kafkas(data: bytes) -> None:
    expected = kafka_python_murmur2(data)
    assert murmur2(data) & 0x7FFFFFFF == expected & 0x7FFFFFFF


def test_progress_is_connects_json() -> None:
    assert progress_key("east", "orders", 3) == (
        b'["MirrorSourceConnector",{"cluster":"east","partition":3,"topic":"orders"}]')
    assert Progress(41).value() == b'{"offset":41}'
    assert Progress.decode(Progress(41, ((3, 9),)).value()) == Progress(41, ((3, 9),))
    # Connect's OffsetUtils.validateFormat refuses an offset with a non-primitive value
    # (MM2 then finds no offset and copies the partition again from its start)
    with_syncs = Progress(41, ((3, 9), (40, 47))).value()
    assert with_syncs == b'{"offset":41,"offset_syncs":"3:9,40:47"}'
    assert Progress.decode(with_syncs) == Progress(41, ((3, 9), (40, 47)))
    assert Progress.decode(b'{"offset":41,"offset_syncs":[[3,9]]}') == Progress(41, ((3, 9),))
    assert Progress.decode(None) is None and Progress.decode(b"{}") is None
    assert 0 <= partition_for(progress_key("east", "orders", 3), 25) < 25


def test_stretches_start_where_the_offset_shift_changes() -> None:
    syncs, shift = stretch_starts([range(10, 13), [13, 15, 16], range(17, 18)], 100, None)
    assert syncs == [(10, 100), (15, 104)] and shift == 89
    again, _ = stretch_starts([range(18, 20)], 107, shift)
    assert again == []
    moved, _ = stretch_starts([range(18, 20)], 110, shift)
    assert moved == [(18, 110)]
