from pathlib import Path

import pytest

from odradek.log.checkpoint import CheckpointError
from odradek.log.leader_epochs import (
    LEADER_EPOCH_CHECKPOINT,
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)
from odradek.log.partition import OffsetOutOfRangeError, PartitionLog
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import validate_batches
from tests.log_config import make_config

CONFIG = make_config()


def cache(*pairs: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(None, [EpochEntry(e, o) for e, o in pairs])


def pairs(c: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in c.entries]


def test_assign_keeps_the_first_offset_of_an_epoch_and_ignores_negative_epochs() -> None:
    c = cache()
    c.assign(-1, 0)
    c.assign(0, 0)
    c.assign(0, 5)
    c.assign(2, 7)
    assert pairs(c) == [(0, 0), (2, 7)]


def test_assign_replaces_entries_of_a_truncated_tail() -> None:
    c = cache((0, 0), (2, 7), (3, 9))
    c.assign(4, 7)
    assert pairs(c) == [(0, 0), (4, 7)]


def test_end_offset_for_follows_kafka() -> None:
    c = cache((1, 0), (3, 10), (6, 20))
    assert c.end_offset_for(6, 25) == (6, 25)
    assert c.end_offset_for(3, 25) == (3, 20)
    assert c.end_offset_for(4, 25) == (3, 20), "an unknown epoch ends where the next starts"
    assert c.end_offset_for(0, 25) == (0, 0), "older than any: the first epoch's start"
    assert c.end_offset_for(7, 25) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert c.end_offset_for(UNDEFINED_EPOCH, 25) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert cache().end_offset_for(1, 0) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_truncation_from_either_end() -> None:
    c = cache((1, 0), (3, 10), (6, 20))
    c.truncate_from_end(20)
    assert pairs(c) == [(1, 0), (3, 10)]
    c.truncate_from_start(15)
    assert pairs(c) == [(3, 15)]
    assert c.epoch_at(14) == UNDEFINED_EPOCH and c.epoch_at(15) == 3


def test_the_checkpoint_file_round_trips_and_rejects_garbage(tmp_path: Path) -> None:
    c = LeaderEpochCache.load(tmp_path)
    c.assign(0, 0)
    c.assign(5, 42)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n5 42\n"
    assert pairs(LeaderEpochCache.load(tmp_path)) == [(0, 0), (5, 42)]
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n")
    with pytest.raises(CheckpointError):
        LeaderEpochCache.load(tmp_path)


def batch(base: int, count: int, epoch: int) -> bytearray:
    return bytearray(build_batch([(None, b"v%d" % i) for i in range(count)], base_offset=base,
                                 partition_leader_epoch=epoch))


def test_a_log_stamps_its_leader_epoch_and_a_follower_keeps_the_leaders(tmp_path: Path) -> None:
    leader = PartitionLog.open(tmp_path / "t-0", CONFIG, 0)
    records = batch(0, 3, -1)
    leader.append(records, validate_batches(records, 1 << 20), 0, leader_epoch=4)
    assert pairs(leader.leader_epochs) == [(4, 0)]
    follower = PartitionLog.open(tmp_path / "t-1", CONFIG, 0)
    fetched = leader.read(0, 1 << 20).records
    follower.append_as_follower(fetched, validate_batches(fetched, 1 << 20, from_client=False), 0)
    later = batch(3, 2, 7)
    follower.append_as_follower(later, validate_batches(later, 1 << 20, from_client=False), 0)
    assert pairs(follower.leader_epochs) == [(4, 0), (7, 3)]
    assert follower.log_end_offset == 5
    follower.truncate_to(3, 0)
    assert pairs(LeaderEpochCache.load(tmp_path / "t-1")) == [(4, 0)]
    overlap = batch(2, 2, 7)
    with pytest.raises(OffsetOutOfRangeError):
        follower.append_as_follower(overlap, validate_batches(overlap, 1 << 20,
                                                              from_client=False), 0)
    compacted_away = batch(9, 1, 7)
    follower.append_as_follower(compacted_away, validate_batches(compacted_away, 1 << 20,
                                                                 from_client=False), 0)
    assert follower.log_end_offset == 10, "a gap a leader's compaction left is accepted"


def test_a_log_without_a_checkpoint_rebuilds_it_from_batch_headers(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, 0)
    for base, epoch in ((0, 2), (2, 2), (4, 5)):
        records = batch(base, 2, epoch)
        log.append_as_follower(records, validate_batches(records, 1 << 20,
                                                         from_client=False), 0)
    log.close()
    (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).unlink()
    reopened = PartitionLog.open(tmp_path / "t-0", CONFIG, 0)
    assert pairs(reopened.leader_epochs) == [(2, 0), (5, 4)]
    assert (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).exists()
