"""A Raft node as a pure state machine in etcd-io/raft's RawNode shape: `tick`, `step`,
`propose`, `ready`, `advance`. No IO, clocks or global randomness: time is `tick()` and the
election jitter comes from the `random.Random` the caller passes in.

Every message leaves through `Ready.messages`, which the shell sends only after persisting
the same Ready's snapshot, entries and hard state, so no message ever depends on state that
could still be lost. The leader counts its own log towards commitment as soon as it appends:
its followers can only acknowledge entries after the leader's Ready holding them was
persisted, so a quorum of acknowledgements always includes durable copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.raft.log import RaftLog
from odradek.raft.progress import Progress, ProgressState
from odradek.raft.types import (
    NO_NODE,
    Entry,
    HardState,
    Message,
    MessageType,
    NotLeaderError,
    Ready,
    Role,
    Snapshot,
    SoftState,
)

if TYPE_CHECKING:
    import random

_VOTE_REQUESTS = frozenset({MessageType.PRE_VOTE, MessageType.VOTE})
_FROM_LEADER = frozenset({MessageType.APPEND, MessageType.INSTALL_SNAPSHOT})
_RESPONSE_TO = {
    MessageType.PRE_VOTE: MessageType.PRE_VOTE_RESPONSE,
    MessageType.VOTE: MessageType.VOTE_RESPONSE,
}


class RaftSafetyError(RuntimeError):
    """A leader asked this node to overwrite committed entries: a Raft invariant is broken
    (a bug, or a log that lost fsynced data)."""


@dataclass(frozen=True, slots=True)
class RaftConfig:
    node_id: int
    voters: frozenset[int]
    """Static voters (Kafka's controller.quorum.voters)."""
    observers: frozenset[int] = frozenset()
    """Learners the leader also replicates to; they never vote or campaign."""
    election_ticks: int = 10
    """Followers campaign after a randomized timeout in [election_ticks, 2*election_ticks)
    without hearing from a leader; a leader steps down (check_quorum) when a majority has
    not answered within election_ticks."""
    heartbeat_ticks: int = 1
    pre_vote: bool = True
    check_quorum: bool = True
    max_entries_per_message: int = 256
    max_inflight_messages: int = 32
    """Unacknowledged append messages in flight to one follower while replicating."""

    def __post_init__(self) -> None:
        if not self.voters:
            raise ValueError("a Raft quorum needs at least one voter")
        if self.heartbeat_ticks < 1 or self.election_ticks <= self.heartbeat_ticks:
            raise ValueError(f"need 1 <= heartbeat_ticks ({self.heartbeat_ticks}) < "
                             f"election_ticks ({self.election_ticks})")
        if self.max_entries_per_message < 1 or self.max_inflight_messages < 1:
            raise ValueError("max_entries_per_message and max_inflight_messages must be >= 1")


class RaftNode:
    def __init__(
        self,
        config: RaftConfig,
        rng: random.Random,
        hard_state: HardState = HardState(),  # noqa: B008 - frozen
        snapshot: Snapshot | None = None,
        entries: Sequence[Entry] = (),
    ) -> None:
        """Restore from what the shell persisted: `entries` follow `snapshot` (or start at
        index 1). Entries up to the snapshot count as applied; the shell restores the
        snapshot into its state machine itself and gets the later committed entries again
        through Ready."""
        self.config = config
        self._rng = rng
        self._voter = config.node_id in config.voters
        self._quorum = len(config.voters) // 2 + 1
        self._peers = tuple(sorted((config.voters | config.observers) - {config.node_id}))
        self._log = RaftLog(snapshot.index if snapshot else 0, snapshot.term if snapshot else 0,
                            entries)
        if hard_state.commit > self._log.last_index:
            raise ValueError(f"commit {hard_state.commit} is past the last stored entry "
                             f"{self._log.last_index}: the log lost entries")
        self._snapshot = snapshot
        self._term = hard_state.term
        self._vote = hard_state.vote
        self._commit = max(hard_state.commit, self._log.offset)
        self._applied = self._log.offset
        self._applying = self._log.offset
        """Committed entries up to here were handed to the shell in a Ready."""
        self._stable = self._log.last_index
        """Entries up to here were handed to the shell to persist."""
        self._role = Role.FOLLOWER if self._voter else Role.OBSERVER
        self._leader = NO_NODE
        self._messages: list[Message] = []
        self._pending_snapshot: Snapshot | None = None
        """A snapshot received from the leader, for the next Ready."""
        self._prev_hard = HardState(self._term, self._vote, self._commit)
        self._prev_soft = SoftState(self._leader, self._role)
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._timeout = self._random_timeout()
        self._votes: dict[int, bool] = {}
        self._progress: dict[int, Progress] = {}
        self._transferee = NO_NODE
        self._transfer_elapsed = 0
        self._send_due: set[int] = set()
        """Leader: followers that may have entries or a commit index to be sent."""
        self._stall_ticks = 2 * config.heartbeat_ticks
        """Appends unacknowledged this long are presumed lost and sent again (a snapshot
        gets an election timeout)."""

    # --- facts ----------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def role(self) -> Role:
        return self._role

    @property
    def term(self) -> int:
        return self._term

    @property
    def vote(self) -> int:
        return self._vote

    @property
    def leader(self) -> int:
        """The leader of the current term, or NO_NODE if unknown."""
        return self._leader

    @property
    def commit_index(self) -> int:
        return self._commit

    @property
    def last_index(self) -> int:
        return self._log.last_index

    @property
    def first_index(self) -> int:
        """The first index still in the log (entries before it are in the snapshot)."""
        return self._log.first_index

    @property
    def applied(self) -> int:
        return self._applied

    def match_indexes(self) -> dict[int, int]:
        """Leader: the highest index known to be replicated on each other voter and observer
        (Raft's match index, 0 until the peer first acknowledges); empty on any other node."""
        if self._role is not Role.LEADER:
            return {}
        return {peer: pr.match for peer, pr in self._progress.items()}

    def _random_timeout(self) -> int:
        return self.config.election_ticks + self._rng.randrange(self.config.election_ticks)

    # --- time -----------------------------------------------------------------------------

    def tick(self) -> None:
        if self._role is Role.LEADER:
            self._tick_leader()
            return
        self._election_elapsed += 1
        if self._voter and (len(self.config.voters) == 1
                            or self._election_elapsed >= self._timeout):
            self._campaign(transfer=False)

    def _tick_leader(self) -> None:
        config = self.config
        self._election_elapsed += 1
        self._heartbeat_elapsed += 1
        if self._transferee != NO_NODE:
            self._transfer_elapsed += 1
            if self._transfer_elapsed >= config.election_ticks:
                self._transferee = NO_NODE
        if self._election_elapsed >= config.election_ticks:
            self._election_elapsed = 0
            if config.check_quorum and not self._quorum_active():
                self._become_follower(self._term, NO_NODE)
                return
        for peer, pr in self._progress.items():
            if pr.outstanding():
                pr.waited += 1
                limit = (config.election_ticks if pr.state is ProgressState.SNAPSHOT
                         else self._stall_ticks)
                if pr.waited >= limit:
                    pr.become_probe()
                    self._send_due.add(peer)
        if self._heartbeat_elapsed >= config.heartbeat_ticks:
            self._heartbeat_elapsed = 0
            for peer, pr in self._progress.items():
                self._send_heartbeat(peer, pr)

    def _quorum_active(self) -> bool:
        active = 1
        for peer, pr in self._progress.items():
            if pr.recent_active and peer in self.config.voters:
                active += 1
            pr.recent_active = False
        return active >= self._quorum

    # --- client requests ------------------------------------------------------------------

    def propose(self, data: bytes) -> int:
        """Append `data` to the leader's log; returns its index. Raises NotLeaderError when
        this node is not the leader or is handing leadership over."""
        if self._role is not Role.LEADER:
            raise NotLeaderError(self._leader)
        if self._transferee != NO_NODE:
            raise NotLeaderError(self._transferee)
        return self._append(data)

    def transfer_leadership(self, target: int) -> None:
        """Catch `target` up, then tell it to campaign at once (TIMEOUT_NOW). Proposals are
        refused meanwhile; the transfer is abandoned after an election timeout."""
        if self._role is not Role.LEADER:
            raise NotLeaderError(self._leader)
        if target not in self.config.voters:
            raise ValueError(f"node {target} is not a voter")
        if target == self.node_id or target == self._transferee:
            return
        self._transferee = target
        self._transfer_elapsed = 0
        if self._progress[target].match == self._log.last_index:
            self._send(Message(MessageType.TIMEOUT_NOW, self.node_id, target, self._term))
        else:
            self._send_due.add(target)

    def compact(self, snapshot: Snapshot) -> None:
        """The shell snapshotted its applied state at `snapshot.index`: drop the entries up
        to it and keep the snapshot for followers that are behind the log start."""
        if snapshot.index > self._applied:
            raise ValueError(f"cannot compact to {snapshot.index}: only {self._applied} "
                             f"is applied")
        if snapshot.index <= self._log.offset:
            return
        term = self._log.term_at(snapshot.index)
        if term != snapshot.term:
            raise ValueError(f"snapshot at {snapshot.index} has term {snapshot.term}; "
                             f"the log has {term}")
        self._log.compact(snapshot.index, snapshot.term)
        self._snapshot = snapshot
        self._stable = max(self._stable, snapshot.index)

    # --- ready / advance ------------------------------------------------------------------

    def has_ready(self) -> bool:
        """Whether `ready()` has work for the shell."""
        self._send_pending()
        hard, soft = self._prev_hard, self._prev_soft
        return bool(
            self._messages
            or self._pending_snapshot is not None
            or self._stable < self._log.last_index
            or self._applying < self._commit
            or hard.commit != self._commit
            or hard.term != self._term
            or hard.vote != self._vote
            or soft.leader != self._leader
            or soft.role is not self._role
        )

    def ready(self) -> Ready:
        """The work accumulated since the last Ready; each item is handed out once."""
        self._send_pending()
        hard = HardState(self._term, self._vote, self._commit)
        soft = SoftState(self._leader, self._role)
        log = self._log
        entries = log.slice(self._stable + 1, log.last_index)
        committed = log.slice(self._applying + 1, self._commit)
        ready = Ready(
            hard_state=hard if hard != self._prev_hard else None,
            entries=entries,
            snapshot=self._pending_snapshot,
            messages=self._messages,
            committed_entries=committed,
            soft_state=soft if soft != self._prev_soft else None,
            must_sync=bool(entries) or self._pending_snapshot is not None
            or (hard.term, hard.vote) != (self._prev_hard.term, self._prev_hard.vote),
        )
        self._stable = log.last_index
        self._applying = max(self._applying, self._commit)
        self._prev_hard, self._prev_soft = hard, soft
        self._pending_snapshot = None
        self._messages = []
        return ready

    def advance(self, ready: Ready) -> None:
        """The shell carried `ready` out: its snapshot and committed entries are applied
        (`applied` moves, which bounds `compact`)."""
        if ready.snapshot is not None:
            self._applied = max(self._applied, ready.snapshot.index)
        if ready.committed_entries:
            self._applied = max(self._applied, ready.committed_entries[-1].index)

    # --- roles ----------------------------------------------------------------------------

    def _reset(self, term: int) -> None:
        if term != self._term:
            self._term, self._vote = term, NO_NODE
        self._leader = NO_NODE
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._timeout = self._random_timeout()
        self._votes = {}
        self._progress = {}
        self._transferee = NO_NODE
        self._send_due = set()

    def _become_follower(self, term: int, leader: int) -> None:
        self._reset(term)
        self._role = Role.FOLLOWER if self._voter else Role.OBSERVER
        self._leader = leader

    def _campaign(self, transfer: bool) -> None:
        """Pre-vote first (asking for votes without changing the term) unless pre-vote is
        off or the leader asked this node to take over."""
        if not self.config.pre_vote or transfer:
            self._elect(force=transfer)
            return
        self._reset(self._term)
        self._role = Role.PRE_CANDIDATE
        self._request_votes(MessageType.PRE_VOTE, self._term + 1, force=False)

    def _elect(self, force: bool) -> None:
        self._reset(self._term + 1)
        self._role = Role.CANDIDATE
        self._vote = self.node_id
        self._request_votes(MessageType.VOTE, self._term, force)

    def _request_votes(self, kind: MessageType, term: int, force: bool) -> None:
        if self._poll(self.node_id, granted=True):
            return
        log = self._log
        for voter in sorted(self.config.voters - {self.node_id}):
            self._send(Message(kind, self.node_id, voter, term, log_term=log.last_term,
                               index=log.last_index, force=force))

    def _poll(self, voter: int, granted: bool) -> bool:
        """Record a vote; win or lose once a quorum has answered either way. Returns
        whether the (pre-)election ended."""
        self._votes.setdefault(voter, granted)
        yes = sum(self._votes.values())
        if yes >= self._quorum:
            if self._role is Role.PRE_CANDIDATE:
                self._elect(force=False)
            else:
                self._become_leader()
            return True
        if len(self._votes) - yes >= self._quorum:
            self._become_follower(self._term, NO_NODE)
            return True
        return False

    def _become_leader(self) -> None:
        self._reset(self._term)
        self._role = Role.LEADER
        self._leader = self.node_id
        next_index = self._log.last_index + 1
        self._progress = {peer: Progress(next=next_index) for peer in self._peers}
        self._append(b"")

    def _append(self, data: bytes) -> int:
        index = self._log.last_index + 1
        self._log.entries.append(Entry(self._term, index, data))
        self._send_due.update(self._progress)
        if self._quorum == 1:
            self._advance_commit_index()
        return index

    def _advance_commit_index(self) -> bool:
        """Advance the commit index to the highest index a quorum of voters holds, if the
        leader's entry there is of its own term (Raft §5.4.2)."""
        matches = [self._log.last_index]
        matches.extend(pr.match for peer, pr in self._progress.items()
                       if peer in self.config.voters)
        matches.sort(reverse=True)
        index = matches[self._quorum - 1]
        if index > self._commit and self._committable_by_counting(index):
            self._commit = index
            return True
        return False

    def _committable_by_counting(self, index: int) -> bool:
        """Only entries of the current term are committed by counting replicas; earlier
        ones are committed with them (Raft Figure 8)."""
        return self._log.term_at(index) == self._term

    # --- sending --------------------------------------------------------------------------

    def _send(self, message: Message) -> None:
        self._messages.append(message)

    def _send_pending(self) -> None:
        """Leader: send every follower what flow control allows (batched per Ready)."""
        if not self._send_due:
            return
        due, self._send_due = self._send_due, set()
        for peer in sorted(due):
            pr = self._progress[peer]
            if not self._send_entries(peer, pr) and min(self._commit, pr.match) > pr.sent_commit:
                self._send_heartbeat(peer, pr)

    def _send_entries(self, peer: int, pr: Progress) -> bool:
        """Send entries (or the snapshot) from `pr.next` while flow control allows; returns
        whether anything was sent."""
        log = self._log
        limit = self.config.max_inflight_messages
        sent = False
        while not pr.paused(limit):
            if pr.next <= log.offset:
                self._send_snapshot(peer, pr)
                return True
            if pr.next > log.last_index:
                break
            previous = pr.next - 1
            last = min(log.last_index, previous + self.config.max_entries_per_message)
            prev_term = log.term_at(previous)
            assert prev_term is not None
            self._send(Message(
                MessageType.APPEND, self.node_id, peer, self._term, log_term=prev_term,
                index=previous, entries=tuple(log.slice(pr.next, last)), commit=self._commit,
            ))
            pr.sent_commit = max(pr.sent_commit, min(self._commit, last))
            pr.sent(last)
            sent = True
        return sent

    def _send_snapshot(self, peer: int, pr: Progress) -> None:
        snapshot = self._snapshot
        assert snapshot is not None and snapshot.index == self._log.offset
        pr.become_snapshot(snapshot.index)
        self._send(Message(MessageType.INSTALL_SNAPSHOT, self.node_id, peer, self._term,
                           snapshot=snapshot))

    def _send_heartbeat(self, peer: int, pr: Progress) -> None:
        """An empty APPEND anchored at the follower's known match, which it holds, so it
        is accepted without disturbing the pipeline; it carries the commit index."""
        log = self._log
        previous = min(max(pr.match, log.offset), log.last_index)
        prev_term = log.term_at(previous)
        assert prev_term is not None
        self._send(Message(MessageType.APPEND, self.node_id, peer, self._term,
                           log_term=prev_term, index=previous, commit=self._commit))
        pr.sent_commit = max(pr.sent_commit, min(self._commit, previous))

    def _respond(self, to: int, index: int) -> None:
        self._send(Message(MessageType.APPEND_RESPONSE, self.node_id, to, self._term,
                           index=index))

    # --- receiving ------------------------------------------------------------------------

    def step(self, message: Message) -> None:
        """Handle a message from the network; stale or irrelevant ones are ignored."""
        if message.target != self.node_id or message.source == self.node_id:
            return
        kind = message.type
        if kind in _VOTE_REQUESTS and not (self._voter and message.source in self.config.voters):
            return  # observers never vote, and only voters may be voted for
        if message.term > self._term:
            if kind in _VOTE_REQUESTS and not message.force and self._in_lease():
                self._send(Message(_RESPONSE_TO[kind], self.node_id, message.source,
                                   self._term, reject=True))
                return
            if kind is MessageType.PRE_VOTE or (
                kind is MessageType.PRE_VOTE_RESPONSE and not message.reject
            ):
                pass  # a pre-vote is about a future term: ours does not change
            else:
                leader = message.source if kind in _FROM_LEADER else NO_NODE
                self._become_follower(message.term, leader)
        elif message.term < self._term:
            self._step_stale(message)
            return
        if kind in _VOTE_REQUESTS:
            self._answer_vote(message)
        elif self._role is Role.LEADER:
            if kind is MessageType.APPEND_RESPONSE:
                self._on_append_response(message)
        elif self._role in (Role.PRE_CANDIDATE, Role.CANDIDATE):
            self._step_candidate(message)
        else:
            self._step_follower(message)

    def _in_lease(self) -> bool:
        """Whether this node heard from a live leader within the election timeout: it then
        refuses to help depose it."""
        return (self.config.check_quorum and self._leader != NO_NODE
                and self._election_elapsed < self.config.election_ticks)

    def _step_stale(self, message: Message) -> None:
        if message.type in _FROM_LEADER and (self.config.check_quorum or self.config.pre_vote):
            # A deposed leader would otherwise never learn of the newer term: with pre-vote
            # and check-quorum the newer term does not reach it through votes.
            self._respond(message.source, 0)
        elif message.type is MessageType.PRE_VOTE:
            self._send(Message(MessageType.PRE_VOTE_RESPONSE, self.node_id, message.source,
                               self._term, reject=True))

    def _answer_vote(self, message: Message) -> None:
        source = message.source
        pre = message.type is MessageType.PRE_VOTE
        can_vote = (
            self._vote == source
            or (self._vote == NO_NODE and self._leader == NO_NODE)
            or (pre and message.term > self._term)
        )
        response = _RESPONSE_TO[message.type]
        if can_vote and self._log.is_up_to_date(message.log_term, message.index):
            self._send(Message(response, self.node_id, source, message.term))
            if not pre:
                self._election_elapsed = 0
                self._vote = source
        else:
            self._send(Message(response, self.node_id, source, self._term, reject=True))

    def _step_candidate(self, message: Message) -> None:
        kind = message.type
        if kind in _FROM_LEADER:
            self._become_follower(self._term, message.source)
            self._step_follower(message)
            return
        expected = (MessageType.PRE_VOTE_RESPONSE if self._role is Role.PRE_CANDIDATE
                    else MessageType.VOTE_RESPONSE)
        if kind is not expected or message.source not in self.config.voters:
            return
        if kind is MessageType.PRE_VOTE_RESPONSE and not message.reject and (
            message.term != self._term + 1
        ):
            return  # granted in an earlier round
        self._poll(message.source, granted=not message.reject)

    def _step_follower(self, message: Message) -> None:
        kind = message.type
        if kind in _FROM_LEADER:
            self._election_elapsed = 0
            self._leader = message.source
            if kind is MessageType.APPEND:
                self._on_append(message)
            else:
                self._on_snapshot(message)
        elif kind is MessageType.TIMEOUT_NOW and self._voter:
            self._campaign(transfer=True)

    def _on_append(self, message: Message) -> None:
        log = self._log
        previous, entries = message.index, message.entries
        if previous < self._commit:
            # Our committed prefix is in every later leader's log: skip to its end.
            skip = min(len(entries), self._commit - previous)
            for entry in entries[:skip]:
                if log.term_at(entry.index) not in (None, entry.term):
                    raise RaftSafetyError(
                        f"node {self.node_id}: leader {message.source} (term {message.term}) "
                        f"sent entry {entry.index} of term {entry.term}, which conflicts with "
                        f"a committed entry")
            previous, entries = previous + skip, entries[skip:]
            if previous < self._commit:
                self._respond(message.source, self._commit)
                return
        elif log.term_at(previous) != message.log_term:
            hint = log.find_conflict_by_term(min(previous, log.last_index), message.log_term)
            self._send(Message(
                MessageType.APPEND_RESPONSE, self.node_id, message.source, self._term,
                index=message.index, reject=True, reject_hint=hint,
                log_term=log.term_at(hint) or 0,
            ))
            return
        for position, entry in enumerate(entries):
            if log.term_at(entry.index) != entry.term:
                if entry.index <= log.last_index:
                    log.truncate_after(entry.index - 1)
                    self._stable = min(self._stable, entry.index - 1)
                log.append(entries[position:])
                break
        last_new = previous + len(entries)
        self._commit = max(self._commit, min(message.commit, last_new))
        self._respond(message.source, last_new)

    def _on_snapshot(self, message: Message) -> None:
        snapshot = message.snapshot
        if snapshot is None:
            return
        if snapshot.index <= self._commit:
            self._respond(message.source, self._commit)
            return
        if self._log.term_at(snapshot.index) == snapshot.term:
            self._commit = snapshot.index
        else:
            self._log.restore(snapshot)
            self._snapshot = snapshot
            self._pending_snapshot = snapshot
            self._stable = snapshot.index
            self._commit = snapshot.index
            self._applying = snapshot.index
        self._respond(message.source, snapshot.index)

    def _on_append_response(self, message: Message) -> None:
        pr = self._progress.get(message.source)
        if pr is None:
            return
        pr.recent_active = True
        self._send_due.add(message.source)
        if message.reject:
            hint = message.reject_hint
            if message.log_term > 0:
                hint = self._log.find_conflict_by_term(hint, message.log_term)
            pr.rejected(message.index, hint)
            pr.probe_sent = False
            return
        index = min(message.index, self._log.last_index)
        news = pr.acknowledged(index)
        if pr.state is ProgressState.PROBE:
            pr.probe_sent = False
            if news or index == pr.match:
                pr.become_replicate()
        elif pr.state is ProgressState.SNAPSHOT and pr.match >= self._log.offset:
            pr.become_replicate()
        if news and self._advance_commit_index():
            self._send_due.update(self._progress)
        if message.source == self._transferee and pr.match == self._log.last_index:
            self._send(Message(MessageType.TIMEOUT_NOW, self.node_id, message.source,
                               self._term))
