from kio.schema.errors import ErrorCode

from odradek.replication.leader import IsrChange, LeaderState, OffsetPurgatory

LAG_MS = 1000


def leader(isr: tuple[int, ...] = (1, 2, 3), log_end: int = 10, high_watermark: int = 4,
           now: int = 0) -> LeaderState:
    return LeaderState.start(1, (1, 2, 3), isr, leader_epoch=5, partition_epoch=7,
                             log_end_offset=log_end, high_watermark=high_watermark, now_ms=now)


def test_followers_are_unknown_until_they_fetch_so_the_high_watermark_waits() -> None:
    state = leader()
    assert not state.advance_high_watermark(10)
    state.record_fetch(2, 10, 10, now_ms=1)
    assert not state.advance_high_watermark(10), "replica 3 has not fetched in this epoch"
    state.record_fetch(3, 8, 10, now_ms=1)
    assert state.advance_high_watermark(10)
    assert state.high_watermark == 8


def test_the_high_watermark_never_goes_back() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(2, 9, 10, now_ms=1)
    state.advance_high_watermark(10)
    state.record_fetch(2, 6, 10, now_ms=2)
    assert not state.advance_high_watermark(10)
    assert state.high_watermark == 9


def test_a_leader_alone_in_the_isr_commits_its_log_end() -> None:
    state = leader(isr=(1,))
    assert state.advance_high_watermark(12)
    assert state.high_watermark == 12


def test_a_pending_expansion_counts_the_new_member_before_it_commits() -> None:
    state = leader(isr=(1, 2), high_watermark=10)
    state.record_fetch(2, 12, 12, now_ms=1)
    state.record_fetch(3, 10, 12, now_ms=1)
    change = state.expansion(3, eligible=True)
    assert change == IsrChange(5, 7, (1, 2, 3))
    assert state.maximal_isr == (1, 2, 3)
    assert not state.advance_high_watermark(12), "3 is at 10: the maximal ISR holds the HW"
    state.record_fetch(3, 12, 12, now_ms=2)
    assert state.advance_high_watermark(12)


def test_expansion_needs_the_high_watermark_the_epoch_start_and_an_eligible_broker() -> None:
    state = leader(isr=(1, 2), log_end=10, high_watermark=10)
    state.record_fetch(3, 9, 10, now_ms=1)
    assert state.expansion(3, eligible=True) is None, "below the high watermark"
    state.record_fetch(3, 10, 10, now_ms=1)
    assert state.expansion(3, eligible=False) is None, "fenced broker"
    assert state.expansion(2, eligible=True) is None, "already in the ISR"
    early = leader(isr=(1, 2), log_end=10, high_watermark=3)
    early.record_fetch(3, 5, 10, now_ms=1)
    assert early.expansion(3, eligible=True) is None, "before this epoch's start offset"
    change = state.expansion(3, eligible=True)
    assert change is not None
    assert state.expansion(3, eligible=True) is None, "one change in flight at a time"
    assert state.answered(change, ErrorCode.ineligible_replica, -1) is False
    assert state.expansion(3, eligible=True) is not None


def test_an_isr_change_stays_in_flight_until_its_outcome_is_known() -> None:
    state = leader(isr=(1, 2), log_end=10, high_watermark=10)
    state.record_fetch(3, 10, 10, now_ms=1)
    change = state.expansion(3, eligible=True)
    assert change is not None and state.maximal_isr == (1, 2, 3)
    assert state.answered(change, ErrorCode.request_timed_out, -1), "sent again"
    assert state.answered(change, ErrorCode.fenced_leader_epoch, -1) is False
    assert state.maximal_isr == (1, 2, 3), "a newer epoch: the metadata will tell"
    state.record_fetch(2, 15, 15, now_ms=2)
    state.advance_high_watermark(15)
    assert state.high_watermark == 10, "replica 3 may be in the ISR the controller holds"
    state.update((1, 2, 3), (1, 2, 3), state.partition_epoch + 1)
    assert state.pending is None


def test_a_follower_that_stops_catching_up_is_dropped_after_the_lag_time() -> None:
    state = leader(now=0)
    state.record_fetch(2, 10, 10, now_ms=100)
    state.record_fetch(3, 10, 10, now_ms=100)
    state.record_fetch(2, 10, 20, now_ms=600)  # 2 fetched, the leader had moved on
    state.record_fetch(3, 20, 20, now_ms=600)
    assert state.shrink(20, now_ms=1000, lag_time_ms=LAG_MS) is None
    state.record_fetch(3, 20, 20, now_ms=1700)
    change = state.shrink(20, now_ms=1700, lag_time_ms=LAG_MS)
    assert change == IsrChange(5, 7, (1, 3)), "2 last caught up at 100 (its fetch at 600 " \
        "reached the leader end seen by its previous fetch)"
    assert state.maximal_isr == (1, 2, 3), "a pending shrink does not count yet"


def test_a_follower_fetching_at_the_previous_log_end_counts_as_caught_up_then() -> None:
    state = leader(now=0)
    state.record_fetch(2, 10, 15, now_ms=500)
    state.record_fetch(2, 15, 18, now_ms=1400)
    state.record_fetch(3, 18, 18, now_ms=1400)
    assert state.shrink(18, now_ms=1400, lag_time_ms=LAG_MS) is None, \
        "2 had reached 15, the leader's end at its previous fetch (500)"


def test_an_idle_partition_keeps_followers_at_the_log_end_in_sync() -> None:
    state = leader(now=0)
    state.record_fetch(2, 10, 10, now_ms=1)
    state.record_fetch(3, 10, 10, now_ms=1)
    assert state.shrink(10, now_ms=60_000, lag_time_ms=LAG_MS) is None


def test_metadata_settles_a_pending_change_and_tracks_new_replicas() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(3, 10, 10, now_ms=1)
    state.expansion(3, eligible=True)
    state.update((1, 2, 3, 4), (1, 2, 3), partition_epoch=8)
    assert state.pending is None and state.isr == (1, 2, 3) and 4 in state.followers
    state.update((1, 2, 3), (1, 2, 3), partition_epoch=9)
    assert 4 not in state.followers


def test_the_purgatory_releases_in_offset_order_up_to_the_high_watermark() -> None:
    purgatory: OffsetPurgatory[str] = OffsetPurgatory()
    for offset, item in ((7, "c"), (3, "a"), (5, "b"), (5, "b2")):
        purgatory.add(offset, item)
    assert purgatory.reached(4) == ["a"]
    assert purgatory.reached(6) == ["b", "b2"]
    assert len(purgatory) == 1
    assert purgatory.drain() == ["c"] and len(purgatory) == 0
