"""The campaign reads the writer of each copy of a duplicate from the brokers' log files
(tests/campaign/log_files.py)."""

from __future__ import annotations

from pathlib import Path

from odradek.log import PartitionLog
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import validate_batches
from tests.campaign.history import Writer
from tests.campaign.log_files import record_writers
from tests.log_config import make_config


def write(directory: Path, batches: list[tuple[int, int, int]]) -> None:
    """(producer id, epoch, records) batches, written as a leader would."""
    log = PartitionLog.open(directory, make_config(), 0)
    for producer_id, epoch, count in batches:
        blob = bytearray(build_batch([(None, b"v")] * count, timestamp_ms=1000,
                                     producer_id=producer_id, producer_epoch=epoch,
                                     base_sequence=0))
        log.append(blob, validate_batches(blob, len(blob)), 1000, leader_epoch=0)
    log.close()


def test_each_place_gets_the_producer_and_epoch_of_its_batch(tmp_path: Path) -> None:
    write(tmp_path / "broker-1" / "idem-0", [(7, 0, 2)])  # a replica behind: not enough
    write(tmp_path / "broker-2" / "idem-0", [(7, 0, 2), (7, 1, 1)])
    assert record_writers(tmp_path, [("idem", 0, 1), ("idem", 0, 2)]) == [
        Writer("idem", 0, 1, 7, 0), Writer("idem", 0, 2, 7, 1)]


def test_a_place_no_log_holds_is_left_out(tmp_path: Path) -> None:
    write(tmp_path / "broker-1" / "idem-0", [(7, 0, 1)])
    assert record_writers(tmp_path, [("idem", 0, 0), ("idem", 0, 5), ("gone", 0, 0)]) == [
        Writer("idem", 0, 0, 7, 0)]
