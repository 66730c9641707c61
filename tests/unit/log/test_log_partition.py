"""PartitionLog on real files: append, read, rolling, indexes, timestamps, retention."""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.log import AppendResult, LogConfig, OffsetOutOfRangeError, PartitionLog
from odradek.log import segment as segment_module
from odradek.log.partition import RecordBatchTooLargeError
from odradek.protocol.record_codec import Record, build_batch, decode_records
from odradek.protocol.records import iter_batches, validate_batches
from tests.log_config import make_config


def open_log(directory: Path, **overrides: object) -> PartitionLog:
    return PartitionLog.open(directory / "orders-0", make_config(**overrides), 0)


def append(
    log: PartitionLog,
    values: Sequence[bytes],
    timestamp_ms: int = 1_000,
    now_ms: int | None = None,
) -> AppendResult:
    """One batch of `values`, all stamped `timestamp_ms`."""
    blob = bytearray(build_batch([(None, value) for value in values], timestamp_ms=timestamp_ms))
    batches = validate_batches(blob, 1 << 30)
    return log.append(blob, batches, timestamp_ms if now_ms is None else now_ms)


def append_timed(log: PartitionLog, timestamps: Sequence[int], now_ms: int = 0) -> AppendResult:
    """One batch with one record per timestamp; values are the timestamps."""
    records = [Record(i, ts, None, str(ts).encode()) for i, ts in enumerate(timestamps)]
    blob = bytearray(build_batch(records))
    return log.append(blob, validate_batches(blob, 1 << 30), now_ms)


def read_all(
    log: PartitionLog,
    start: int | None = None,
    max_bytes: int = 1 << 20,
    max_offset: int | None = None,
) -> list[Record]:
    """Consume like a client: sequential reads, whole batches, skipping offsets below start."""
    offset = log.log_start_offset if start is None else start
    records: list[Record] = []
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes, max_offset=max_offset).records
        if not data:
            break
        batches = list(iter_batches(data))
        assert sum(batch.size for batch in batches) == len(data), "only whole batches"
        for batch in batches:
            decoded = decode_records(data[batch.position : batch.end])
            records += [record for record in decoded if record.offset >= offset]
        offset = batches[-1].next_offset
    return records


def values_of(records: Sequence[Record]) -> list[bytes | None]:
    return [record.value for record in records]


def log_file_names(log: PartitionLog) -> list[str]:
    return sorted(path.name for path in log.directory.glob("*.log"))


def test_log_config_from_kafka_topic_configs() -> None:
    config = make_config(
        cleanup_policy=["compact", "delete"], message_timestamp_type="LogAppendTime"
    )
    assert config.cleanup_policy == "compact,delete"
    assert config.delete_enabled and config.log_append_time
    assert config.segment_bytes == 1 << 30 and config.index_interval_bytes == 4096
    assert not make_config(cleanup_policy="compact").delete_enabled
    assert not make_config().log_append_time
    with pytest.raises(KeyError):
        LogConfig.from_topic_config({})
    with pytest.raises(TypeError):
        make_config(segment_bytes="1073741824")


# -- append and read --------------------------------------------------------------------


def test_round_trip_across_many_segment_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=2_000, index_interval_bytes=300)
    expected: list[bytes] = []
    for i in range(200):
        values = [b"value-%d-%d" % (i, j) for j in range(i % 4 + 1)]
        result = append(log, values, timestamp_ms=1_000 + i)
        assert result.base_offset == len(expected)
        assert result.last_offset == len(expected) + len(values) - 1
        assert result.log_append_time_ms == -1
        expected += values
    assert log.log_end_offset == len(expected)
    assert len(log.segments) > 10
    assert all(segment.size <= 2_000 for segment in log.segments)
    assert log_file_names(log) == [f"{s.base_offset:020d}.log" for s in log.segments]
    assert log.segments[0].base_offset == 0
    for previous, following in zip(log.segments, log.segments[1:], strict=False):
        assert previous.next_offset == following.base_offset
    records = read_all(log)
    assert [record.offset for record in records] == list(range(len(expected)))
    assert values_of(records) == expected
    assert values_of(read_all(log, max_bytes=1)) == expected
    assert log.size_bytes() == sum(path.stat().st_size for path in log.directory.glob("*.log"))


