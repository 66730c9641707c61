"""Leader election: timeouts, vote rules, pre-vote, leader leases and check-quorum."""

from __future__ import annotations

import random

import pytest

from odradek.raft import (
    NO_NODE,
    Entry,
    HardState,
    Message,
    MessageType,
    RaftConfig,
    RaftNode,
    Role,
)
from tests.sim.net import Net


def lone_node(node_id: int = 1, voters: frozenset[int] = frozenset({1, 2, 3}),
              **config: object) -> RaftNode:
    return RaftNode(RaftConfig(node_id, voters, **config), random.Random(0))  # type: ignore[arg-type]


def test_a_single_voter_elects_itself_on_its_first_tick() -> None:
    node = lone_node(voters=frozenset({1}))
    node.tick()
    assert node.role is Role.LEADER and node.leader == 1 and node.term == 1
    ready = node.ready()
    assert ready.hard_state == HardState(term=1, vote=1, commit=1)
    assert ready.entries == [Entry(1, 1, b"")]
    assert ready.committed_entries == [Entry(1, 1, b"")]
    assert ready.must_sync and ready.messages == []


def test_a_follower_campaigns_only_after_its_randomized_timeout() -> None:
    for seed in range(20):
        node = RaftNode(RaftConfig(1, frozenset({1, 2, 3}), election_ticks=10),
                        random.Random(seed))
        ticks = 0
        while node.role is Role.FOLLOWER:
            node.tick()
            ticks += 1
        assert 10 <= ticks < 20
        assert node.role is Role.PRE_CANDIDATE and node.term == 0


def test_three_voters_elect_one_leader_whose_noop_commits_everywhere() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    assert net.leaders() == [1]
    assert [net[i].leader for i in (1, 2, 3)] == [1, 1, 1]
    assert {net[i].term for i in (1, 2, 3)} == {1}
    net.heartbeat()
    assert all(net.applied[i] == [Entry(1, 1, b"")] for i in (1, 2, 3))


def test_pre_vote_runs_before_the_term_changes() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    pre_votes = net.sent_of(MessageType.PRE_VOTE)
    votes = net.sent_of(MessageType.VOTE)
    assert {(m.target, m.term) for m in pre_votes} == {(2, 1), (3, 1)}
    assert {(m.target, m.term) for m in votes} == {(2, 1), (3, 1)}
    assert net.sent.index(pre_votes[0]) < net.sent.index(votes[0])


def test_the_vote_is_persisted_with_must_sync_before_the_response_leaves() -> None:
    node = lone_node(2)
    node.step(Message(MessageType.VOTE, 1, 2, term=1))
    ready = node.ready()
    assert ready.hard_state == HardState(term=1, vote=1, commit=0)
    assert ready.must_sync
    assert [(m.type, m.reject) for m in ready.messages] == [(MessageType.VOTE_RESPONSE, False)]


def test_a_voter_grants_one_vote_per_term() -> None:
    node = lone_node(2)
    node.step(Message(MessageType.VOTE, 1, 2, term=1))
    node.step(Message(MessageType.VOTE, 3, 2, term=1))
    node.step(Message(MessageType.VOTE, 1, 2, term=1))
    responses = node.ready().messages
    assert [(m.target, m.reject) for m in responses] == [(1, False), (3, True), (1, False)]


def test_a_voter_refuses_a_candidate_whose_log_is_behind() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(term=2),
                    entries=[Entry(1, 1, b""), Entry(2, 2, b"x")])
    for log_term, index, granted in [(1, 5, False), (2, 1, False), (2, 2, True)]:
        node.step(Message(MessageType.PRE_VOTE, 1, 2, term=3, log_term=log_term, index=index))
        (response,) = node.ready().messages
        assert response.reject is not granted
    assert node.term == 2, "a pre-vote never changes the voter's term"


def test_a_partitioned_voter_rejoining_does_not_disrupt_the_leader() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.isolate(3)
    for _ in range(100):
        net.tick()
        net.deliver()
    assert net[3].role is Role.PRE_CANDIDATE
    assert net[3].term == 1, "pre-vote keeps an isolated node's term where it was"
    net.heal()
    for _ in range(30):
        net.tick()
        net.deliver()
    assert net.leaders() == [1]
    assert net[1].term == 1 and net[3].leader == 1 and net[3].role is Role.FOLLOWER


def test_without_pre_vote_a_rejoining_voter_forces_a_new_term() -> None:
    """The disruption pre-vote exists to prevent (the contrast to the test above)."""
    net = Net([1, 2, 3], pre_vote=False)
    net.campaign(1)
    net.isolate(3)
    for _ in range(100):
        net.tick()
        net.deliver()
    assert net[3].term > 2
    net.heal()
    for _ in range(60):
        net.tick()
        net.deliver()
    assert net[1].term > 1, "the old leader was deposed by the inflated term"


def test_voters_in_a_live_leader_lease_refuse_votes_unless_forced() -> None:
    net = Net([1, 2, 3], pre_vote=False)
    net.campaign(1)
    net.heartbeat()
    for kind in (MessageType.PRE_VOTE, MessageType.VOTE):
        net[2].step(Message(kind, 3, 2, term=5, log_term=1, index=1))
        (response,) = net[2].ready().messages
        assert response.reject and response.term == 1
        assert net[2].term == 1 and net[2].leader == 1
    net[2].step(Message(MessageType.VOTE, 3, 2, term=5, log_term=1, index=1, force=True))
    (response,) = net[2].ready().messages
    assert not response.reject and net[2].term == 5 and net[2].vote == 3


