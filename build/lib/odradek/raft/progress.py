"""The leader's view of one follower (voter or observer) and the flow control of what it sends
there, after etcd-io/raft's tracker: PROBE sends one message at a time until the follower's
log position is known, REPLICATE pipelines up to a bounded number of unacknowledged messages,
SNAPSHOT waits for an InstallSnapshot to be answered."""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field


class ProgressState(enum.Enum):
    PROBE = "probe"
    REPLICATE = "replicate"
    SNAPSHOT = "snapshot"


@dataclass(slots=True)
class Progress:
    match: int = 0
    """The highest index known to be replicated on the follower."""
    next: int = 1
    """The index of the next entry to send."""
    state: ProgressState = ProgressState.PROBE
    probe_sent: bool = False
    """PROBE: a message with entries is unanswered; wait for any answer before the next."""
    inflight: deque[int] = field(default_factory=deque)
    """REPLICATE: the last index of every unacknowledged message, oldest first."""
    pending_snapshot: int = 0
    """SNAPSHOT: the index of the snapshot sent."""
    waited: int = 0
    """Ticks since the follower last acknowledged anything while messages were outstanding."""
    sent_commit: int = 0
    """The highest commit index the follower can have learned from what was sent."""
    recent_active: bool = False
    """The follower answered since the last check-quorum round."""

    def become_probe(self) -> None:
        self.state = ProgressState.PROBE
        self.next = self.match + 1
        self._reset()

    def become_replicate(self) -> None:
        self.state = ProgressState.REPLICATE
        self.next = self.match + 1
        self._reset()

    def become_snapshot(self, index: int) -> None:
        self.state = ProgressState.SNAPSHOT
        self._reset()
        self.pending_snapshot = index
        self.next = index + 1

    def _reset(self) -> None:
        self.probe_sent = False
        self.inflight.clear()
        self.pending_snapshot = 0
        self.waited = 0

    def paused(self, max_inflight: int) -> bool:
        """Whether no further entries may be sent now."""
        if self.state is ProgressState.PROBE:
            return self.probe_sent
        if self.state is ProgressState.REPLICATE:
            return len(self.inflight) >= max_inflight
        return True

    def sent(self, last: int) -> None:
        """A message carrying entries up to `last` went out."""
        if self.state is ProgressState.REPLICATE:
            self.inflight.append(last)
            self.next = last + 1
        else:
            self.probe_sent = True

    def outstanding(self) -> bool:
        """Whether something sent is unacknowledged (a lost message would stall here)."""
        if self.state is ProgressState.REPLICATE:
            return bool(self.inflight)
        return self.state is ProgressState.SNAPSHOT

    def acknowledged(self, index: int) -> bool:
        """The follower's log matches up to `index`. Returns whether that is news."""
        if index <= self.match:
            return False
        self.match = index
        self.next = max(self.next, index + 1)
        self.waited = 0
        while self.inflight and self.inflight[0] <= index:
            self.inflight.popleft()
        return True

    def rejected(self, index: int, hint: int) -> bool:
        """The follower refused an append after `index`; its log may match up to `hint`.
        Moves `next` back and returns True unless the refusal is stale."""
        if self.state is ProgressState.REPLICATE:
            if index <= self.match:
                return False
        elif self.state is ProgressState.PROBE:
            if index != self.next - 1:
                return False
        else:
            return False
        self.state = ProgressState.PROBE
        self._reset()
        self.next = max(min(index, hint + 1), self.match + 1)
        self.sent_commit = min(self.sent_commit, self.next - 1)
        return True
