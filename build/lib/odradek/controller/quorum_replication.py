"""What the Raft leader reports of its quorum's replication (KRaft's DescribeQuorum): for each
voter and each observer, how far its metadata log reaches, when it last fetched and when it
was last caught up. Kafka's LeaderState rules; pure: the caller passes the times in (ms).

Voters "fetch" when they answer the leader's appends; observers are the brokers, which report
the metadata offset they have applied in their heartbeats."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

UNKNOWN = -1
OBSERVER_SESSION_MS = 300_000
"""An observer not heard from this long is forgotten (Kafka's OBSERVER_SESSION_TIMEOUT_MS)."""


@dataclass(frozen=True, slots=True)
class ReplicaReport:
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(slots=True)
class ReplicaState:
    replica_id: int
    end_offset: int = UNKNOWN
    last_fetch_ms: int = UNKNOWN
    last_caught_up_ms: int = UNKNOWN
    leader_end_at_last_fetch: int = UNKNOWN

    def fetched(self, end_offset: int, leader_end: int, now_ms: int) -> None:
        """The replica's log reaches `end_offset` while the leader's reaches `leader_end`. It
        is caught up now if it has everything, or was caught up at its previous fetch if it
        now has all the leader had then."""
        if end_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif 0 < self.leader_end_at_last_fetch <= end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.leader_end_at_last_fetch = leader_end
        self.last_fetch_ms = max(self.last_fetch_ms, now_ms)
        self.end_offset = end_offset

    def report(self) -> ReplicaReport:
        return ReplicaReport(self.replica_id, self.end_offset, self.last_fetch_ms,
                             self.last_caught_up_ms)


class QuorumReplication:
    """One leadership's view: created when a node becomes leader, as Kafka's LeaderState is,
    so a new leader knows nothing of its followers until they answer it."""

    def __init__(self, leader_id: int, term: int, voters: Iterable[int]) -> None:
        self.leader_id = leader_id
        self.term = term
        self.voters = {v: ReplicaState(v) for v in sorted(voters) if v != leader_id}
        self.observers: dict[int, ReplicaState] = {}

    def voter_fetched(self, voter: int, end_offset: int, leader_end: int, now_ms: int) -> None:
        state = self.voters.get(voter)
        if state is not None:
            state.fetched(end_offset, leader_end, now_ms)

    def observer_fetched(self, observer: int, end_offset: int, leader_end: int,
                         now_ms: int) -> None:
        state = self.observers.setdefault(observer, ReplicaState(observer))
        state.fetched(end_offset, leader_end, now_ms)

    def describe(self, leader_end: int, now_ms: int
                 ) -> tuple[list[ReplicaReport], list[ReplicaReport]]:
        """(voters, observers), each by id; the leader reports itself fetched and caught up
        now, as Kafka's does. Observers silent for a session are dropped first."""
        for observer, state in list(self.observers.items()):
            if now_ms - state.last_fetch_ms >= OBSERVER_SESSION_MS:
                del self.observers[observer]
        leader = ReplicaReport(self.leader_id, leader_end, now_ms, now_ms)
        voters = [leader, *(state.report() for state in self.voters.values())]
        voters.sort(key=lambda report: report.replica_id)
        return voters, [self.observers[i].report() for i in sorted(self.observers)]