def test_the_lease_ends_an_election_timeout_after_the_leader_was_last_heard() -> None:
    node = lone_node(2, election_ticks=10)
    node.step(Message(MessageType.APPEND, 1, 2, term=1))
    node.ready()
    pre_vote = Message(MessageType.PRE_VOTE, 3, 2, term=2, log_term=0, index=0)
    for _ in range(9):
        node.tick()
    node.step(pre_vote)
    assert node.ready().messages[0].reject
    node.tick()
    node.step(pre_vote)
    assert not node.ready().messages[-1].reject


def test_check_quorum_steps_down_a_leader_cut_off_from_the_majority() -> None:
    net = Net([1, 2, 3], election_ticks=10)
    net.campaign(1)
    net.isolate(1)
    net.tick(1, times=9)
    assert net[1].role is Role.LEADER
    net.tick(1, times=11)
    assert net[1].role is Role.FOLLOWER and net[1].leader == NO_NODE
    assert net[1].term == 1


def test_without_check_quorum_an_isolated_leader_stays_leader() -> None:
    net = Net([1, 2, 3], check_quorum=False)
    net.campaign(1)
    net.isolate(1)
    net.tick(1, times=100)
    assert net[1].role is Role.LEADER


def test_a_leader_hearing_from_a_majority_keeps_leading() -> None:
    net = Net([1, 2, 3, 4, 5])
    net.campaign(1)
    net.isolate(4)
    net.isolate(5)
    net.cut -= {frozenset({1, 2}), frozenset({1, 3})}
    for _ in range(60):
        net.tick(1)
        net.deliver()
    assert net[1].role is Role.LEADER


def test_a_majority_elects_a_new_leader_after_the_old_one_stops() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.stopped.add(1)
    for _ in range(60):
        net.tick()
        net.deliver()
    (leader,) = net.leaders()
    assert leader in (2, 3) and net[leader].term == 2


def test_a_stale_leader_learns_the_newer_term_from_a_follower() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.isolate(1)
    for _ in range(60):
        net.tick(2, 3)
        net.deliver()
    (new_leader,) = [i for i in net.leaders() if i != 1]
    assert net[new_leader].term == 2
    net.heal()
    net.tick(1, times=net[1].config.heartbeat_ticks)
    net.deliver()
    assert net[1].role is Role.FOLLOWER and net[1].term == 2


def test_a_candidate_that_loses_the_vote_becomes_a_follower() -> None:
    node = lone_node(1, pre_vote=False)
    for _ in range(20):
        node.tick()
    assert node.role is Role.CANDIDATE
    node.ready()
    for voter in (2, 3):
        node.step(Message(MessageType.VOTE_RESPONSE, voter, 1, term=node.term, reject=True))
    assert node.role is Role.FOLLOWER


def test_observers_never_vote_or_campaign_but_follow_the_log() -> None:
    net = Net([1, 2, 3], observers=[4])
    assert net[4].role is Role.OBSERVER
    net.tick(4, times=200)
    assert net[4].role is Role.OBSERVER and net.sent_of(MessageType.PRE_VOTE, 4) == []
    for kind in (MessageType.PRE_VOTE, MessageType.VOTE):
        net[4].step(Message(kind, 1, 4, term=7, log_term=0, index=0))
    assert not net[4].has_ready() and net[4].term == 0
    net.campaign(1)
    assert net.sent_of(MessageType.VOTE, 1) and all(
        m.target != 4 for m in net.sent_of(MessageType.VOTE, 1)
    )
    net.propose(1, b"a")
    net.heartbeat()
    assert [e.data for e in net.applied[4]] == [b"", b"a"]
    assert net[4].role is Role.OBSERVER and net[4].leader == 1


def test_a_node_outside_the_voters_is_an_observer() -> None:
    node = RaftNode(RaftConfig(9, frozenset({1, 2, 3})), random.Random(0))
    assert node.role is Role.OBSERVER
    node.tick()
    assert node.role is Role.OBSERVER


def test_stale_votes_of_an_earlier_pre_vote_round_do_not_count() -> None:
    node = lone_node(1)
    for _ in range(20):
        node.tick()
    assert node.role is Role.PRE_CANDIDATE
    node.step(Message(MessageType.PRE_VOTE_RESPONSE, 2, 1, term=node.term))
    assert node.role is Role.PRE_CANDIDATE
    node.step(Message(MessageType.PRE_VOTE_RESPONSE, 2, 1, term=node.term + 1))
    assert node.role is Role.CANDIDATE and node.term == 1


@pytest.mark.parametrize("kind", [MessageType.APPEND, MessageType.INSTALL_SNAPSHOT])
def test_a_message_from_the_leader_of_a_later_term_makes_it_known(kind: MessageType) -> None:
    node = lone_node(2)
    node.step(Message(kind, 3, 2, term=4))
    assert node.term == 4 and node.leader == 3 and node.role is Role.FOLLOWER


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        RaftConfig(1, frozenset())
    with pytest.raises(ValueError):
        RaftConfig(1, frozenset({1}), election_ticks=2, heartbeat_ticks=2)


def test_only_voters_are_voted_for() -> None:
    node = lone_node(2)
    node.step(Message(MessageType.VOTE, 9, 2, term=1))
    node.step(Message(MessageType.PRE_VOTE, 9, 2, term=1))
    assert not node.has_ready() and node.term == 0 and node.vote == NO_NODE
