"""The Raft core in focused scenarios, with messages delivered by hand: elections, pre-vote,
check-quorum, conflict truncation, the current-term commit rule (the paper's Figure 8),
snapshots, leadership transfer, observers and restarts."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from odradek.raft import RaftConfig, RaftNode
from odradek.raft.types import (
    NO_NODE,
    Entry,
    HardState,
    Message,
    MessageType,
    NotLeaderError,
    Role,
    Snapshot,
)

ELECTION = 10


class Net:
    """Nodes whose Readys are carried out at once (an in-memory disk), with a queue of
    messages the test delivers, drops or filters."""

    def __init__(self, voters: int, observers: int = 0, max_entries: int = 256) -> None:
        voter_ids = frozenset(range(1, voters + 1))
        observer_ids = frozenset(range(voters + 1, voters + observers + 1))
        self.configs = {
            i: RaftConfig(i, voter_ids, observer_ids, election_ticks=ELECTION,
                          max_entries_per_message=max_entries)
            for i in sorted(voter_ids | observer_ids)
        }
        self.nodes = {i: RaftNode(c, random.Random(i)) for i, c in self.configs.items()}
        self.disks: dict[int, tuple[HardState, list[Entry]]] = {
            i: (HardState(), []) for i in self.nodes
        }
        self.queue: list[Message] = []
        self.applied: dict[int, list[Entry]] = {i: [] for i in self.nodes}
        self.down: set[int] = set()

    def flush(self) -> None:
        for i, node in self.nodes.items():
            if i in self.down:
                continue
            while node.has_ready():
                ready = node.ready()
                hard, entries = self.disks[i]
                if ready.entries:
                    first = ready.entries[0].index
                    entries = [e for e in entries if e.index < first] + ready.entries
                self.disks[i] = (ready.hard_state or hard, entries)
                self.queue += ready.messages
                self.applied[i] += ready.committed_entries
                node.advance(ready)

    def deliver(self, allow: Callable[[Message], bool] = lambda m: True, rounds: int = 50) -> None:
        for _ in range(rounds):
            self.flush()
            if not self.queue:
                return
            batch, self.queue = self.queue, []
            for message in batch:
                if message.target not in self.down and message.source not in self.down \
                        and allow(message):
                    self.nodes[message.target].step(message)

    def tick(self, node_ids: list[int] | None = None, times: int = 1) -> None:
        for _ in range(times):
            for i in node_ids or list(self.nodes):
                if i not in self.down:
                    self.nodes[i].tick()
            self.flush()

    def elect(self, candidate: int,
              allow: Callable[[Message], bool] = lambda m: True) -> None:
        """Let the others' leases lapse (dropping what they send), then `candidate` time out
        and win."""
        others = [i for i in self.nodes if i != candidate and i not in self.down]
        self.tick(others, times=ELECTION)
        self.queue.clear()
        self.tick([candidate], times=2 * ELECTION)
        self.deliver(allow)
        assert self.nodes[candidate].role is Role.LEADER

    def restart(self, node_id: int) -> None:
        hard, entries = self.disks[node_id]
        self.nodes[node_id] = RaftNode(self.configs[node_id], random.Random(node_id), hard,
                                       None, entries)
        self.applied[node_id] = []
        self.down.discard(node_id)


def between(*ids: int) -> Callable[[Message], bool]:
    allowed = set(ids)
    return lambda m: m.source in allowed and m.target in allowed


def test_a_single_voter_elects_itself_on_its_first_tick() -> None:
    net = Net(1)
    net.tick()
    assert net.nodes[1].role is Role.LEADER
    index = net.nodes[1].propose(b"x")
    net.flush()
    assert [e.data for e in net.applied[1]] == [b"", b"x"] and index == 2


def test_three_voters_elect_one_leader_that_replicates_and_commits() -> None:
    net = Net(3)
    net.elect(1)
    net.nodes[1].propose(b"a")
    net.deliver()
    net.tick(times=2)
    net.deliver()
    assert {n.leader for n in net.nodes.values()} == {1}
    assert all([e.data for e in net.applied[i]] == [b"", b"a"] for i in net.nodes)
    with pytest.raises(NotLeaderError) as refused:
        net.nodes[2].propose(b"b")
    assert refused.value.leader == 1


def test_pre_vote_keeps_a_rejoining_partitioned_node_from_disrupting_the_leader() -> None:
    net = Net(3)
    net.elect(1)
    term = net.nodes[1].term
    net.down.add(3)
    net.tick([1, 2], times=3)
    net.deliver()
    net.down.discard(3)
    net.tick([3], times=5 * ELECTION)  # keeps pre-campaigning, alone
    assert net.nodes[3].term == term  # pre-votes do not inflate its term
    net.deliver()
    net.tick(times=3)
    net.deliver()
    assert net.nodes[1].role is Role.LEADER and net.nodes[1].term == term
    assert net.nodes[3].leader == 1


def test_without_pre_vote_the_same_rejoin_would_bump_the_term() -> None:
    net = Net(3)
    for i, config in net.configs.items():
        net.configs[i] = RaftConfig(i, config.voters, election_ticks=ELECTION, pre_vote=False)
        net.nodes[i] = RaftNode(net.configs[i], random.Random(i))
    net.elect(1)
    term = net.nodes[1].term
    net.down.add(3)
    net.down.discard(3)
    net.tick([3], times=2 * ELECTION)
    assert net.nodes[3].term > term


def test_check_quorum_makes_an_isolated_leader_step_down() -> None:
    net = Net(3)
    net.elect(1)
    net.tick([1], times=2 * ELECTION + 1)
    net.deliver(allow=lambda m: False)
    assert net.nodes[1].role is Role.FOLLOWER and net.nodes[1].leader == NO_NODE


def test_a_follower_in_its_lease_ignores_vote_requests() -> None:
    net = Net(3)
    net.elect(1)
    net.tick(times=2)
    net.deliver()
    vote = Message(MessageType.VOTE, 3, 2, net.nodes[2].term + 5, log_term=99, index=99)
    net.nodes[2].step(vote)
    net.flush()
    assert net.nodes[2].term < vote.term and net.nodes[2].leader == 1
    assert all(m.reject for m in net.queue)


def test_divergent_uncommitted_entries_are_replaced_by_the_new_leaders() -> None:
    net = Net(3)
    net.elect(1)
    net.deliver()
    net.down.update({2, 3})
    for data in (b"lost-1", b"lost-2"):
        net.nodes[1].propose(data)
    net.flush()
    net.down = {1}
    net.elect(2)
    net.nodes[2].propose(b"kept")
    net.deliver()
    net.restart(1)
    net.tick(times=3)
    net.deliver()
    net.tick(times=3)
    net.deliver()
    assert [e.data for e in net.applied[1]][-1:] == [b"kept"]
    assert b"lost-1" not in [e.data for e in net.disks[1][1]]
    assert [e.data for e in net.applied[1]] == [e.data for e in net.applied[3]]


def test_entries_of_an_earlier_term_are_not_committed_by_counting_replicas() -> None:
    """Figure 8: a leader counts replicas only for entries of its own term."""
    net = Net(3, max_entries=1)
    noop = Entry(1, 1, b"")
    net.disks = {
        1: (HardState(1, 1, 1), [noop, Entry(1, 2, b"old-term")]),
        2: (HardState(1, 1, 1), [noop]),
        3: (HardState(1, 1, 1), [noop]),
    }
    for node_id in net.nodes:
        net.restart(node_id)
    # a follower gets index 2, but never the new term's no-op at index 3 after it (an
    # append it would reject, for lacking index 2, is let through)
    net.elect(1, allow=lambda m: all(e.index <= 2 for e in m.entries)
              or net.nodes[m.target].last_index < m.index)
    leader = net.nodes[1]
    assert leader.term == 2
    assert all(net.nodes[i].last_index == 2 for i in (2, 3))
    assert leader.commit_index < 2, "an earlier term's entry was committed by counting"
    net.tick(times=2)
    net.deliver()
    assert leader.commit_index == 3
    assert [e.data for e in net.applied[1]] == [b"", b"old-term", b""]


def test_a_follower_behind_the_log_start_gets_the_snapshot() -> None:
    net = Net(3)
    net.elect(1)
    net.down.add(3)
    for i in range(5):
        net.nodes[1].propose(f"e{i}".encode())
    net.deliver()
    leader = net.nodes[1]
    snapshot = Snapshot(leader.applied, leader.term, b"state", frozenset({1, 2, 3}))
    leader.compact(snapshot)
    assert leader.first_index == snapshot.index + 1
    net.down.discard(3)
    sent: list[Message] = []
    net.tick(times=2)
    net.deliver(allow=lambda m: sent.append(m) or True)
    assert any(m.type is MessageType.INSTALL_SNAPSHOT and m.target == 3 for m in sent)
    assert net.nodes[3].applied == snapshot.index
    assert net.nodes[3].commit_index >= snapshot.index


def test_leadership_transfer_hands_over_after_catching_the_target_up() -> None:
    net = Net(3)
    net.elect(1)
    net.nodes[1].propose(b"a")
    net.deliver()
    net.nodes[1].transfer_leadership(2)
    with pytest.raises(NotLeaderError):
        net.nodes[1].propose(b"refused while transferring")
    net.deliver()
    assert net.nodes[2].role is Role.LEADER
    assert net.nodes[1].role is Role.FOLLOWER and net.nodes[1].leader == 2


def test_an_observer_replicates_but_never_campaigns_or_votes() -> None:
    net = Net(3, observers=1)
    net.elect(1)
    net.nodes[1].propose(b"a")
    net.deliver()
    net.tick(times=2)
    net.deliver()
    observer = net.nodes[4]
    assert observer.role is Role.OBSERVER
    assert [e.data for e in net.applied[4]] == [b"", b"a"]
    net.down = {1, 2, 3}
    net.tick([4], times=10 * ELECTION)
    assert observer.role is Role.OBSERVER and not net.queue


def test_a_restarted_node_keeps_its_term_vote_and_log() -> None:
    net = Net(3)
    net.elect(1)
    net.nodes[1].propose(b"a")
    net.deliver()
    before = net.nodes[2]
    net.restart(2)
    after = net.nodes[2]
    assert (after.term, after.vote, after.last_index) == (before.term, before.vote,
                                                          before.last_index)
    assert after.role is Role.FOLLOWER and after.leader == NO_NODE
