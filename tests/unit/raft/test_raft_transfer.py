"""Leadership transfer: catch the target up, TIMEOUT_NOW, a forced election without pre-vote;
proposals refused meanwhile; abandoned after an election timeout."""

from __future__ import annotations

import pytest

from odradek.raft import Message, MessageType, NotLeaderError, Role
from tests.sim.net import Net


def test_transfer_to_an_up_to_date_voter() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.heartbeat()
    sent_before = len(net.sent)
    net[1].transfer_leadership(2)
    net.process(1)
    net.deliver()
    assert net.leaders() == [2] and net[2].term == 2
    after = net.sent[sent_before:]
    assert [m.type for m in after][:1] == [MessageType.TIMEOUT_NOW]
    assert not any(m.type is MessageType.PRE_VOTE for m in after), "no pre-vote round"
    assert all(m.force for m in after if m.type is MessageType.VOTE)
    assert net[1].role is Role.FOLLOWER and net[1].leader == 2


def test_transfer_catches_a_lagging_target_up_first() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.stopped.add(3)
    net.propose(1, b"a", b"b")
    net.stopped.clear()
    net[1].transfer_leadership(3)
    net.process(1)
    assert not any(m.type is MessageType.TIMEOUT_NOW for m in net.queue)
    net.deliver()
    net.heartbeat(10)
    assert net.leaders() == [3]
    timeout_now = net.sent_of(MessageType.TIMEOUT_NOW, 1)[0]
    votes = [m for m in net.sent_of(MessageType.VOTE, 3) if m.force]
    assert votes and votes[0].index == 3, "the target campaigned with the whole log"
    assert net.sent.index(timeout_now) < net.sent.index(votes[0])


def test_proposals_are_refused_while_leadership_is_handed_over() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.stopped.add(2)
    net.propose(1, b"a")
    net[1].transfer_leadership(2)
    with pytest.raises(NotLeaderError) as refused:
        net[1].propose(b"b")
    assert refused.value.leader == 2


def test_a_transfer_to_an_unreachable_voter_is_abandoned_after_an_election_timeout() -> None:
    net = Net([1, 2, 3], election_ticks=10)
    net.campaign(1)
    net.stopped.add(2)
    net.propose(1, b"a")
    net[1].transfer_leadership(2)
    for _ in range(9):
        net.tick(1)
        net.deliver()
    with pytest.raises(NotLeaderError):
        net[1].propose(b"b")
    net.tick(1)
    assert net[1].propose(b"b") == 3
    assert net[1].role is Role.LEADER and net[1].term == 1


def test_transfer_is_for_leaders_and_voters_only() -> None:
    net = Net([1, 2, 3], observers=[4])
    net.campaign(1)
    with pytest.raises(NotLeaderError) as not_leader:
        net[2].transfer_leadership(3)
    assert not_leader.value.leader == 1
    with pytest.raises(ValueError):
        net[1].transfer_leadership(4)
    net[1].transfer_leadership(1)
    assert net[1].propose(b"still leading") == 2


def test_an_observer_ignores_timeout_now() -> None:
    net = Net([1, 2, 3], observers=[4])
    net.campaign(1)
    net.heartbeat()
    net[4].step(Message(MessageType.TIMEOUT_NOW, 1, 4, term=1))
    assert net[4].role is Role.OBSERVER and not net[4].has_ready()
