"""A partition log's producer state on disk: snapshots at rolls and on close, recovery by
replay, transaction indexes, the last stable offset, and truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.log import PartitionLog
from odradek.log.producer_snapshots import snapshot_offsets
from odradek.log.storage_failure import KafkaStorageError
from odradek.log.txn_index import AbortedTxn
from odradek.protocol.control import build_marker_batch
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import validate_batches
from tests.log_config import make_config


def open_log(directory: Path, **overrides: object) -> PartitionLog:
    return PartitionLog.open(directory / "orders-0", make_config(**overrides), 0,
                             recovery_point=0)


def produce(log: PartitionLog, producer_id: int, sequence: int, count: int = 2,
            *, transactional: bool = False, epoch: int = 0) -> int:
    batch = bytearray(build_batch(
        [(None, f"{producer_id}-{sequence + i}".encode()) for i in range(count)],
        timestamp_ms=1000, producer_id=producer_id, producer_epoch=epoch,
        base_sequence=sequence, is_transactional=transactional))
    infos = validate_batches(batch, len(batch))
    duplicate = log.producers.check(infos[0])
    if duplicate is not None:
        return duplicate.first_offset
    return log.append(batch, infos, 1000, leader_epoch=0).base_offset


def marker(log: PartitionLog, producer_id: int, commit: bool, epoch: int = 0) -> int:
    batch = build_marker_batch(producer_id, epoch, 3, commit, 1000)
    return log.append(batch, validate_batches(batch, len(batch), from_client=False), 1000,
                      leader_epoch=0).base_offset


def test_deduplication_survives_reopening_after_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    offsets = [produce(log, 7, sequence) for sequence in range(0, 40, 2)]
    assert len(log.segments) > 3
    assert snapshot_offsets(log.directory), "rolls write producer snapshots"
    log.close()
    reopened = open_log(tmp_path, segment_bytes=300)
    assert produce(reopened, 7, 38) == offsets[-1], "the retry is answered, not appended"
    assert reopened.log_end_offset == 40


def test_a_clean_close_snapshots_at_the_log_end(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    produce(log, 7, 0)
    log.write_producer_snapshot()
    log.close()
    assert snapshot_offsets(tmp_path / "orders-0") == [2]
    assert 7 in open_log(tmp_path).producers.producers


def test_an_aborted_transaction_is_indexed_and_bounds_the_stable_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    produce(log, 1, 0)
    produce(log, 7, 0, transactional=True)
    produce(log, 8, 0, transactional=True)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 2, "producer 7's open transaction starts at 2"
    marker(log, 7, commit=False)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 4, "producer 8's transaction is still open"
    marker(log, 8, commit=True)
    log.high_watermark = 7
    assert log.last_stable_offset == 7
    assert log.aborted_transactions(0, 7) == [AbortedTxn(7, 2, 6, 4)]
    assert log.aborted_transactions(7, 8) == []
    assert (log.directory / "00000000000000000000.txnindex").stat().st_size == 34


def test_recovery_rebuilds_the_transaction_index_and_open_transactions(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    produce(log, 7, 0, transactional=True)
    marker(log, 7, commit=False)
    produce(log, 9, 0, transactional=True)
    log.close()
    (tmp_path / "orders-0" / "00000000000000000000.txnindex").write_bytes(b"garbage")
    reopened = open_log(tmp_path)
    assert reopened.aborted_transactions(0, 10) == [AbortedTxn(7, 0, 2, 3)]
    assert reopened.producers.first_unstable_offset() == 3


def test_truncation_forgets_what_it_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for sequence in range(0, 20, 2):
        produce(log, 7, sequence)
    produce(log, 8, 0, transactional=True)
    marker(log, 8, commit=False)
    log.truncate_to(12, 1000)
    assert log.aborted_transactions(0, 100) == []
    assert log.producers.first_unstable_offset() is None
    assert log.producers.check_marker(8, 0, 0) is None
    assert produce(log, 7, 12) == 12, "sequence 12 was cut, so it is appended again"
    with pytest.raises(Exception, match="out of order"):
        produce(log, 7, 20)


def test_retention_forgets_producers_below_the_log_start(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for sequence in range(0, 20, 2):
        produce(log, 7, sequence)
    produce(log, 9, 0)
    log.high_watermark = log.log_end_offset
    log.delete_records_before(log.log_end_offset - 2)
    assert set(log.producers.producers) == {9}
    assert produce(log, 7, 1000) == log.log_end_offset - 2, "an unknown producer may resume"


def test_an_aborted_transaction_whose_index_cannot_be_written_stops_the_log(
        tmp_path: Path) -> None:
    """The write that failed in the hour-long campaign: the abort marker reached a full disk's
    segment but its transaction index entry did not, and the broker served on; read_committed
    consumers then read the aborted records. The log's failure handler hears of it before
    the append's caller."""
    log = open_log(tmp_path)
    failures: list[tuple[str, OSError]] = []
    log.on_storage_error = lambda directory, error: failures.append((directory.name, error))
    produce(log, 7, 0, transactional=True)
    (log.directory / "00000000000000000000.txnindex").mkdir()  # open() for append fails
    with pytest.raises(KafkaStorageError, match="orders-0"):
        marker(log, 7, commit=False)
    assert [(name, type(error)) for name, error in failures] == [
        ("orders-0", IsADirectoryError)]
