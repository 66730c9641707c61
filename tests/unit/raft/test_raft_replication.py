"""Log replication: commitment, conflict truncation, fast backtracking, the current-term
commit rule (Raft Figure 8), flow control and the Ready contract."""

from __future__ import annotations

import random

import pytest

from odradek.raft import (
    Entry,
    HardState,
    Message,
    MessageType,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    RaftSafetyError,
    Role,
)
from tests.sim.net import Net


def entries(*terms: int, start: int = 1) -> list[Entry]:
    return [Entry(term, start + i, f"{term}.{start + i}".encode()) for i, term in
            enumerate(terms)]


def restored(net: Net, node_id: int, term: int, log: list[Entry], commit: int = 0,
             **config: object) -> RaftNode:
    """Give a node of `net` this persisted state and restart it from there."""
    disk = net.disks[node_id]
    disk.write(HardState(term, -1, commit), log, sync=True)
    return net.restart(node_id, **config)


def test_proposals_commit_and_are_applied_once_each_in_order() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.propose(1, b"a", b"b")
    net.propose(1, b"c")
    net.heartbeat(2)
    for node_id in (1, 2, 3):
        assert [e.data for e in net.applied[node_id]] == [b"", b"a", b"b", b"c"]
        assert [e.index for e in net.applied[node_id]] == [1, 2, 3, 4]
        assert net[node_id].commit_index == net[node_id].applied == 4


def test_proposing_anywhere_but_the_leader_names_the_leader() -> None:
    net = Net([1, 2, 3])
    with pytest.raises(NotLeaderError) as no_leader:
        net[2].propose(b"x")
    assert no_leader.value.leader == -1
    net.campaign(1)
    with pytest.raises(NotLeaderError) as follower:
        net[2].propose(b"x")
    assert follower.value.leader == 1


def test_the_leader_replicates_to_a_follower_that_was_down() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.stopped.add(3)
    net.propose(1, *[f"{i}".encode() for i in range(20)])
    assert net[1].commit_index == 21
    net.heal()
    net.heartbeat(10)
    assert net[3].commit_index == 21 and len(net.applied[3]) == 21


def test_a_divergent_uncommitted_tail_is_truncated_and_replaced() -> None:
    net = Net([1, 2, 3])
    restored(net, 1, 3, entries(1, 1, 3, 3), commit=2)
    restored(net, 2, 2, entries(1, 1, 2, 2, 2), commit=2)
    restored(net, 3, 2, entries(1, 1), commit=2)
    net.campaign(1)
    assert net.leaders() == [1] and net[1].term == 4
    net.heartbeat(2)
    assert net.log_terms(2) == net.log_terms(1) == [1, 1, 3, 3, 4]
    assert net.log_terms(3) == [1, 1, 3, 3, 4]
    replaced = [r.entries for r in net.readies[2] if r.entries]
    assert replaced[0][0].index == 3, "the replacement starts at the first conflicting index"
    assert [e.term for e in net.applied[2]] == [1, 1, 3, 3, 4]


def test_fast_backtracking_skips_a_long_divergent_tail_in_few_round_trips() -> None:
    net = Net([1, 2, 3])
    restored(net, 1, 3, entries(1, *[3] * 40), commit=1)
    restored(net, 2, 2, entries(1, *[2] * 60), commit=1)
    restored(net, 3, 3, entries(1, *[3] * 40), commit=1)
    net.campaign(1)
    net.heartbeat(3)
    rejections = [m for m in net.sent_of(MessageType.APPEND_RESPONSE, 2) if m.reject]
    assert 1 <= len(rejections) <= 2
    assert net.log_terms(2) == net.log_terms(1)