def test_one_append_of_several_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"a"])
    blob = bytearray(
        build_batch([(None, b"b"), (None, b"c")])
        + build_batch([(None, b"d")])
        + build_batch([(None, b"e")])
    )
    result = log.append(blob, validate_batches(blob, 1 << 20), 0)
    assert (result.base_offset, result.last_offset) == (1, 4)
    assert [batch.base_offset for batch in iter_batches(log.read(0, 1 << 20).records)] == [
        0,
        1,
        3,
        4,
    ]
    assert values_of(read_all(log)) == [b"a", b"b", b"c", b"d", b"e"]


def test_read_from_inside_a_batch_returns_that_whole_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"0", b"1", b"2"])
    append(log, [b"3", b"4"])
    batches = list(iter_batches(log.read(1, 1 << 20).records))
    assert [(batch.base_offset, batch.last_offset) for batch in batches] == [(0, 2), (3, 4)]
    batches = list(iter_batches(log.read(3, 1 << 20).records))
    assert [batch.base_offset for batch in batches] == [3]


def test_read_stops_at_max_bytes_on_a_batch_boundary(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(10):
        append(log, [b"x" * 100, b"%d" % i])
    batch_size = len(log.read(0, 1 << 20, min_one_batch=True).records) // 10
    data = log.read(0, 3 * batch_size + batch_size // 2).records
    assert len(data) == 3 * batch_size
    assert [batch.base_offset for batch in iter_batches(data)] == [0, 2, 4]


def test_first_batch_larger_than_max_bytes_comes_whole_kip74(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"x" * 500])
    append(log, [b"y"])
    data = log.read(0, 100).records
    batches = list(iter_batches(data))
    assert len(batches) == 1 and batches[0].size == len(data) > 500
    assert log.read(0, 100, min_one_batch=False).records == b""


def test_read_is_bounded_by_max_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"0", b"1"])
    append(log, [b"2", b"3"])
    append(log, [b"4"])
    assert values_of(read_all(log, max_offset=4)) == [b"0", b"1", b"2", b"3"]
    # A batch reaching max_offset is held back entirely.
    assert values_of(read_all(log, max_offset=3)) == [b"0", b"1"]
    assert log.read(2, 1 << 20, max_offset=2).records == b""
    assert log.read(2, 1 << 20, max_offset=3).records == b""


def test_read_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"0", b"1"])
    result = log.read(2, 1 << 20)
    assert (result.records, result.log_start_offset, result.log_end_offset) == (b"", 0, 2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 1 << 20)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 1 << 20)


def test_read_parses_only_the_headers_near_the_index_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path, index_interval_bytes=1_000)
    for i in range(2_000):
        append(log, [b"%d" % i])
    batch_size = log.size_bytes() // 2_000
    parses = 0
    real_parse = segment_module.parse_batch_header

    def counting_parse(buf: bytes, position: int = 0) -> object:
        nonlocal parses
        parses += 1
        return real_parse(buf, position)

    monkeypatch.setattr(segment_module, "parse_batch_header", counting_parse)
    records = log.read(1_990, 1).records
    assert decode_records(records)[0].offset == 1_990
    assert parses <= 1_000 // batch_size + 3


# -- rolling ------------------------------------------------------------------------------


def test_segment_ms_rolls_by_record_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=1_000)
    append(log, [b"a"], timestamp_ms=10_000)
    append(log, [b"b"], timestamp_ms=11_000)
    assert len(log.segments) == 1
    append(log, [b"c"], timestamp_ms=11_001)
    assert [segment.base_offset for segment in log.segments] == [0, 2]


