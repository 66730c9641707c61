"""A cleaning pass on real segment files (in-process), its installation into the log, and
the crash safety of the segment swap."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.broker.cleaner_figures import CleanerFigures, LastCleaning
from odradek.log import PartitionLog
from odradek.log.cleaner import CleanerSettings, CleanResult, Throttler, clean_log, job_for
from odradek.log.segment_swap import (
    STAGING_DIR,
    SWAP_MANIFEST,
    CorruptSwapManifestError,
    commit_swap,
    finish_swap,
)
from odradek.protocol.record_codec import Record, build_batch, decode_records
from odradek.protocol.records import validate_batches
from tests.log_config import make_config

SETTINGS = CleanerSettings(map_bytes=1 << 20, load_factor=0.9, io_buffer_bytes=4096,
                           max_io_bytes_per_second=float("inf"))
KEYS = 20


def compacted_log(directory: Path) -> tuple[PartitionLog, dict[bytes, tuple[int, bytes]]]:
    """A compacted log of small segments holding 600 updates of KEYS keys; returns it and the
    latest (offset, value) of each key."""
    config = make_config(cleanup_policy=["compact"], segment_bytes=2048)
    log = PartitionLog.open(directory / "table-0", config, 0)
    latest: dict[bytes, tuple[int, bytes]] = {}
    for i in range(600):
        key, value = f"k{i % KEYS}".encode(), f"v{i}".encode()
        blob = bytearray(build_batch([(key, value)], timestamp_ms=1_000))
        result = log.append(blob, validate_batches(blob, 1 << 20), 1_000)
        latest[key] = (result.base_offset, value)
    log.roll(1_000)
    return log, latest


def records_of(log: PartitionLog) -> list[Record]:
    records: list[Record] = []
    for segment in log.segments:
        data = segment.pread(0, segment.size)
        position = 0
        while position < len(data):
            batch = decode_records(data[position:])
            records += batch
            position += int.from_bytes(data[position + 8:position + 12], "big") + 12
    return records


def clean(log: PartitionLog) -> tuple[CleanResult, list]:
    sealed = list(log.segments[:-1])
    job = job_for(log, sealed, log.log_start_offset, log.active_segment.base_offset, 2_000,
                  SETTINGS)
    return clean_log(job, clock=lambda: 0.0, sleep=never_sleeps), sealed


def never_sleeps(seconds: float) -> None:
    raise AssertionError(f"an unthrottled cleaning slept {seconds} s")


def test_a_pass_keeps_the_latest_value_of_each_key_at_its_offset(tmp_path: Path) -> None:
    log, latest = compacted_log(tmp_path)
    before = len(log.segments), log.size_bytes()
    result, sealed = clean(log)
    assert result.end_offset == log.active_segment.base_offset
    assert log.install_cleaned(sealed, log.truncations, result.groups, 2_000)
    assert log.size_bytes() < before[1] // 10
    again, sealed = clean(log)
    assert log.install_cleaned(sealed, log.truncations, again.groups, 2_000)
    assert len(log.segments) < before[0] // 4, "emptied segments are merged by the next pass"
    assert {r.key: (r.offset, r.value) for r in records_of(log)} == latest
    assert len(records_of(log)) == KEYS
    assert not (log.directory / STAGING_DIR).exists()
    assert not (log.directory / SWAP_MANIFEST).exists()
    log.close()
    reopened = PartitionLog.open(log.directory, log.config, 3_000)
    assert {r.key: (r.offset, r.value) for r in records_of(reopened)} == latest
    assert reopened.log_end_offset == 600
    assert reopened.read(0, 1 << 20).records, "the rebuilt indexes serve reads"


def test_a_log_truncated_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    log, _ = compacted_log(tmp_path)
    result, sealed = clean(log)
    truncations = log.truncations
    log.truncate_to(590, 2_000)
    for i in range(10):
        blob = bytearray(build_batch([(b"k0", f"new-{i}".encode())], timestamp_ms=1_000))
        log.append(blob, validate_batches(blob, 1 << 20), 2_000)
    log.roll(2_000)
    assert all(any(s is e for e in log.segments) for s in sealed[:-1]), "same segments"
    assert not log.install_cleaned(sealed, truncations, result.groups, 2_000)
    assert not (log.directory / STAGING_DIR).exists()
    records = records_of(log)
    assert len(records) == 600
    assert [r.value for r in records[590:]] == [f"new-{i}".encode() for i in range(10)]


@pytest.mark.parametrize("moved", [0, 1, "all"])
def test_a_committed_swap_completes_at_load_whatever_was_moved(
        tmp_path: Path, moved: int | str) -> None:
    """A crash after the commit point, with none, some or all staged files moved in: the
    next load finishes the swap; the log reads as cleaned."""
    log, latest = compacted_log(tmp_path)
    result, sealed = clean(log)
    moves = [name for group in result.groups for name in group.files]
    incoming = set(moves)
    deletes = [path.name for segment in sealed for path in segment.paths()
               if path.exists() and path.name not in incoming]
    log.close()

    commit_swap(log.directory, moves, deletes)
    count = len(moves) if moved == "all" else int(moved)
    for name in moves[:count]:
        (log.directory / STAGING_DIR / name).replace(log.directory / name)
    reopened = PartitionLog.open(log.directory, log.config, 3_000)
    assert {r.key: (r.offset, r.value) for r in records_of(reopened)} == latest
    assert len(records_of(reopened)) == KEYS
    assert not (log.directory / SWAP_MANIFEST).exists()
    assert not (log.directory / STAGING_DIR).exists()


def test_an_uncommitted_staging_dir_is_dropped_at_load(tmp_path: Path) -> None:
    log, latest = compacted_log(tmp_path)
    clean(log)
    log.close()
    assert (log.directory / STAGING_DIR).exists()
    reopened = PartitionLog.open(log.directory, log.config, 3_000)
    assert not (log.directory / STAGING_DIR).exists()
    assert len(records_of(reopened)) == 600, "the old segments, untouched"
    assert {r.key: (r.offset, r.value) for r in latest_records(reopened)} == latest


def latest_records(log: PartitionLog) -> list[Record]:
    latest: dict[bytes | None, Record] = {}
    for record in records_of(log):
        latest[record.key] = record
    return list(latest.values())


def test_a_corrupt_manifest_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "table-0"
    directory.mkdir()
    (directory / SWAP_MANIFEST).write_text("0\nmove ../escape\n")
    with pytest.raises(CorruptSwapManifestError):
        finish_swap(directory)


def test_the_throttler_holds_io_to_its_rate() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttler = Throttler(1000.0, clock=lambda: now[0], sleep=sleep)
    throttler.account(500)
    assert slept == [0.5]
    now[0] += 2.0
    throttler.account(2000)
    assert slept == [0.5], "time spent idle earlier leaves room"
    throttler.account(1000)
    assert slept == [0.5, 1.0]
    assert now[0] == pytest.approx(3.5), "3,500 bytes took 3.5 s"
    unlimited = Throttler(float("inf"), clock=lambda: 0.0, sleep=sleep)
    unlimited.account(10**12)
    assert len(slept) == 2


def test_compact_and_delete_together() -> None:
    both = make_config(cleanup_policy=["compact", "delete"])
    assert both.compact_enabled and both.delete_enabled
    only = make_config(cleanup_policy=["compact"])
    assert only.compact_enabled and not only.delete_enabled


def test_cleaner_gauges_aggregate_each_cleaners_last_cleaning_as_kafka_does() -> None:
    figures = CleanerFigures()
    assert (figures.max_clean_time_s, figures.recopy_percent,
            figures.max_buffer_utilization_percent) == (0.0, 0.0, 0.0)
    figures.last[0] = LastCleaning(elapsed_s=4.0, recopy_percent=10.0,
                                   buffer_utilization_percent=20.0)
    figures.last[1] = LastCleaning(elapsed_s=1.0, recopy_percent=30.0,
                                   buffer_utilization_percent=70.0)
    figures.last[0] = LastCleaning(elapsed_s=2.0, recopy_percent=50.0,
                                   buffer_utilization_percent=5.0)
    assert figures.max_clean_time_s == 2.0
    assert figures.recopy_percent == 40.0
    assert figures.max_buffer_utilization_percent == 70.0