def test_the_follower_hint_skips_a_tail_of_terms_the_leader_never_had() -> None:
    """etcd-io/raft's second example: the follower's uncommitted tail has higher terms
    than the leader's entries at those indexes, so only the follower can skip it."""
    net = Net([1, 2, 3])
    leader_log = entries(1, *[3] * 30, 7)
    restored(net, 1, 40, leader_log, commit=1)
    restored(net, 2, 31, entries(1, 3, 3, *range(4, 31)), commit=1)
    restored(net, 3, 40, leader_log, commit=1)
    net.campaign(1)
    net.heartbeat(3)
    rejections = [m for m in net.sent_of(MessageType.APPEND_RESPONSE, 2) if m.reject]
    assert 1 <= len(rejections) <= 3
    assert net.log_terms(2) == net.log_terms(1)


def test_an_entry_of_an_earlier_term_is_not_committed_by_counting_replicas() -> None:
    """Raft Figure 8: the new leader's term-2 entry reaches a majority, but only its own
    term-3 entry, once replicated, commits both."""
    net = Net([1, 2, 3], max_entries_per_message=1)
    restored(net, 1, 2, entries(1, 2), commit=1, max_entries_per_message=1)
    restored(net, 2, 2, entries(1), commit=1)
    restored(net, 3, 2, entries(1), commit=1)
    net.drop = lambda m: m.type is MessageType.APPEND and any(e.term == 3 for e in m.entries)
    net.campaign(1)
    net.heartbeat(3)
    assert net[1].role is Role.LEADER and net[1].term == 3
    assert net.log_terms(2) == [1, 2], "the earlier-term entry is on a majority"
    assert net[1].commit_index == 1
    net.drop = lambda m: False
    net.heartbeat(3)
    assert net[1].commit_index == 3
    assert [e.term for e in net.applied[1]] == [1, 2, 3]


def test_followers_learn_the_commit_index_without_new_entries() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.propose(1, b"a")
    assert net[1].commit_index == 2
    net.heartbeat()
    assert net[2].commit_index == net[3].commit_index == 2


def test_entries_are_not_resent_every_tick_to_a_silent_follower() -> None:
    net = Net([1, 2, 3], election_ticks=20, heartbeat_ticks=1)
    net.campaign(1)
    net.stopped.add(3)
    net.propose(1, b"a", b"b")
    net.propose(1, b"c")
    for _ in range(60):
        net.tick(1)
        net.deliver()
    to_3 = [m for m in net.sent_of(MessageType.APPEND, 1) if m.target == 3]
    carrying_a = [m for m in to_3 if any(e.data == b"a" for e in m.entries)]
    assert len(carrying_a) == 2, "sent once, then once more as a probe after a stall"
    assert len(to_3) >= 60, "heartbeats went on"
    assert net[1].role is Role.LEADER


def test_replication_pipelines_up_to_the_inflight_limit() -> None:
    net = Net([1, 2], max_entries_per_message=1, max_inflight_messages=3)
    net.campaign(1)
    net.heartbeat()
    node = net[1]
    net.queue.clear()
    for i in range(10):
        node.propose(f"{i}".encode())
    ready = node.ready()
    appended = [m.entries[0].index for m in ready.messages if m.entries]
    assert appended == [2, 3, 4]
    node.step(Message(MessageType.APPEND_RESPONSE, 2, 1, node.term, index=2))
    assert [m.entries[0].index for m in node.ready().messages if m.entries] == [5]


def test_a_rejection_sends_the_leader_back_to_probing_from_the_hint() -> None:
    net = Net([1, 2], max_entries_per_message=2)
    net.campaign(1)
    net.heartbeat()
    node = net[1]
    net.queue.clear()
    for i in range(6):
        node.propose(f"{i}".encode())
    node.ready()
    node.step(Message(MessageType.APPEND_RESPONSE, 2, 1, node.term, index=1, reject=True,
                      reject_hint=1))
    assert node.ready().messages == [], "a rejection of an index already matched is stale"
    node.step(Message(MessageType.APPEND_RESPONSE, 2, 1, node.term, index=3, reject=True,
                      reject_hint=1, log_term=1))
    (probe,) = node.ready().messages
    assert (probe.index, [e.index for e in probe.entries]) == (1, [2, 3])