def test_segment_ms_counts_from_creation_without_timestamps(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=1_000)
    append(log, [b"a"], timestamp_ms=-1, now_ms=500)
    append(log, [b"b"], timestamp_ms=-1, now_ms=1_000)
    assert len(log.segments) == 1
    append(log, [b"c"], timestamp_ms=-1, now_ms=1_001)
    assert [segment.base_offset for segment in log.segments] == [0, 2]


def test_segment_jitter_only_shortens_the_roll_time(tmp_path: Path) -> None:
    for partition in range(20):
        config = make_config(segment_ms=1_000, segment_jitter_ms=500)
        log = PartitionLog.open(tmp_path / f"t-{partition}", config, 0)
        append(log, [b"a"], timestamp_ms=0)
        append(log, [b"b"], timestamp_ms=500)
        assert len(log.segments) == 1
        append(log, [b"c"], timestamp_ms=1_001)
        assert len(log.segments) == 2


def test_roll_when_the_index_is_full(tmp_path: Path) -> None:
    # 16 bytes hold 2 offset index entries but only 1 time index entry.
    log = open_log(tmp_path, segment_index_bytes=16, index_interval_bytes=0)
    for i in range(6):
        append(log, [b"%d" % i], timestamp_ms=i)
    assert [segment.base_offset for segment in log.segments] == [0, 2, 4]
    assert values_of(read_all(log)) == [b"%d" % i for i in range(6)]


def test_roll_when_offsets_outgrow_the_relative_int32(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    blob = bytearray(build_batch([Record(2**31 - 1, 0, None, b"far")]))
    log.append(blob, validate_batches(blob, 1 << 20, from_client=False), 0)
    assert log.log_end_offset == 2**31
    append(log, [b"next"])
    assert [segment.base_offset for segment in log.segments] == [0, 2**31]
    assert f"{2**31:020d}.log" in log_file_names(log)
    assert values_of(read_all(log)) == [b"far", b"next"]


def test_append_larger_than_a_segment_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=200)
    with pytest.raises(RecordBatchTooLargeError):
        append(log, [b"x" * 300])
    assert log.log_end_offset == 0


