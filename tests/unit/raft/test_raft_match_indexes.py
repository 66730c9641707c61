"""The leader's read-only view of how far each peer's log is known to match its own (what
DescribeQuorum reports as the voters' log end offsets)."""

from __future__ import annotations

from tests.sim.net import Net


def test_only_the_leader_reports_match_indexes() -> None:
    net = Net([1, 2, 3])
    assert net[1].match_indexes() == {}
    net.campaign(1)
    assert net[2].match_indexes() == {} and net[3].match_indexes() == {}
    assert set(net[1].match_indexes()) == {2, 3}


def test_match_indexes_follow_acknowledgements_and_stay_behind_for_a_stopped_peer() -> None:
    net = Net([1, 2, 3], observers=[4])
    net.campaign(1)
    net.heartbeat()
    assert net[1].match_indexes() == {2: 1, 3: 1, 4: 1}
    net.stopped.add(3)
    net.propose(1, b"a", b"b")
    assert net[1].match_indexes() == {2: 3, 3: 1, 4: 3}
    net.stopped.discard(3)
    net.heartbeat(3)
    assert net[1].match_indexes() == {2: 3, 3: 3, 4: 3} == {
        peer: net[peer].last_index for peer in (2, 3, 4)}


def test_a_new_leader_knows_no_match_of_a_peer_that_never_answered_it() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.propose(1, b"a")
    net.stopped.add(1)
    for _ in range(60):
        net.tick()
        net.deliver()
    (leader,) = net.leaders()
    (other,) = {2, 3} - {leader}
    assert net[leader].match_indexes() == {1: 0, other: net[leader].last_index}