def test_must_sync_covers_entries_and_term_or_vote_changes_but_not_commit_alone() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.heartbeat(2)
    previous = HardState()
    kinds = set()
    for ready in net.readies[2]:
        if ready.entries:
            assert ready.must_sync
            kinds.add("entries")
        if ready.hard_state is not None:
            voted = (ready.hard_state.term, ready.hard_state.vote) != (previous.term,
                                                                       previous.vote)
            if not ready.entries:
                assert ready.must_sync is voted
                kinds.add("vote" if voted else "commit")
            previous = ready.hard_state
    assert kinds == {"entries", "vote", "commit"}


def test_every_message_leaves_through_ready() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0))
    node.step(Message(MessageType.APPEND, 1, 2, term=1, entries=(Entry(1, 1, b"a"),)))
    ready = node.ready()
    assert ready.entries == [Entry(1, 1, b"a")] and ready.must_sync
    assert [(m.type, m.index) for m in ready.messages] == [(MessageType.APPEND_RESPONSE, 1)]
    assert not node.has_ready()


def test_stale_and_misaddressed_messages_are_ignored() -> None:
    net = Net([1, 2, 3])
    net.campaign(1)
    net.heartbeat()
    node = net[2]
    node.step(Message(MessageType.APPEND, 1, 3, term=1, entries=(Entry(1, 2, b"x"),)))
    node.step(Message(MessageType.VOTE_RESPONSE, 3, 2, term=1))
    node.step(Message(MessageType.PRE_VOTE_RESPONSE, 3, 2, term=0))
    assert not node.has_ready()
    node.step(Message(MessageType.APPEND, 3, 2, term=0, entries=(Entry(0, 2, b"x"),)))
    (response,) = node.ready().messages
    assert response.term == 1 and node.last_index == 1, "tells the stale leader the term"


def test_a_duplicated_append_changes_nothing() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0))
    append = Message(MessageType.APPEND, 1, 2, term=1, entries=tuple(entries(1, 1)), commit=1)
    node.step(append)
    first = node.ready()
    node.step(append)
    again = node.ready()
    assert first.entries == entries(1, 1) and again.entries == []
    assert [e.index for e in first.committed_entries] == [1] and again.committed_entries == []
    assert again.messages[0].index == 2


def test_an_append_below_the_commit_index_is_acknowledged_at_the_commit() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(1, 1, 2),
                    entries=entries(1, 1))
    node.step(Message(MessageType.APPEND, 1, 2, term=1, index=0, log_term=0,
                      entries=tuple(entries(1, 1, 1)), commit=3))
    ready = node.ready()
    assert [e.index for e in ready.entries] == [3]
    assert ready.messages[0].index == 3 and node.commit_index == 3


def test_overwriting_a_committed_entry_is_refused_loudly() -> None:
    node = RaftNode(RaftConfig(2, frozenset({1, 2, 3})), random.Random(0), HardState(2, 1, 2),
                    entries=entries(1, 2))
    with pytest.raises(RaftSafetyError, match="conflicts with a committed entry"):
        node.step(Message(MessageType.APPEND, 3, 2, term=3, index=1, log_term=1,
                          entries=(Entry(3, 2, b"other"),)))


def test_single_voter_commits_each_proposal_at_once() -> None:
    node = RaftNode(RaftConfig(1, frozenset({1}), observers=frozenset({2})), random.Random(0))
    node.tick()
    first = node.ready()
    assert [(m.target, m.entries) for m in first.messages] == [(2, (Entry(1, 1, b""),))]
    node.advance(first)
    index = node.propose(b"a")
    ready = node.ready()
    assert index == 2 and ready.entries == [Entry(1, 2, b"a")]
    assert ready.committed_entries == [Entry(1, 2, b"a")]