def test_explicit_roll_of_an_empty_segment_is_a_no_op(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.roll(0) is log.active_segment
    append(log, [b"a"])
    log.roll(0)
    log.roll(0)
    assert [segment.base_offset for segment in log.segments] == [0, 1]


# -- indexes ------------------------------------------------------------------------------


def test_sparse_index_entries_follow_index_interval_bytes(tmp_path: Path) -> None:
    interval = 700
    log = open_log(tmp_path, index_interval_bytes=interval)
    for i in range(60):
        append(
            log, [b"v" * (i * 7 % 90)] * (i % 3 + 1), timestamp_ms=[5, 3, 9, 9, 12][i % 5] * 100 + i
        )
    log.roll(0)
    segment = log.segments[0]
    data = (log.directory / "00000000000000000000.log").read_bytes()
    expected_index: list[tuple[int, int]] = []
    expected_time: list[tuple[int, int]] = []
    since, max_ts, max_ts_offset = 0, -1, 0
    for batch in iter_batches(data):
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if since > interval:
            expected_index.append((batch.last_offset, batch.position))
            if not expected_time or max_ts > expected_time[-1][0]:
                expected_time.append((max_ts, max_ts_offset))
            since = 0
        since += batch.size
    if max_ts > expected_time[-1][0]:
        expected_time.append((max_ts, max_ts_offset))  # written when the segment rolls
    assert 5 < len(expected_index) < 60
    index_bytes = (log.directory / "00000000000000000000.index").read_bytes()
    assert list(struct.iter_unpack(">ii", index_bytes)) == expected_index
    time_bytes = (log.directory / "00000000000000000000.timeindex").read_bytes()
    assert list(struct.iter_unpack(">qi", time_bytes)) == expected_time
    for offset, position in expected_index:
        assert segment.index.lookup(offset) == position
    for offset in range(log.log_end_offset):
        assert decode_records(log.read(offset, 1).records)[-1].offset >= offset


# -- timestamps ---------------------------------------------------------------------------


TIMESTAMPS = [
    [500, 100, 300],
    [200, 200],
    [700],
    [650, 900, 100],
    [900],
    [50, 60],
    [1_200, 1_100, 1_200],
    [400],
]


def test_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    for i, timestamps in enumerate(TIMESTAMPS * 3):
        append_timed(log, [ts + 1_000 * (i // len(TIMESTAMPS)) for ts in timestamps])
        if i % 5 == 4:
            log.roll(0)
    records = read_all(log)
    assert len(log.segments) > 3
    targets = sorted({record.timestamp + delta for record in records for delta in (-1, 0, 1)})
    for target in [-5, 0, *targets]:
        expected = next(((r.offset, r.timestamp) for r in records if r.timestamp >= target), None)
        assert log.offset_for_timestamp(target) == expected, target
    log.high_watermark = log.log_end_offset
    log.delete_records_before(7)
    assert log.offset_for_timestamp(0) == (7, 900)
    for target in targets:
        kept = (r for r in records if r.offset >= 7 and r.timestamp >= target)
        assert log.offset_for_timestamp(target) == next(
            ((r.offset, r.timestamp) for r in kept), None
        )


def test_offset_for_timestamp_on_an_empty_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None


def test_max_timestamp_offset_is_the_first_record_with_the_largest_timestamp(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path, index_interval_bytes=0)
    for i, timestamps in enumerate(TIMESTAMPS):
        append_timed(log, timestamps)
        if i % 3 == 2:
            log.roll(0)
    # [1_200, 1_100, 1_200] is the 7th batch: offsets 12, 13, 14.
    assert log.max_timestamp_offset() == (12, 1_200)
    append_timed(log, [1_300, 1_300])
    assert log.max_timestamp_offset() == (16, 1_300)


def test_log_append_time_stamps_every_record_and_keeps_the_crc_valid(tmp_path: Path) -> None:
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    result = append(log, [b"a", b"b"], timestamp_ms=5, now_ms=99_000)
    assert result.log_append_time_ms == 99_000
    data = log.read(0, 1 << 20).records
    validate_batches(data, 1 << 20, from_client=False)
    assert [record.timestamp for record in decode_records(data)] == [99_000, 99_000]
    assert log.offset_for_timestamp(50_000) == (0, 99_000)
    assert log.max_timestamp_offset() == (0, 99_000)


# -- flush --------------------------------------------------------------------------------


def test_flush_due_after_flush_messages_and_flush_moves_the_recovery_point(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path, flush_messages=5, segment_bytes=300)
    assert not append(log, [b"a"] * 2).flush_due
    assert not append(log, [b"b"] * 2).flush_due
    assert append(log, [b"c"] * 2).flush_due
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == 6
    assert not append(log, [b"d"]).flush_due


# -- log start offset, retention, truncation -------------------------------------------


def three_segments(tmp_path: Path, **overrides: object) -> PartitionLog:
    """Offsets 0-5, 6-11 and 12-17 (active), two batches each; timestamps 1000/2000/3000."""
    log = open_log(tmp_path, **overrides)
    for i in range(3):
        append(log, [b"%d" % (6 * i + j) for j in range(3)], timestamp_ms=1_000 * (i + 1))
        append(log, [b"%d" % (6 * i + j) for j in range(3, 6)], timestamp_ms=1_000 * (i + 1))
        if i < 2:
            log.roll(0)
    log.high_watermark = log.log_end_offset
    return log


def test_delete_records_before(tmp_path: Path) -> None:
    log = three_segments(tmp_path)
    with pytest.raises(ValueError):
        log.delete_records_before(19)
    log.high_watermark = 10
    with pytest.raises(ValueError):
        log.delete_records_before(11)
    assert log.delete_records_before(7) == 7
    assert log.log_start_offset == 7
    assert [segment.base_offset for segment in log.segments] == [6, 12]
    deleted = log.take_deleted_files()
    assert sorted(path.name for path in deleted) == [
        "00000000000000000000.index.deleted",
        "00000000000000000000.log.deleted",
        "00000000000000000000.timeindex.deleted",
    ]
    assert all(path.exists() for path in deleted)
    assert log_file_names(log) == ["00000000000000000006.log", "00000000000000000012.log"]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 1 << 20)
    assert values_of(read_all(log)) == [b"%d" % i for i in range(7, 18)]
    assert log.delete_records_before(3) == 7
    assert log.take_deleted_files() == []


def test_delete_records_up_to_the_end_keeps_the_active_segment(tmp_path: Path) -> None:
    log = three_segments(tmp_path)
    assert log.delete_records_before(18) == 18
    assert [segment.base_offset for segment in log.segments] == [12]
    assert len(log.remove_segments([])) == 6  # the renamed files of segments 0 and 6
    assert log.read(18, 1 << 20).records == b""
    assert append(log, [b"x"]).base_offset == 18


def test_retention_by_time(tmp_path: Path) -> None:
    log = three_segments(tmp_path, retention_ms=1_500)
    assert log.retention_candidates(now_ms=2_500) == []
    candidates = log.retention_candidates(now_ms=3_600)
    assert [segment.base_offset for segment in candidates] == [0, 6]
    paths = log.remove_segments(candidates)
    assert len(paths) == 6 and all(path.name.endswith(".deleted") for path in paths)
    assert all(path.exists() for path in paths)
    assert log.log_start_offset == 12
    assert log_file_names(log) == ["00000000000000000012.log"]
    assert values_of(read_all(log)) == [b"%d" % i for i in range(12, 18)]


def test_retention_rolls_an_expired_active_segment(tmp_path: Path) -> None:
    log = three_segments(tmp_path, retention_ms=1_500)
    candidates = log.retention_candidates(now_ms=10_000)
    assert [segment.base_offset for segment in candidates] == [0, 6, 12]
    assert log.active_segment.base_offset == 18
    log.remove_segments(candidates)
    assert log.log_start_offset == log.log_end_offset == 18
    assert log.retention_candidates(now_ms=10_000) == []
    assert append(log, [b"x"], timestamp_ms=10_000).base_offset == 18


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = three_segments(tmp_path, retention_ms=1_500)
    log.high_watermark = 11
    assert [s.base_offset for s in log.retention_candidates(now_ms=10_000)] == [0]
    log.high_watermark = 17
    assert [s.base_offset for s in log.retention_candidates(now_ms=10_000)] == [0, 6]
    assert len(log.segments) == 3


def test_retention_by_size(tmp_path: Path) -> None:
    log = three_segments(tmp_path, retention_ms=-1)
    s0, s1, s2 = (segment.size for segment in log.segments)
    for retention_bytes, expected in (
        (0, [0, 6, 12]),
        (s2, [0, 6]),
        (s2 + 1, [0]),
        (s1 + s2, [0]),
        (s1 + s2 + 1, []),
        (-1, []),
    ):
        log.update_config(make_config(retention_ms=-1, retention_bytes=retention_bytes))
        candidates = log.retention_candidates(now_ms=0)
        assert [s.base_offset for s in candidates] == expected, retention_bytes
    assert log.active_segment.base_offset == 18


def test_compact_policy_only_drops_segments_below_the_log_start(tmp_path: Path) -> None:
    config = make_config(retention_ms=1, retention_bytes=0, cleanup_policy=["compact"])
    log = three_segments(tmp_path)
    log.close()
    log = PartitionLog.open(log.directory, config, 0, recovery_point=18, log_start_offset=7)
    log.high_watermark = log.log_end_offset
    assert [segment.base_offset for segment in log.segments] == [0, 6, 12]
    assert [s.base_offset for s in log.retention_candidates(now_ms=10**9)] == [0]
    log.update_config(make_config(retention_ms=1, retention_bytes=0))
    assert [s.base_offset for s in log.retention_candidates(now_ms=10**9)] == [0, 6, 12]


def test_removing_the_active_segment_is_refused(tmp_path: Path) -> None:
    log = three_segments(tmp_path)
    with pytest.raises(ValueError):
        log.remove_segments([log.active_segment])


def test_truncate_to_drops_later_batches_and_segments(tmp_path: Path) -> None:
    log = three_segments(tmp_path, index_interval_bytes=0)
    assert log.truncate_to(8, now_ms=0) == 6  # the batch 6-8 goes whole
    assert log.log_end_offset == 6
    assert [segment.base_offset for segment in log.segments] == [0, 6]
    assert sorted(path.name for path in log.take_deleted_files())[0] == (
        "00000000000000000012.index.deleted"
    )
    assert append(log, [b"new"]).base_offset == 6
    assert values_of(read_all(log)) == [b"%d" % i for i in range(6)] + [b"new"]
    assert log.truncate_to(3, now_ms=0) == 3
    assert values_of(read_all(log)) == [b"0", b"1", b"2"]
    assert log.offset_for_timestamp(0) == (0, 1_000)


def test_truncating_at_the_end_drops_an_epoch_begun_without_records(tmp_path: Path) -> None:
    """A replica that led an epoch without appending to it, then follows a leader that never
    had that epoch: its truncation to its own end must still forget the epoch, or its fetches
    name it and diverge for ever (seen in the fault campaign)."""
    log = three_segments(tmp_path)
    end = log.log_end_offset
    log.leader_epochs.assign(5, 0)
    log.leader_epochs.assign(6, end)
    assert log.truncate_to(end, now_ms=0) == end
    assert log.leader_epochs.latest_epoch == 5
    assert log.log_end_offset == end


def test_truncate_below_the_first_segment_starts_over(tmp_path: Path) -> None:
    log = three_segments(tmp_path)
    log.delete_records_before(12)
    log.truncate_to(5, now_ms=0)
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert append(log, [b"x"]).base_offset == 5


# -- property: whatever the sequence of appends and rolls, reading gives it back ----------


Operation = tuple[str, list[bytes], int]
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(st.binary(max_size=120), min_size=1, max_size=5),
            st.integers(min_value=1, max_value=3),
        ),
        st.tuples(st.just("roll"), st.just([]), st.just(0)),
        st.tuples(st.just("truncate"), st.just([]), st.integers(min_value=0, max_value=100)),
        st.tuples(st.just("reopen"), st.just([]), st.integers(min_value=0, max_value=100)),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=operations,
    segment_bytes=st.integers(min_value=700, max_value=3_000),
    interval=st.integers(min_value=0, max_value=1_000),
    max_bytes=st.integers(min_value=1, max_value=2_000),
)
def test_any_sequence_of_appends_rolls_truncations_and_reopens_reads_back(
    ops: list[Operation], segment_bytes: int, interval: int, max_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = make_config(segment_bytes=segment_bytes, index_interval_bytes=interval)
        directory = Path(tmp) / "orders-0"
        log = PartitionLog.open(directory, config, 0)
        expected: list[bytes] = []
        for kind, values, amount in ops:
            percent = amount * log.log_end_offset // 100
            if kind == "roll":
                log.roll(0)
            elif kind == "truncate":
                del expected[log.truncate_to(percent, now_ms=0) :]
            elif kind == "reopen":  # recovery from a random recovery point
                log.close()
                log = PartitionLog.open(directory, config, 0, recovery_point=percent)
            else:
                blob = bytearray(
                    b"".join(build_batch([(None, v) for v in values]) for _ in range(amount))
                )
                if len(blob) <= segment_bytes:
                    log.append(blob, validate_batches(blob, 1 << 20), 0)
                    expected += values * amount
            assert log.log_end_offset == len(expected)
        assert values_of(read_all(log, max_bytes=max_bytes)) == expected
        for offset in range(0, log.log_end_offset, 7):
            first_batch = decode_records(log.read(offset, max_bytes).records)
            assert [r.value for r in first_batch if r.offset == offset] == [expected[offset]]
        log.close()
        reopened = PartitionLog.open(directory, config, 0)
        assert values_of(read_all(reopened, max_bytes=max_bytes)) == expected
        reopened.close()
