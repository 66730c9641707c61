"""Log compaction's pure core: the offset map, one cleaning round's batch filter (checked
against a brute-force model of Kafka's rules), the cleaner's choice of logs and segment
groups, and the record-batch helpers it relies on."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.log.cleaning_plan import (
    LogToClean,
    SegmentSummary,
    dirty_ratio,
    filthiest,
    group_segments_by_size,
    log_to_clean,
)
from odradek.log.compaction import Cleaning, OffsetMap, build_offset_map
from odradek.log.txn_index import AbortedTxn
from odradek.protocol.control import ControlType, read_marker
from odradek.protocol.record_codec import (
    Record,
    build_batch,
    decode_records,
    empty_batch,
    keyless_records,
)
from odradek.protocol.records import (
    BATCH_OVERHEAD,
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NO_COMPRESSION,
    SNAPPY,
    ZSTD,
    parse_batch_header,
    scan_valid_prefix,
    validate_batches,
)

CODECS = [NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD]
_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def marker(producer_id: int, commit: bool, offset: int, epoch: int = 0) -> bytes:
    control = ControlType.COMMIT if commit else ControlType.ABORT
    return build_batch(
        [(_MARKER_KEY.pack(0, control), _MARKER_VALUE.pack(0, 3))],
        base_offset=offset, timestamp_ms=offset, producer_id=producer_id,
        producer_epoch=epoch, is_transactional=True, is_control=True)


def data(offset: int, *pairs: tuple[bytes | None, bytes | None], **options: object) -> bytes:
    return build_batch(list(pairs), base_offset=offset, timestamp_ms=100 + offset,
                       **options)  # type: ignore[arg-type]


def filled_map(latest_offset: int, **keys: int) -> OffsetMap:
    offset_map = OffsetMap(24 * 100, 1.0)
    for key, offset in keys.items():
        offset_map.put(key.encode(), offset)
    offset_map.update_latest_offset(latest_offset)
    return offset_map


def cleaning(offset_map: OffsetMap, now_ms: int = 1_000, retention_ms: int = 500,
             aborted: list[AbortedTxn] | None = None,
             tails: dict[int, tuple[int | None, int]] | None = None,
             upper_bound: int | None = None) -> Cleaning:
    return Cleaning(offset_map, now_ms=now_ms, delete_retention_ms=retention_ms,
                    aborted=aborted or [], producer_tails=tails or {},
                    upper_bound_offset=upper_bound)


# ---------------------------------------------------------------------------------------
# records.py helpers


@pytest.mark.parametrize("compression", CODECS)
def test_rebuilt_batch_keeps_timestamps_under_a_delete_horizon(compression: int) -> None:
    records = [Record(10, 1_000, b"k", b"v"), Record(12, 900, b"j", None, (("h", b"x"),))]
    batch = build_batch(records, base_offset=10, compression=compression, producer_id=4,
                        producer_epoch=2, base_sequence=7, partition_leader_epoch=9,
                        is_transactional=True, delete_horizon_ms=50_000, last_offset_delta=5)
    info = validate_batches(batch, 1 << 20, from_client=False)[0]
    assert info.delete_horizon_ms == info.base_timestamp == 50_000
    assert (info.last_offset, info.record_count, info.max_timestamp) == (15, 2, 1_000)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (4, 2, 7)
    assert (info.partition_leader_epoch, info.is_transactional, info.compression) == (
        9, True, compression)
    assert decode_records(batch) == records


def test_log_append_time_rebuild_keeps_the_append_time() -> None:
    batch = build_batch([(b"k", b"v")], base_offset=3, timestamp_ms=5, log_append_time_ms=777)
    info = parse_batch_header(batch)
    assert info.timestamp_type == LOG_APPEND_TIME
    assert info.max_timestamp == 777 and info.delete_horizon_ms is None
    assert [record.timestamp for record in decode_records(batch)] == [777]


def test_last_offset_delta_may_not_cut_records_off() -> None:
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v"), (b"j", b"w")], last_offset_delta=0)


def test_empty_batch_is_a_valid_header_without_records() -> None:
    batch = empty_batch(base_offset=100, last_offset=104, producer_id=8, producer_epoch=3,
                        base_sequence=40, partition_leader_epoch=6,
                        timestamp_type=LOG_APPEND_TIME, max_timestamp=1234,
                        is_transactional=True, is_control=True)
    assert len(batch) == BATCH_OVERHEAD
    info = validate_batches(batch, 1 << 20, from_client=False)[0]
    assert (info.base_offset, info.last_offset, info.record_count) == (100, 104, 0)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (8, 3, 40)
    assert (info.partition_leader_epoch, info.max_timestamp, info.base_timestamp) == (6, 1234, -1)
    assert info.timestamp_type == LOG_APPEND_TIME and info.is_transactional and info.is_control
    assert info.compression == NO_COMPRESSION and info.delete_horizon_ms is None
    assert decode_records(batch) == []


@pytest.mark.parametrize("compression", CODECS)
def test_keyless_records_in_compressed_batches(compression: int) -> None:
    keyed = build_batch([(b"a", b"1"), (b"b", None)], compression=compression)
    assert keyless_records(keyed) == []
    mixed = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")],
                        compression=compression)
    assert keyless_records(mixed) == [1, 3]
    assert keyless_records(build_batch([(None, None)], compression=compression)) == [0]


# ---------------------------------------------------------------------------------------
# OffsetMap and build_offset_map


def test_offset_map_capacity_follows_kafkas_slots_and_load_factor() -> None:
    offset_map = OffsetMap(24 * 10 + 23, load_factor=0.5)
    assert (offset_map.slots, offset_map.capacity) == (10, 5)
    assert offset_map.latest_offset == -1 and offset_map.get(b"x") == -1
    for index in range(5):
        assert offset_map.put(b"key%d" % index, index)
    assert not offset_map.put(b"another", 9)
    assert offset_map.get(b"another") == -1 and offset_map.latest_offset == 4
    assert offset_map.put(b"key0", 11)
    assert (offset_map.get(b"key0"), offset_map.size, offset_map.latest_offset) == (11, 5, 11)
    assert offset_map.utilization == 0.5
    offset_map.clear()
    assert (offset_map.size, offset_map.latest_offset, offset_map.get(b"key0")) == (0, -1, -1)
    with pytest.raises(ValueError):
        OffsetMap(24, load_factor=0.9)


def test_build_offset_map_skips_markers_aborted_data_and_old_records() -> None:
    batches = [
        data(0, (b"old", b"1")),
        data(1, (b"a", b"1"), (None, b"x"), producer_id=5, producer_epoch=0, base_sequence=0,
             is_transactional=True),
        marker(5, commit=False, offset=3),
        data(4, (b"b", b"1"), (b"a", b"2")),
    ]
    offset_map = OffsetMap(24 * 10, 1.0)
    full = build_offset_map(batches, offset_map, 1, 10, [AbortedTxn(5, 1, 3, 1)])
    assert not full
    assert offset_map.get(b"old") == -1 and offset_map.get(b"a") == 5
    assert offset_map.get(b"b") == 4 and offset_map.size == 2
    assert offset_map.latest_offset == 9  # fast-forwarded to the end of the range


def test_build_offset_map_ignores_aborted_transactions_ended_before_the_range() -> None:
    # Producer 5 aborted [0, 2] and then committed a transaction from offset 3: only the
    # batches from the dirty range on are walked, and its later data must be mapped.
    batches = [_txn(5, 3, (b"a", b"1")), marker(5, commit=True, offset=4)]
    offset_map = OffsetMap(24 * 10, 1.0)
    build_offset_map(batches, offset_map, 3, 5, [AbortedTxn(5, 0, 2, 0)])
    assert offset_map.get(b"a") == 3


def test_build_offset_map_stops_when_full_even_inside_a_batch() -> None:
    batches = [data(0, (b"a", b"1"), (b"b", b"1")), data(2, (b"c", b"1"), (b"a", b"2"))]
    offset_map = OffsetMap(24 * 3, 1.0)
    assert build_offset_map(batches, offset_map, 0, 4, [])
    # Full at 3 keys even though "a" is already mapped: the round ends after offset 2.
    assert offset_map.latest_offset == 2 and offset_map.get(b"a") == 0
    later = cleaning(offset_map)
    assert [later.filter_batch(batch) for batch in batches] == batches


# ---------------------------------------------------------------------------------------
# Cleaning.filter_batch: single rules


def test_untouched_batches_pass_through_byte_for_byte() -> None:
    batch = data(0, (b"a", b"1"), (b"b", b"2"), compression=GZIP)
    assert cleaning(filled_map(5, a=0, b=1)).filter_batch(batch) is batch
    view = memoryview(batch + b"trailing")
    assert bytes(cleaning(filled_map(5, a=0, b=1)).filter_batch(view) or b"") == batch


def test_records_past_the_map_are_kept_even_keyless() -> None:
    batch = data(10, (None, b"1"), (b"a", b"2"))
    assert cleaning(filled_map(9, a=50)).filter_batch(batch) is batch


def test_superseded_and_keyless_records_go_and_the_batch_keeps_its_offsets() -> None:
    batch = data(0, (b"a", b"1"), (None, b"x"), (b"b", b"2"), (b"a", b"3"), compression=LZ4,
                 producer_id=3, producer_epoch=1, base_sequence=20)
    run = cleaning(filled_map(10, a=3, b=9))
    out = run.filter_batch(batch)
    assert out is not None
    info = parse_batch_header(out)
    assert (info.base_offset, info.last_offset, info.base_sequence) == (0, 3, 20)
    assert info.compression == LZ4 and info.delete_horizon_ms is None
    assert [(r.offset, r.key, r.value) for r in decode_records(out)] == [(3, b"a", b"3")]
    stats = run.stats
    assert (stats.records_read, stats.records_retained, stats.invalid_records) == (4, 1, 1)
    assert (stats.bytes_read, stats.bytes_written) == (len(batch), len(out))


def test_tombstone_gets_a_horizon_and_goes_once_it_passed() -> None:
    log = [data(0, (b"a", b"1")), data(1, (b"a", None), (b"b", b"2"))]
    offset_map = filled_map(1, a=1, b=2)
    first = cleaning(offset_map, now_ms=1_000, retention_ms=500)
    assert first.filter_batch(log[0]) is None
    stamped = first.filter_batch(log[1])
    assert stamped is not None
    info = parse_batch_header(stamped)
    assert info.delete_horizon_ms == 1_500
    assert decode_records(stamped) == decode_records(log[1])
    # The next round has a new dirty section; the tombstone's key is not in its map.
    later = filled_map(5, c=5)
    assert cleaning(later, now_ms=1_499).filter_batch(stamped) is stamped
    out = cleaning(later, now_ms=1_500).filter_batch(stamped)
    assert out is not None
    assert [(r.key, r.value) for r in decode_records(out)] == [(b"b", b"2")]
    assert parse_batch_header(out).delete_horizon_ms == 1_500


def test_active_producers_last_batch_stays_empty() -> None:
    batch = data(0, (b"a", b"1"), (b"a", b"2"), producer_id=7, producer_epoch=2,
                 base_sequence=30, compression=SNAPPY)
    offset_map = filled_map(10, a=8)
    assert cleaning(offset_map).filter_batch(batch) is None
    out = cleaning(offset_map, tails={7: (1, 2)}).filter_batch(batch)
    assert out is not None and len(out) == BATCH_OVERHEAD
    info = parse_batch_header(out)
    assert (info.base_offset, info.last_offset, info.record_count) == (0, 1, 0)
    assert (info.producer_id, info.producer_epoch, info.base_sequence) == (7, 2, 30)
    # Only the batch holding the producer's last data offset is kept.
    assert cleaning(offset_map, tails={7: (5, 2)}).filter_batch(batch) is None


def test_last_batch_of_the_round_stays_empty() -> None:
    batch = data(4, (b"a", b"1"), (b"a", b"2"))
    offset_map = filled_map(10, a=8)
    assert cleaning(offset_map, upper_bound=7).filter_batch(batch) is None
    out = cleaning(offset_map, upper_bound=6).filter_batch(batch)
    assert out is not None and parse_batch_header(out).last_offset == 5


def _txn(producer_id: int, offset: int, *pairs: tuple[bytes | None, bytes | None]) -> bytes:
    return data(offset, *pairs, producer_id=producer_id, producer_epoch=0, base_sequence=offset,
                is_transactional=True)


def test_abort_marker_stays_while_its_data_is_seen_then_is_stamped_then_goes() -> None:
    entry = AbortedTxn(1, 0, 2, 0)
    log = [_txn(1, 0, (b"a", b"1"), (b"b", b"1")), marker(1, commit=False, offset=2)]
    offset_map = filled_map(2, a=0, b=1)
    first = cleaning(offset_map, aborted=[entry])
    assert first.filter_batch(log[0]) is None
    assert first.filter_batch(log[1]) is log[1]
    assert first.take_retained_aborted() == [entry]
    assert first.take_retained_aborted() == []

    second = cleaning(offset_map, now_ms=1_000, retention_ms=500, aborted=[entry])
    stamped = second.filter_batch(log[1])
    assert stamped is not None and stamped is not log[1]
    assert parse_batch_header(stamped).delete_horizon_ms == 1_500
    assert read_marker(stamped) == (ControlType.ABORT, 3)
    assert second.take_retained_aborted() == []

    assert cleaning(offset_map, now_ms=1_499).filter_batch(stamped) is stamped
    assert cleaning(offset_map, now_ms=1_500).filter_batch(stamped) is None
    # An active producer whose last entry is this marker keeps it, emptied.
    kept = cleaning(offset_map, now_ms=1_500, tails={1: (None, 0)}).filter_batch(stamped)
    assert kept is not None and parse_batch_header(kept).record_count == 0
    assert cleaning(offset_map, now_ms=1_500, tails={1: (None, 1)}).filter_batch(stamped) is None


def test_aborted_batch_holding_the_producers_tail_stays_empty() -> None:
    batch = _txn(1, 0, (b"a", b"1"))
    out = cleaning(filled_map(5), aborted=[AbortedTxn(1, 0, 1, 0)],
                   tails={1: (0, 0)}).filter_batch(batch)
    assert out is not None and parse_batch_header(out).record_count == 0


def test_commit_marker_goes_only_once_its_transaction_is_gone() -> None:
    log = [_txn(2, 0, (b"a", b"1")), marker(2, commit=True, offset=1), data(2, (b"a", b"2"))]
    offset_map = filled_map(2, a=2)
    first = cleaning(offset_map)
    assert first.filter_batch(log[0]) is None  # traversed, its record superseded
    assert first.filter_batch(log[1]) is log[1]
    assert first.filter_batch(log[2]) is log[2]

    stamped = cleaning(offset_map, now_ms=1_000, retention_ms=500).filter_batch(log[1])
    assert stamped is not None and parse_batch_header(stamped).delete_horizon_ms == 1_500
    assert cleaning(offset_map, now_ms=1_500).filter_batch(stamped) is None


def test_markers_of_interleaved_producers_are_tracked_apart() -> None:
    entry = AbortedTxn(1, 0, 3, 0)
    log = [_txn(1, 0, (b"a", b"1")), _txn(2, 1, (b"b", b"1")),
           marker(2, commit=True, offset=2), marker(1, commit=False, offset=3)]
    run = cleaning(filled_map(3, a=0, b=1), aborted=[entry])
    outputs = [run.filter_batch(batch) for batch in log]
    assert outputs[0] is None
    assert outputs[1] is log[1] and outputs[2] is log[2] and outputs[3] is log[3]


def test_empty_control_batches_were_already_cleaned() -> None:
    batch = empty_batch(base_offset=4, last_offset=4, producer_id=1, producer_epoch=0,
                        is_transactional=True, is_control=True)
    assert cleaning(filled_map(10)).filter_batch(batch) is None


# ---------------------------------------------------------------------------------------
# The model-based property: random logs, cleaned in one or many rounds.


KEYS = [b"a", b"b", b"c", b"d", b"e", None]


@dataclass
class History:
    batches: list[bytes] = field(default_factory=list)
    records: list[tuple[Record, bool]] = field(default_factory=list)
    """Every data record, and whether its transaction was aborted."""
    aborted: list[AbortedTxn] = field(default_factory=list)
    tails: dict[int, tuple[int | None, int]] = field(default_factory=dict)

    @property
    def next_offset(self) -> int:
        return parse_batch_header(self.batches[-1]).next_offset if self.batches else 0


record_strategy = st.tuples(
    st.sampled_from(KEYS),
    st.one_of(st.none(), st.binary(max_size=6)),
    st.lists(st.tuples(st.sampled_from(["h", "é"]), st.one_of(st.none(), st.binary(max_size=3))),
             max_size=1),
)
step_strategy = st.tuples(
    st.sampled_from(["plain", "idempotent", "txn", "txn", "end"]),
    st.integers(1, 3),
    st.lists(record_strategy, min_size=1, max_size=4),
    st.sampled_from(CODECS),
    st.booleans(),
    st.booleans(),
)


@st.composite
def histories(draw: st.DrawFn) -> tuple[History, list[int]]:
    history = History()
    open_txns: dict[int, tuple[int, list[int]]] = {}
    sequences: dict[int, int] = {}

    def end_txn(producer_id: int, commit: bool) -> None:
        first_offset, records = open_txns.pop(producer_id)
        offset = history.next_offset
        history.batches.append(marker(producer_id, commit, offset))
        if not commit:
            history.aborted.append(AbortedTxn(producer_id, first_offset, offset, first_offset))
            for index in records:
                history.records[index] = (history.records[index][0], True)

    for kind, txn_producer, pairs, codec, append_time, commit in draw(
            st.lists(step_strategy, min_size=2, max_size=20)):
        offset = history.next_offset
        if kind == "end":
            if txn_producer in open_txns:
                end_txn(txn_producer, commit)
            continue
        producer_id = {"plain": -1, "idempotent": 10, "txn": txn_producer}[kind]
        records = [Record(offset + index, 1_000 + offset + index, key, value, tuple(headers))
                   for index, (key, value, headers) in enumerate(pairs)]
        sequence = sequences.get(producer_id, 0)
        batch = build_batch(
            records, base_offset=offset, compression=codec,
            producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=sequence if producer_id >= 0 else -1, partition_leader_epoch=offset % 3,
            is_transactional=kind == "txn",
            log_append_time_ms=5_000 + offset if append_time else None)
        if producer_id >= 0:
            sequences[producer_id] = sequence + len(records)
            history.tails[producer_id] = (offset + len(records) - 1, 0)
        if kind == "txn":
            open_txns.setdefault(producer_id, (offset, []))[1].extend(
                range(len(history.records), len(history.records) + len(records)))
        history.records += [(record, False) for record in decode_records(batch)]
        history.batches.append(batch)
    for producer_id in sorted(open_txns):
        end_txn(producer_id, draw(st.booleans()))
    while len(history.batches) < 2:
        history.batches.append(data(history.next_offset, (b"z", b"z")))
        history.records.append((decode_records(history.batches[-1])[0], False))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(history.batches) - 1), min_size=1,
                                    max_size=5))))
    return history, cuts


Segment = tuple[int, list[bytes], list[AbortedTxn]]
"""Base offset, batches, aborted-transaction index."""


def split(history: History, cuts: list[int]) -> list[Segment]:
    segments: list[Segment] = []
    for start, stop in zip([0, *cuts], [*cuts, len(history.batches)], strict=True):
        batches = history.batches[start:stop]
        first = parse_batch_header(batches[0]).base_offset
        last = parse_batch_header(batches[-1]).last_offset
        index = [txn for txn in history.aborted if first <= txn.last_offset <= last]
        segments.append((first, batches, index))
    return segments


def clean_round(segments: list[Segment], first_dirty: int, end: int, map_keys: int,
                now_ms: int, retention_ms: int, tails: dict[int, tuple[int | None, int]]
                ) -> tuple[list[Segment], int]:
    """One round of the cleaner over `segments` (the last is active); returns the new
    segments and the new cleaner checkpoint."""
    aborted = [txn for _, _, index in segments for txn in index]
    offset_map = OffsetMap(24 * map_keys, 1.0)
    dirty = [batch for base, batches, _ in segments if base < end for batch in batches]
    build_offset_map(dirty, offset_map, first_dirty, end, aborted)
    clean_end = offset_map.latest_offset + 1
    assert first_dirty < clean_end <= end
    run = Cleaning(offset_map, now_ms=now_ms, delete_retention_ms=retention_ms,
                   aborted=aborted, producer_tails=tails, upper_bound_offset=end)
    cleaned: list[Segment] = []
    for base, batches, index in segments:
        if base >= clean_end:
            cleaned.append((base, batches, index))
            continue
        kept = [bytes(out) for batch in batches if (out := run.filter_batch(batch)) is not None]
        cleaned.append((base, kept, run.take_retained_aborted()))
    stats = run.stats
    assert stats.records_retained <= stats.records_read
    assert stats.bytes_read == sum(len(b) for base, bs, _ in segments if base < clean_end
                                   for b in bs)
    return cleaned, clean_end


def clean_fully(segments: list[Segment], first_dirty: int, map_keys: int, now_ms: int,
                retention_ms: int, tails: dict[int, tuple[int | None, int]]
                ) -> list[Segment]:
    end = segments[-1][0]
    while first_dirty < end:
        segments, first_dirty = clean_round(segments, first_dirty, end, map_keys, now_ms,
                                            retention_ms, tails)
    return segments


def expected_records(history: History, end: int, horizon_passed_below: int) -> list[Record]:
    """Kafka's rule by brute force: below `end`, the last record of each key, not aborted,
    tombstones only until a round after their horizon; from `end` on, everything."""
    latest: dict[bytes, int] = {}
    for record, aborted in history.records:
        if record.offset < end and not aborted and record.key is not None:
            latest[record.key] = record.offset
    return [
        record for record, aborted in history.records
        if record.offset >= end
        or (not aborted and record.key is not None and latest[record.key] == record.offset
            and (record.value is not None or record.offset >= horizon_passed_below))
    ]


def check_segments(history: History, segments: list[Segment]) -> list[Record]:
    """Structural checks on a cleaned log; returns its data records."""
    originals = {parse_batch_header(batch).base_offset: parse_batch_header(batch)
                 for batch in history.batches}
    blob = b"".join(batch for _, batches, _ in segments for batch in batches)
    if not blob:
        return []
    validate_batches(blob, 1 << 20, from_client=False)
    infos, end = scan_valid_prefix(blob)
    assert end == len(blob)
    records: list[Record] = []
    position = 0
    for info in infos:
        original = originals[info.base_offset]
        assert info.last_offset == original.last_offset
        assert (info.producer_id, info.producer_epoch, info.base_sequence) == (
            original.producer_id, original.producer_epoch, original.base_sequence)
        assert info.partition_leader_epoch == original.partition_leader_epoch
        assert info.timestamp_type == original.timestamp_type
        assert (info.is_transactional, info.is_control) == (
            original.is_transactional, original.is_control)
        if info.record_count:
            assert info.compression == original.compression
        batch = blob[position:info.end]
        position = info.end
        if info.is_control:
            if info.record_count:
                original_batch = history.batches[[parse_batch_header(b).base_offset
                                                  for b in history.batches].index(
                                                      info.base_offset)]
                assert read_marker(batch) == read_marker(original_batch)
        else:
            records += decode_records(batch)
    kept_lasts = {info.last_offset for info in infos}
    for last_data_offset, _ in history.tails.values():
        assert last_data_offset in kept_lasts
    return records


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(1, 6))
def test_cleaning_matches_the_model(case: tuple[History, list[int]], map_keys: int) -> None:
    history, cuts = case
    retention = 10_000
    segments = split(history, cuts)
    end = segments[-1][0]
    cleaned = clean_fully(segments, 0, map_keys, 1_000, retention, history.tails)
    assert check_segments(history, cleaned) == expected_records(history, end, 0)
    # A round with a big map gives the same records as many rounds with a small one.
    single = clean_fully(segments, 0, 1_000, 1_000, retention, history.tails)
    assert check_segments(history, single) == expected_records(history, end, 0)

    # Later, past the horizon stamped above, with the old active segment now dirty.
    log_end = history.next_offset
    later = clean_fully([*cleaned, (log_end, [], [])], end, map_keys, 1_000 + retention,
                        retention, history.tails)
    assert check_segments(history, later) == expected_records(history, log_end, end)


# ---------------------------------------------------------------------------------------
# Choosing logs and grouping segments


def test_group_segments_by_size_respects_log_and_index_sizes() -> None:
    segments = [SegmentSummary(0, 40, offset_index_bytes=8, time_index_bytes=12),
                SegmentSummary(10, 50, offset_index_bytes=8, time_index_bytes=12),
                SegmentSummary(20, 20, offset_index_bytes=8, time_index_bytes=12),
                SegmentSummary(30, 60, offset_index_bytes=8, time_index_bytes=12),
                SegmentSummary(40, 10, offset_index_bytes=8, time_index_bytes=12)]
    bases = [[s.base_offset for s in group]
             for group in group_segments_by_size(segments, 100, 1_000, 50)]
    assert bases == [[0, 10], [20, 30, 40]]
    bases = [[s.base_offset for s in group]
             for group in group_segments_by_size(segments, 1_000, 24, 50)]
    assert bases == [[0, 10], [20, 30], [40]]
    assert group_segments_by_size([], 100, 100, 0) == []


def test_group_segments_by_size_keeps_offsets_within_int32() -> None:
    limit = 2**31 - 1
    segments = [SegmentSummary(0, 10), SegmentSummary(100, 10), SegmentSummary(limit, 10),
                SegmentSummary(limit + 50, 0), SegmentSummary(3 * limit, 10)]
    groups = group_segments_by_size(segments, 10_000, 10_000, 3 * limit + 10)
    # 100's last offset is estimated from the next base: limit - 1 fits, limit + 49 does not;
    # the empty segment is exempt from the check.
    assert [[s.base_offset for s in group] for group in groups] == [
        [0, 100], [limit, limit + 50], [3 * limit]]


def test_dirty_ratio() -> None:
    assert dirty_ratio(0, 0) == 0.0
    assert dirty_ratio(300, 100) == 0.25


def _log(segments: list[SegmentSummary], **overrides: object) -> LogToClean:
    arguments: dict[str, object] = dict(
        checkpoint=None, log_start_offset=0, log_end_offset=400, last_stable_offset=400,
        min_compaction_lag_ms=0, max_compaction_lag_ms=2**63 - 1, min_cleanable_ratio=0.5,
        now_ms=1_000_000)
    arguments.update(overrides)
    return log_to_clean(segments, **arguments)  # type: ignore[arg-type]


SEGMENTS = [SegmentSummary(0, 100, 10_000, 9_000), SegmentSummary(100, 100, 20_000, 19_000),
            SegmentSummary(200, 100, 990_000, 980_000), SegmentSummary(300, 50, 999_000, None)]


def test_log_to_clean_bounds_the_dirty_range() -> None:
    fresh = _log(SEGMENTS)
    assert (fresh.first_dirty_offset, fresh.first_uncleanable_offset) == (0, 300)
    assert (fresh.clean_bytes, fresh.cleanable_bytes, fresh.dirty_ratio) == (0, 300, 1.0)
    assert fresh.needs_cleaning and not fresh.force_update_checkpoint

    half = _log(SEGMENTS, checkpoint=200)
    assert (half.clean_bytes, half.cleanable_bytes) == (200, 100)
    assert half.dirty_ratio == pytest.approx(1 / 3) and not half.needs_cleaning

    # The last stable offset rounds down to its segment's base.
    open_txn = _log(SEGMENTS, last_stable_offset=150)
    assert (open_txn.first_uncleanable_offset, open_txn.cleanable_bytes) == (100, 100)

    # min.compaction.lag.ms stops at the first segment with data too recent.
    lagged = _log(SEGMENTS, min_compaction_lag_ms=100_000)
    assert lagged.first_uncleanable_offset == 200

    # A checkpoint outside the log is reset to the log start.
    for checkpoint in (-5, 500):
        reset = _log(SEGMENTS, checkpoint=checkpoint, log_start_offset=0)
        assert reset.force_update_checkpoint and reset.first_dirty_offset == 0


def test_max_compaction_lag_forces_a_round_below_the_ratio() -> None:
    below = _log(SEGMENTS, checkpoint=200)
    assert not below.needs_compaction_now and not below.needs_cleaning
    forced = _log(SEGMENTS, checkpoint=200, max_compaction_lag_ms=10_000)
    assert forced.needs_compaction_now and forced.needs_cleaning
    # Nothing cleanable: no round, however old the data.
    nothing = _log(SEGMENTS, checkpoint=300, max_compaction_lag_ms=0)
    assert nothing.cleanable_bytes == 0 and not nothing.needs_cleaning


def test_filthiest_picks_the_highest_ratio_among_cleanable_logs() -> None:
    logs = {"fresh": _log(SEGMENTS), "half": _log(SEGMENTS, checkpoint=200),
            "empty": _log([SegmentSummary(0, 0)], log_end_offset=0, last_stable_offset=0)}
    assert filthiest(logs) == "fresh"
    assert filthiest({"half": logs["half"], "empty": logs["empty"]}) is None
