"""KIP-392's rack-aware choice of the replica a consumer reads from (Kafka's
RackAwareReplicaSelector, with ReplicaManager's filter of in-sync replicas holding the
fetch offset)."""

from __future__ import annotations

from odradek.replication.leader import LeaderState
from odradek.replication.read_replica import NO_PREFERRED_REPLICA, preferred_read_replica

RACKS = {1: "east", 2: "west", 3: "west", 4: "north"}


def leader_of(isr: tuple[int, ...] = (1, 2, 3, 4)) -> LeaderState:
    state = LeaderState.start(1, (1, 2, 3, 4), isr, leader_epoch=5, partition_epoch=7,
                              log_end_offset=100, high_watermark=100, now_ms=0)
    for replica in (2, 3, 4):
        state.record_fetch(replica, 100, 100, now_ms=1_000, log_start_offset=10)
    return state


def test_a_consumer_in_the_leaders_rack_or_in_none_stays_on_the_leader() -> None:
    state = leader_of()
    assert preferred_read_replica(state, RACKS, "east", 50, now_ms=2_000) == NO_PREFERRED_REPLICA
    assert preferred_read_replica(state, RACKS, "", 50, now_ms=2_000) == NO_PREFERRED_REPLICA
    assert preferred_read_replica(state, RACKS, None, 50, now_ms=2_000) == NO_PREFERRED_REPLICA


def test_a_consumer_is_sent_to_the_follower_in_its_rack() -> None:
    assert preferred_read_replica(leader_of(), RACKS, "north", 50, now_ms=2_000) == 4


def test_a_rack_without_replicas_keeps_the_consumer_on_the_leader() -> None:
    assert preferred_read_replica(leader_of(), RACKS, "south", 50,
                                  now_ms=2_000) == NO_PREFERRED_REPLICA


def test_the_furthest_follower_wins_then_the_one_caught_up_last() -> None:
    state = leader_of()
    state.record_fetch(2, 90, 100, now_ms=1_500, log_start_offset=10)
    assert preferred_read_replica(state, RACKS, "west", 50, now_ms=2_000) == 3
    state.record_fetch(2, 100, 100, now_ms=1_900, log_start_offset=10)
    assert preferred_read_replica(state, RACKS, "west", 50, now_ms=2_000) == 2


def test_out_of_sync_followers_are_never_chosen() -> None:
    state = leader_of(isr=(1, 2, 4))
    assert preferred_read_replica(state, RACKS, "west", 50, now_ms=2_000) == 2
    state = leader_of(isr=(1, 2))
    assert preferred_read_replica(state, RACKS, "north", 50,
                                  now_ms=2_000) == NO_PREFERRED_REPLICA


def test_a_follower_that_does_not_hold_the_fetch_offset_is_not_chosen() -> None:
    state = leader_of()
    assert preferred_read_replica(state, RACKS, "north", 5, now_ms=2_000) == NO_PREFERRED_REPLICA
    assert preferred_read_replica(state, RACKS, "north", 101,
                                  now_ms=2_000) == NO_PREFERRED_REPLICA
    assert preferred_read_replica(state, RACKS, "north", 100, now_ms=2_000) == 4


def test_a_follower_not_yet_heard_from_in_this_epoch_is_not_chosen() -> None:
    state = LeaderState.start(1, (1, 4), (1, 4), leader_epoch=5, partition_epoch=7,
                              log_end_offset=100, high_watermark=100, now_ms=0)
    assert preferred_read_replica(state, RACKS, "north", 50, now_ms=10) == NO_PREFERRED_REPLICA


def test_fenced_or_unknown_brokers_have_no_rack_to_match() -> None:
    racks = {1: "east", 2: "west"}
    assert preferred_read_replica(leader_of(), racks, "north", 50,
                                  now_ms=2_000) == NO_PREFERRED_REPLICA
