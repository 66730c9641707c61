"""Compaction and InstallSnapshot: followers behind the leader's log start get the snapshot,
install it through Ready, and continue from the entries after it."""

from __future__ import annotations

import random

import pytest

from odradek.raft import Entry, HardState, Message, MessageType, RaftConfig, RaftNode, Snapshot
from tests.sim.net import Net


def compact_leader(net: Net, node_id: int) -> Snapshot:
    node = net[node_id]
    term = net.applied[node_id][-1].term
    snapshot = Snapshot(node.applied, term, b"state@%d" % node.applied, net.voters)
    node.compact(snapshot)
    net.disks[node_id].save_snapshot(snapshot)
    return snapshot


def test_compaction_drops_entries_up_to_the_snapshot() -> None:
    net = Net([1])
    net.tick(1)
    net.propose(1, b"a", b"b", b"c")
    snapshot = compact_leader(net, 1)
    assert snapshot.index == 4
    assert net[1].first_index == 5 and net[1].last_index == 4
    assert net[1].propose(b"d") == 5


def test_compaction_is_refused_past_the_applied_index_and_ignored_when_older() -> None:
    net = Net([1])
    net.tick(1)
    net.propose(1, b"a")
    with pytest.raises(ValueError, match="applied"):
        net[1].compact(Snapshot(5, 1, b""))
    with pytest.raises(ValueError, match="term"):
        net[1].compact(Snapshot(2, 7, b""))
    net[1].compact(Snapshot(2, 1, b""))
    net[1].compact(Snapshot(1, 1, b""))
    assert net[1].first_index == 3


def test_a_follower_behind_the_log_start_gets_the_snapshot_and_then_entries() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.stopped.add(3)
    net.propose(1, b"a", b"b")
    snapshot = compact_leader(net, 1)
    net.propose(1, b"c")
    net.heal()
    net.heartbeat(12)
    (sent,) = [m for m in net.sent_of(MessageType.INSTALL_SNAPSHOT, 1) if m.target == 3]
    assert sent.snapshot == snapshot
    (installed,) = [r for r in net.readies[3] if r.snapshot is not None]
    assert installed.snapshot == snapshot and installed.must_sync
    assert installed.hard_state is not None and installed.hard_state.commit == snapshot.index
    assert net.disks[3].snapshot == snapshot
    assert net[3].first_index == snapshot.index + 1
    assert [e.data for e in net.applied[3]] == [b"c"], "only the entries after the snapshot"
    assert net[3].applied == net[3].commit_index == net[1].commit_index == 4


def test_a_snapshot_newer_than_the_commit_replaces_a_conflicting_log() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(2, 1, 1),
                    entries=[Entry(1, 1, b""), Entry(2, 2, b"x"), Entry(2, 3, b"y")])
    snapshot = Snapshot(5, 3, b"state")
    node.step(Message(MessageType.INSTALL_SNAPSHOT, 1, 2, term=3, snapshot=snapshot))
    ready = node.ready()
    assert ready.snapshot == snapshot and ready.entries == [] and ready.must_sync
    assert ready.committed_entries == []
    assert [(m.type, m.index) for m in ready.messages] == [(MessageType.APPEND_RESPONSE, 5)]
    assert node.first_index == 6 and node.last_index == 5 and node.commit_index == 5
    assert node.applied == 0
    node.advance(ready)
    assert node.applied == 5
    node.step(Message(MessageType.APPEND, 1, 2, term=3, index=5, log_term=3, commit=6,
                      entries=(Entry(3, 6, b"z"),)))
    assert node.ready().committed_entries == [Entry(3, 6, b"z")]


def test_a_snapshot_matching_the_log_only_moves_the_commit_index() -> None:
    log = [Entry(1, 1, b""), Entry(1, 2, b"x"), Entry(1, 3, b"y")]
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(1, 1, 1),
                    entries=log)
    node.step(Message(MessageType.INSTALL_SNAPSHOT, 1, 2, term=1, snapshot=Snapshot(2, 1, b"")))
    ready = node.ready()
    assert ready.snapshot is None
    assert ready.committed_entries == log[:2]
    assert node.last_index == 3


def test_a_snapshot_at_or_below_the_commit_index_is_ignored() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(1, 1, 2),
                    entries=[Entry(1, 1, b""), Entry(1, 2, b"x")])
    node.step(Message(MessageType.INSTALL_SNAPSHOT, 1, 2, term=1, snapshot=Snapshot(2, 1, b"")))
    ready = node.ready()
    assert ready.snapshot is None
    assert [m.index for m in ready.messages] == [2]


def test_a_lost_snapshot_is_sent_again_after_an_election_timeout() -> None:
    net = Net([1, 2, 3], election_ticks=10)
    net.campaign(1)
    net.stopped.add(3)
    net.propose(1, b"a")
    compact_leader(net, 1)
    net.heal()
    net.drop = lambda m: m.type is MessageType.INSTALL_SNAPSHOT
    net.heartbeat(3)
    assert len(net.sent_of(MessageType.INSTALL_SNAPSHOT, 1)) == 1
    net.heal()
    net.heartbeat(12)
    assert len(net.sent_of(MessageType.INSTALL_SNAPSHOT, 1)) == 2
    assert net[3].commit_index == net[1].commit_index
