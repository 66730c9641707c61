"""The leader's report of its quorum's replication: Kafka's rules for when a replica last
fetched and was last caught up, the leader's own row, and forgetting silent observers."""

from __future__ import annotations

from odradek.controller.quorum_replication import (
    OBSERVER_SESSION_MS,
    QuorumReplication,
    ReplicaReport,
    ReplicaState,
)


def test_a_replica_with_the_leaders_whole_log_is_caught_up_at_that_fetch() -> None:
    state = ReplicaState(2)
    state.fetched(end_offset=10, leader_end=10, now_ms=1000)
    assert state.report() == ReplicaReport(2, 10, 1000, 1000)


def test_a_replica_behind_is_not_caught_up_until_it_has_what_the_leader_had() -> None:
    state = ReplicaState(2)
    state.fetched(end_offset=5, leader_end=10, now_ms=1000)
    assert state.report() == ReplicaReport(2, 5, 1000, -1)
    state.fetched(end_offset=8, leader_end=12, now_ms=2000)
    assert state.last_caught_up_ms == -1, "8 is short of the 10 the leader had at 1000"
    state.fetched(end_offset=12, leader_end=15, now_ms=3000)
    assert state.report() == ReplicaReport(2, 12, 3000, 2000), (
        "it now has the 12 the leader had at its previous fetch, so it was caught up then")


def test_the_caught_up_time_never_goes_back() -> None:
    state = ReplicaState(2)
    state.fetched(end_offset=10, leader_end=10, now_ms=5000)
    state.fetched(end_offset=10, leader_end=20, now_ms=4000)
    assert (state.last_fetch_ms, state.last_caught_up_ms) == (5000, 5000)


def test_the_leader_reports_itself_now_and_voters_unknown_until_they_answer() -> None:
    quorum = QuorumReplication(leader_id=2, term=7, voters=[3, 1, 2])
    voters, observers = quorum.describe(leader_end=40, now_ms=9000)
    assert voters == [ReplicaReport(1, -1, -1, -1), ReplicaReport(2, 40, 9000, 9000),
                      ReplicaReport(3, -1, -1, -1)]
    assert observers == []
    quorum.voter_fetched(3, end_offset=40, leader_end=40, now_ms=8000)
    quorum.voter_fetched(9, end_offset=40, leader_end=40, now_ms=8000)
    voters, _ = quorum.describe(leader_end=41, now_ms=9500)
    assert [v.replica_id for v in voters] == [1, 2, 3], "only configured voters are voters"
    assert voters[2] == ReplicaReport(3, 40, 8000, 8000)


def test_observers_are_listed_by_id_and_forgotten_after_a_silent_session() -> None:
    quorum = QuorumReplication(leader_id=1, term=1, voters=[1])
    quorum.observer_fetched(5, end_offset=3, leader_end=4, now_ms=1000)
    quorum.observer_fetched(4, end_offset=4, leader_end=4, now_ms=2000)
    _, observers = quorum.describe(leader_end=4, now_ms=3000)
    assert observers == [ReplicaReport(4, 4, 2000, 2000), ReplicaReport(5, 3, 1000, -1)]
    _, observers = quorum.describe(leader_end=4, now_ms=1000 + OBSERVER_SESSION_MS)
    assert [o.replica_id for o in observers] == [4]


def test_a_node_can_be_both_a_voter_and_an_observer() -> None:
    """`odradek dev`: the controller votes, the broker in the same process observes."""
    quorum = QuorumReplication(leader_id=1, term=1, voters=[1])
    quorum.observer_fetched(1, end_offset=3, leader_end=3, now_ms=1000)
    voters, observers = quorum.describe(leader_end=3, now_ms=1200)
    assert [v.replica_id for v in voters] == [o.replica_id for o in observers] == [1]
