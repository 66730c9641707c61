"""Restarting a node from what its shell persisted: hard state, snapshot and entries."""

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
    Snapshot,
    SoftState,
)
from tests.sim.net import Net

CONFIG = RaftConfig(2, frozenset({1, 2, 3}))


def test_restart_restores_term_vote_commit_and_the_log_after_the_snapshot() -> None:
    snapshot = Snapshot(3, 2, b"state", frozenset({1, 2, 3}))
    log = [Entry(2, 4, b"d"), Entry(3, 5, b"e"), Entry(3, 6, b"f")]
    node = RaftNode(CONFIG, random.Random(0), HardState(term=3, vote=1, commit=5), snapshot, log)
    assert (node.term, node.vote, node.commit_index) == (3, 1, 5)
    assert (node.first_index, node.last_index, node.applied) == (4, 6, 3)
    assert node.role is Role.FOLLOWER and node.leader == NO_NODE
    ready = node.ready()
    assert ready.committed_entries == log[:2], "entries after the snapshot are re-applied"
    assert ready.entries == [] and ready.snapshot is None and ready.hard_state is None
    node.advance(ready)
    assert node.applied == 5 and not node.has_ready()


def test_the_commit_index_is_at_least_the_snapshot_index() -> None:
    node = RaftNode(CONFIG, random.Random(0), HardState(term=2, vote=NO_NODE, commit=0),
                    Snapshot(7, 2, b""))
    assert node.commit_index == node.applied == 7 and node.last_index == 7


def test_a_restarted_voter_does_not_vote_twice_in_a_term() -> None:
    net = Net([1, 2, 3])
    net[2].step(Message(MessageType.VOTE, 1, 2, term=1, log_term=0, index=0))
    net.process(2)
    restarted = net.restart(2)
    assert (restarted.term, restarted.vote) == (1, 1)
    restarted.step(Message(MessageType.VOTE, 3, 2, term=1, log_term=0, index=0))
    (response,) = restarted.ready().messages
    assert response.reject


def test_a_whole_quorum_restarts_and_carries_on() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.propose(1, b"a", b"b")
    net.heartbeat()
    node = net[1]
    snapshot = Snapshot(node.applied, node.term, b"state")
    node.compact(snapshot)
    net.disks[1].save_snapshot(snapshot)
    for node_id in (1, 2, 3):
        net.restart(node_id)
    assert net[1].first_index == 4 and net[1].applied == 3
    assert [e.data for e in net.applied[2]] == []
    net.campaign(2)
    net.heartbeat(3)
    assert net.leaders() == [2] and net[2].term == 2
    assert [e.data for e in net.applied[2]] == [b"", b"a", b"b", b""]
    assert [e.data for e in net.applied[1]] == [b""], "node 1 re-applies after its snapshot"


def test_soft_state_is_reported_when_it_changes() -> None:
    node = RaftNode(RaftConfig(1, frozenset({1})), random.Random(0))
    assert node.ready().soft_state is None
    node.tick()
    assert node.ready().soft_state == SoftState(1, Role.LEADER)
    node.tick()
    assert node.ready().soft_state is None


@pytest.mark.parametrize(
    ("hard_state", "snapshot", "entries"),
    [
        (HardState(1, 1, 3), None, [Entry(1, 1, b""), Entry(1, 2, b"")]),
        (HardState(), None, [Entry(1, 2, b"")]),
        (HardState(), Snapshot(4, 1, b""), [Entry(1, 4, b"")]),
        (HardState(), None, [Entry(1, 1, b""), Entry(1, 3, b"")]),
    ],
    ids=["commit-past-log", "gap-at-start", "overlaps-snapshot", "gap-inside"],
)
def test_inconsistent_persisted_state_is_refused(
    hard_state: HardState, snapshot: Snapshot | None, entries: list[Entry]
) -> None:
    with pytest.raises(ValueError):
        RaftNode(CONFIG, random.Random(0), hard_state, snapshot, entries)
