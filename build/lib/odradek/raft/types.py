"""The values the Raft core exchanges with its shell: log entries, messages, snapshots,
the durable hard state and the `Ready` batch of work the shell carries out."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_NODE = -1
"""No leader known, or no vote cast."""


@dataclass(frozen=True, slots=True)
class Entry:
    term: int
    index: int
    data: bytes
    """The proposed payload; b"" for the no-op a new leader appends to commit its term."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The applied state machine at `index` (whose entry had `term`), serialised by the
    shell; `voters` is the configuration in force at that index."""

    index: int
    term: int
    data: bytes
    voters: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class HardState:
    """What must be durable before any message that depends on it is sent."""

    term: int = 0
    vote: int = NO_NODE
    commit: int = 0


class Role(enum.Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre_candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"
    OBSERVER = "observer"
    """A non-voter (learner): receives the log, never campaigns or votes."""


class MessageType(enum.Enum):
    PRE_VOTE = "pre_vote"
    PRE_VOTE_RESPONSE = "pre_vote_response"
    VOTE = "vote"
    VOTE_RESPONSE = "vote_response"
    APPEND = "append"
    APPEND_RESPONSE = "append_response"
    INSTALL_SNAPSHOT = "install_snapshot"
    TIMEOUT_NOW = "timeout_now"
    """Leadership transfer: the target campaigns at once."""


@dataclass(frozen=True, slots=True)
class Message:
    """One Raft message. Field meaning by type:

    - PRE_VOTE/VOTE: `term` the (prospective) term, `log_term`/`index` the candidate's last
      entry, `force` set when campaigning after TIMEOUT_NOW (ignores leader leases).
    - *_RESPONSE to votes: `reject`.
    - APPEND: `log_term`/`index` the entry before `entries`, `commit` the leader's commit.
      An APPEND with no entries is the heartbeat.
    - APPEND_RESPONSE: `index` the follower's last matching index on success; on reject,
      `index` the rejected prev index and `reject_hint` a guess of the follower's last index.
    - INSTALL_SNAPSHOT: `snapshot`.
    """

    type: MessageType
    source: int
    target: int
    term: int
    log_term: int = 0
    index: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    reject_hint: int = 0
    snapshot: Snapshot | None = None
    force: bool = False


@dataclass(frozen=True, slots=True)
class SoftState:
    """Volatile facts the shell reports (metrics, redirection); not persisted."""

    leader: int
    role: Role


@dataclass(slots=True)
class Ready:
    """Work for the shell, done in this order: persist `snapshot`, `entries` (an entry whose
    index is already stored replaces it and every entry after it) and `hard_state`, fsyncing
    when `must_sync`; then send `messages`; then apply `snapshot` (if any) and
    `committed_entries`; then call `advance(ready)`."""

    hard_state: HardState | None = None
    entries: list[Entry] = field(default_factory=list)
    snapshot: Snapshot | None = None
    messages: list[Message] = field(default_factory=list)
    committed_entries: list[Entry] = field(default_factory=list)
    soft_state: SoftState | None = None
    must_sync: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.hard_state is not None
            or self.entries
            or self.snapshot is not None
            or self.messages
            or self.committed_entries
            or self.soft_state is not None
        )


class NotLeaderError(Exception):
    """A proposal reached a node that is not the leader (or is handing leadership over)."""

    def __init__(self, leader: int) -> None:
        super().__init__(f"not the leader; leader is {leader}")
        self.leader = leader
