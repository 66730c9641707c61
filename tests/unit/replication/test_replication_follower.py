from odradek.log.leader_epochs import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)
from odradek.replication.follower import Truncation, restart_inside_first_batch, truncation


def epochs(*pairs: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(None, [EpochEntry(e, o) for e, o in pairs])


def test_the_divergent_tail_of_an_old_leader_is_cut_where_the_new_epoch_begins() -> None:
    """KIP-101: the old leader (epoch 1) wrote 10..12 alone and died; the new leader started
    epoch 2 at 10. Back as a follower it asks for epoch 1 and learns it ended at 10."""
    follower = epochs((0, 0), (1, 5))
    assert truncation(follower, 13, 8, leader_epoch=1, leader_end_offset=10) == \
        Truncation(10, True)


def test_a_follower_that_is_merely_behind_keeps_its_log() -> None:
    follower = epochs((0, 0), (2, 5))
    assert truncation(follower, 9, 9, leader_epoch=2, leader_end_offset=30) == Truncation(9, True)


def test_an_epoch_the_follower_never_saw_takes_a_second_round() -> None:
    """KIP-279: the follower's epochs 1 and 3 vs a leader that knows 1 and 2: the leader answers
    epoch 1 for the follower's 3; the follower cuts to its own end of epoch 1, then asks again."""
    follower = epochs((1, 0), (3, 20))
    first = truncation(follower, 25, 10, leader_epoch=2, leader_end_offset=22)
    assert first == Truncation(20, False)
    follower.truncate_from_end(first.offset)
    assert truncation(follower, 20, 10, leader_epoch=1, leader_end_offset=15) == \
        Truncation(15, True)


def test_an_unknown_epoch_at_the_leader_falls_back_to_the_high_watermark() -> None:
    follower = epochs((4, 0))
    assert truncation(follower, 12, 7, UNDEFINED_EPOCH, UNDEFINED_OFFSET) == Truncation(7, True)


def test_a_follower_without_the_leaders_epoch_truncates_to_the_leaders_end() -> None:
    follower = epochs((4, 3))
    assert truncation(follower, 12, 7, leader_epoch=2, leader_end_offset=2) == Truncation(2, True)


def test_an_empty_log_restarts_at_a_fetched_batch_that_straddles_its_start() -> None:
    # the leader's log start (5) is inside the batch 0..9 that DeleteRecords cut
    assert restart_inside_first_batch(5, 5, first_base=0, first_last=9) == 0
    assert restart_inside_first_batch(5, 5, first_base=5, first_last=9) is None  # aligned
    assert restart_inside_first_batch(0, 5, first_base=0, first_last=9) is None  # not empty
    assert restart_inside_first_batch(5, 5, first_base=0, first_last=4) is None  # all below
