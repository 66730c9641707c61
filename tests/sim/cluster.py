"""A deterministic simulation of a whole Raft quorum. Every node runs the real `RaftNode`
behind a simulated shell that carries out each Ready as the controller does (persist, send,
apply, advance, compact now and then) against a simulated disk, over a simulated network that
drops, delays, reorders, duplicates and partitions messages; nodes crash (losing what was not
fsynced) and restart from their disk. Everything comes from one seed.

Invariants, checked after every event (a delivered message or a tick, with the Readys it
caused):

- at most one leader per term;
- committed entries never change: the first node to apply index i fixes (term, data) at i;
  every later application of i anywhere must agree;
- each node applies consecutive indexes from its snapshot, so what it applied is a prefix of
  the committed log (snapshots carry a digest of the prefix they cover, checked on restore);
- a new leader's log holds every entry applied anywhere (leader completeness);
- observers never become candidates or leaders and never send (pre-)votes;
- a node's commit index never decreases while it runs. A restarted node starts from its
  durable commit, max(persisted hard_state.commit, persisted snapshot index), which may be
  lower than before the crash; from there it must re-apply the same entries.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from odradek.raft import (
    Entry,
    Message,
    MessageType,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    Ready,
    Role,
    Snapshot,
)
from tests.sim.disk import SimDisk

NodeFactory = Callable[[RaftConfig, random.Random, SimDisk], RaftNode]
_VOTING = frozenset({MessageType.PRE_VOTE, MessageType.VOTE, MessageType.PRE_VOTE_RESPONSE,
                     MessageType.VOTE_RESPONSE})


class Violation(AssertionError):
    """A safety invariant failed."""


def restore_node(config: RaftConfig, rng: random.Random, disk: SimDisk) -> RaftNode:
    return RaftNode(config, rng, disk.hard_state, disk.snapshot, list(disk.entries))


@dataclass(frozen=True)
class Faults:
    """How hostile the run is; probabilities are per message or per tick."""

    drop: float = 0.05
    duplicate: float = 0.02
    max_delay: int = 3
    partition: float = 0.01
    heal: float = 0.03
    crash: float = 0.006
    crash_in_ready: float = 0.002
    restart_after: tuple[int, int] = (5, 40)
    propose: float = 0.5
    transfer: float = 0.004
    leader_nemesis: float = 0.0
    """Isolate or crash a leader: short-lived leaders leave divergent log tails behind."""

    @classmethod
    def random(cls, rng: random.Random) -> Faults:
        return cls(
            drop=rng.choice([0.0, 0.02, 0.05, 0.15]),
            duplicate=rng.choice([0.0, 0.02, 0.05]),
            max_delay=rng.randint(1, 5),
            partition=rng.choice([0.0, 0.005, 0.02]),
            heal=rng.choice([0.02, 0.05]),
            crash=rng.choice([0.0, 0.003, 0.01]),
            crash_in_ready=rng.choice([0.0, 0.001]),
            propose=rng.choice([0.2, 0.5, 0.9]),
            transfer=rng.choice([0.0, 0.005]),
            leader_nemesis=rng.choice([0.0, 0.0, 0.02, 0.1]),
        )


@dataclass
class SimNode:
    node: RaftNode
    disk: SimDisk
    up: bool = True
    applied: int = 0
    """The state machine: the last applied index and a digest of the applied prefix."""
    digest: int = 0
    last_commit: int = 0
    was_leader: bool = False
    restart_at: int = 0
    compact_every: int = 10


@dataclass
class Stats:
    elections: int = 0
    crashes: int = 0
    snapshots_sent: int = 0
    snapshots_installed: int = 0
    compactions: int = 0
    transfers: int = 0
    max_commit: int = 0
    messages: int = 0


class Quorum:
    """Voters 1..voters, observers after them. `node_factory` builds a node from its config,
    RNG and disk (tests pass deliberately broken variants); `config` overrides the
    per-seed random RaftConfig fields."""

    def __init__(self, seed: int, voters: int, observers: int = 0,
                 faults: Faults | None = None, node_factory: NodeFactory = restore_node,
                 config: dict[str, Any] | None = None) -> None:
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults.random(rng)
        self.node_factory = node_factory
        self.voter_ids = frozenset(range(1, voters + 1))
        self.observer_ids = frozenset(range(voters + 1, voters + observers + 1))
        self.config = dataclasses.replace(RaftConfig(
            0, self.voter_ids, self.observer_ids,
            election_ticks=10,
            heartbeat_ticks=rng.choice([1, 2, 3]),
            pre_vote=rng.random() < 0.85,
            check_quorum=rng.random() < 0.85,
            max_entries_per_message=rng.choice([1, 3, 8, 64]),
            max_inflight_messages=rng.choice([1, 2, 8]),
        ), **(config or {}))
        self.now = 0
        self.network: dict[int, list[Message]] = {}
        """Messages in flight by the tick they arrive at."""
        self.cut: set[tuple[int, int]] = set()
        """Directed links that drop everything."""
        self.committed: dict[int, tuple[int, bytes]] = {}
        """index -> (term, data) of every entry any node applied."""
        self.digests: dict[int, int] = {0: 0}
        """index -> digest of the committed prefix up to it."""
        self.leaders: dict[int, int] = {}
        """term -> the node that led it."""
        self.proposed = 0
        self.stats = Stats()
        self.trace: deque[tuple[int, str, Message | None]] = deque(maxlen=40)
        self.nodes: dict[int, SimNode] = {}
        for node_id in sorted(self.voter_ids | self.observer_ids):
            disk = SimDisk()
            self.nodes[node_id] = SimNode(self._boot(node_id, disk), disk,
                                          compact_every=rng.choice([3, 8, 20]))

    def _boot(self, node_id: int, disk: SimDisk) -> RaftNode:
        config = dataclasses.replace(self.config, node_id=node_id)
        return self.node_factory(config, random.Random(self.rng.random()), disk)

    def fail(self, what: str) -> NoReturn:
        recent = "\n  ".join(
            f"t{tick} {event} {_describe(message) if message is not None else ''}"
            for tick, event, message in self.trace
        )
        raise Violation(f"seed {self.seed} at tick {self.now}: {what}\n  recent events:\n"
                        f"  {recent}")

    # --- running --------------------------------------------------------------------------

    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            self.step()

    def step(self) -> None:
        """One tick of simulated time: faults, clients, deliveries, node ticks."""
        self.now += 1
        self._faults()
        self._clients()
        due = self.network.pop(self.now, [])
        self.rng.shuffle(due)
        for message in due:
            sim = self.nodes[message.target]
            if sim.up:
                self.trace.append((self.now, "deliver", message))
                sim.node.step(message)
                self._process(message.target, sim)
        for node_id, sim in self.nodes.items():
            if sim.up:
                sim.node.tick()
                self._process(node_id, sim)
            elif self.now >= sim.restart_at:
                self.restart(node_id)

    def _faults(self) -> None:
        faults, rng = self.faults, self.rng
        if self.cut and rng.random() < faults.heal:
            self.cut.clear()
            self.trace.append((self.now, "heal", None))
        if rng.random() < faults.partition:
            self._partition()
        if rng.random() < faults.crash:
            up = [i for i, s in self.nodes.items() if s.up]
            if up:
                self.crash(rng.choice(up))
        if rng.random() < faults.leader_nemesis:
            leaders = [i for i, s in self.nodes.items() if s.up and s.node.role is Role.LEADER]
            if leaders and rng.random() < 0.5:
                self.crash(rng.choice(leaders))
            elif leaders:
                self._partition(rng.choice(leaders))

    def _partition(self, lone: int | None = None) -> None:
        rng, ids = self.rng, sorted(self.nodes)
        kind = 1 if lone is not None else rng.randrange(3)
        if kind == 0:
            side = {i for i in ids if rng.random() < 0.5}
            links = {(a, b) for a in ids for b in ids if (a in side) != (b in side)}
        elif kind == 1:
            lone = lone if lone is not None else rng.choice(ids)
            links = {(a, b) for a in ids for b in ids if a != b and lone in (a, b)}
        else:
            a, b = rng.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
            links = {(a, b)}
        self.cut |= links
        self.trace.append((self.now, f"partition {sorted(links)}", None))

    def _clients(self) -> None:
        faults, rng = self.faults, self.rng
        leaders = [s for s in self.nodes.values() if s.up and s.node.role is Role.LEADER]
        if not leaders:
            return
        sim = rng.choice(leaders)
        if rng.random() < faults.transfer and len(self.voter_ids) > 1:
            target = rng.choice(sorted(self.voter_ids - {sim.node.node_id}))
            self.trace.append((self.now, f"transfer {sim.node.node_id} -> {target}", None))
            self.stats.transfers += 1
            sim.node.transfer_leadership(target)
        for _ in range(4):
            if rng.random() >= faults.propose or not self.propose(sim):
                break
        self._process(sim.node.node_id, sim)

    def propose(self, sim: SimNode, data: bytes | None = None) -> bool:
        data = data if data is not None else f"c{self.proposed}".encode()
        try:
            index = sim.node.propose(data)
        except NotLeaderError:
            return False
        self.proposed += 1
        self.trace.append((self.now, f"n{sim.node.node_id} proposed {data!r} at {index}",
                           None))
        return True

    def _send(self, message: Message) -> None:
        faults, rng = self.faults, self.rng
        self.stats.messages += 1
        if message.source in self.observer_ids and message.type in _VOTING:
            self.fail(f"observer {message.source} sent {message.type.value}")
        if (message.source, message.target) in self.cut or rng.random() < faults.drop:
            return
        copies = 2 if rng.random() < faults.duplicate else 1
        for _ in range(copies):
            at = self.now + 1 + rng.randrange(faults.max_delay)
            self.network.setdefault(at, []).append(message)

    # --- the shell ------------------------------------------------------------------------

    def _process(self, node_id: int, sim: SimNode) -> None:
        node = sim.node
        while sim.up and node.has_ready():
            ready = node.ready()
            self._carry_out(node_id, sim, ready)
        if sim.up:
            self.check(node_id, sim)

    def _carry_out(self, node_id: int, sim: SimNode, ready: Ready) -> None:
        node, disk = sim.node, sim.disk
        if ready.snapshot is not None:
            disk.save_snapshot(ready.snapshot)
        disk.write(ready.hard_state, ready.entries, ready.must_sync)
        if self.rng.random() < self.faults.crash_in_ready:
            self.crash(node_id)
            return
        for message in ready.messages:
            if message.snapshot is not None:
                self.stats.snapshots_sent += 1
            self._send(message)
        if ready.snapshot is not None:
            self._restore_state(sim, ready.snapshot)
            self.stats.snapshots_installed += 1
        for entry in ready.committed_entries:
            self._apply(node_id, sim, entry)
        node.advance(ready)
        if sim.applied - node.first_index + 1 >= sim.compact_every:
            self._compact(sim)

    def _apply(self, node_id: int, sim: SimNode, entry: Entry) -> None:
        if entry.index != sim.applied + 1:
            self.fail(f"node {node_id} applied {entry.index} after {sim.applied}")
        known = self.committed.setdefault(entry.index, (entry.term, entry.data))
        if known != (entry.term, entry.data):
            self.fail(f"node {node_id} applied index {entry.index} as "
                      f"{(entry.term, entry.data)}; it was committed as {known}")
        sim.digest = zlib.crc32(entry.data + entry.term.to_bytes(8, "big"), sim.digest)
        sim.applied = entry.index
        recorded = self.digests.setdefault(entry.index, sim.digest)
        if recorded != sim.digest:
            self.fail(f"node {node_id}'s applied prefix up to {entry.index} differs from "
                      f"the committed log")
        self.stats.max_commit = max(self.stats.max_commit, entry.index)

    def _compact(self, sim: SimNode) -> None:
        index = sim.applied
        term = self.committed[index][0]
        snapshot = Snapshot(index, term, f"{index}:{sim.digest}".encode(), self.voter_ids)
        sim.node.compact(snapshot)
        sim.disk.save_snapshot(snapshot)
        self.stats.compactions += 1

    def _restore_state(self, sim: SimNode, snapshot: Snapshot) -> None:
        index, digest = (int(part) for part in snapshot.data.split(b":"))
        if index != snapshot.index or self.digests.get(index) != digest:
            self.fail(f"snapshot at {snapshot.index} does not hold the committed prefix")
        if self.committed[index][0] != snapshot.term:
            self.fail(f"snapshot at {index} has term {snapshot.term}, committed "
                      f"{self.committed[index][0]}")
        sim.applied, sim.digest = index, digest

    # --- crashes --------------------------------------------------------------------------

    def crash(self, node_id: int) -> None:
        sim = self.nodes[node_id]
        sim.up = False
        sim.disk.crash(self.rng)
        low, high = self.faults.restart_after
        sim.restart_at = self.now + self.rng.randint(low, high)
        self.stats.crashes += 1
        self.trace.append((self.now, f"crash n{node_id}", None))

    def restart(self, node_id: int) -> None:
        sim = self.nodes[node_id]
        disk = sim.disk
        try:
            sim.node = self._boot(node_id, disk)
        except ValueError as error:
            self.fail(f"node {node_id} cannot restart from what it persisted: {error}")
        sim.up = True
        sim.was_leader = False
        sim.applied, sim.digest = 0, 0
        if disk.snapshot is not None:
            self._restore_state(sim, disk.snapshot)
        durable_commit = max(disk.hard_state.commit, disk.offset)
        if sim.node.commit_index != durable_commit or sim.node.applied != disk.offset:
            self.fail(f"node {node_id} restarted with commit {sim.node.commit_index}, "
                      f"applied {sim.node.applied}; its disk has commit {durable_commit}, "
                      f"snapshot {disk.offset}")
        sim.last_commit = sim.node.commit_index
        self.trace.append((self.now, f"restart n{node_id} (commit {sim.last_commit})", None))
        self._process(node_id, sim)

    def heal_all(self) -> None:
        """End every fault: links back, nodes restarted, no loss or duplication."""
        self.cut.clear()
        self.faults = Faults(drop=0.0, duplicate=0.0, max_delay=self.faults.max_delay,
                             partition=0.0, crash=0.0, crash_in_ready=0.0, propose=0.0,
                             transfer=0.0)
        for node_id, sim in self.nodes.items():
            if not sim.up:
                self.restart(node_id)

    # --- invariants -----------------------------------------------------------------------

    def check(self, node_id: int, sim: SimNode) -> None:
        node = sim.node
        if node.role is Role.LEADER:
            holder = self.leaders.setdefault(node.term, node_id)
            if holder != node_id:
                self.fail(f"nodes {holder} and {node_id} both lead term {node.term}")
            if not sim.was_leader:
                sim.was_leader = True
                self.stats.elections += 1
                self.trace.append((self.now, f"n{node_id} leads term {node.term}", None))
                self._check_leader_completeness(node_id, sim)
        else:
            sim.was_leader = False
        if node.role in (Role.LEADER, Role.CANDIDATE, Role.PRE_CANDIDATE) and (
            node_id not in self.voter_ids
        ):
            self.fail(f"observer {node_id} became {node.role.value}")
        if node.commit_index < sim.last_commit:
            self.fail(f"node {node_id}'s commit index went back from {sim.last_commit} to "
                      f"{node.commit_index}")
        sim.last_commit = node.commit_index
        if not sim.applied == node.applied <= node.commit_index <= node.last_index:
            self.fail(f"node {node_id}: state machine at {sim.applied}, applied "
                      f"{node.applied}, commit {node.commit_index}, last {node.last_index}")

    def _check_leader_completeness(self, node_id: int, sim: SimNode) -> None:
        disk = sim.disk
        for index in range(disk.offset + 1, self.stats.max_commit + 1):
            entry = disk.entry(index)
            if entry is None or (entry.term, entry.data) != self.committed[index]:
                self.fail(f"new leader {node_id} (term {sim.node.term}) lacks committed "
                          f"entry {index} {self.committed[index]}; it has {entry}")
        if disk.offset > self.stats.max_commit:
            self.fail(f"new leader {node_id}'s snapshot at {disk.offset} is past the "
                      f"committed log")

    # --- liveness -------------------------------------------------------------------------

    def leader(self) -> SimNode | None:
        leaders = [s for s in self.nodes.values() if s.up and s.node.role is Role.LEADER]
        if len(leaders) != 1:
            return None
        return leaders[0]

    def liveness_bound(self) -> int:
        """Ticks allowed, once healed, to elect a leader and bring every node to a new
        entry: some election timeouts, plus a round trip per message of the backlog."""
        backlog = (max(s.node.last_index for s in self.nodes.values())
                   - min(s.applied for s in self.nodes.values()))
        per_message = self.config.max_entries_per_message
        round_trip = 2 * self.faults.max_delay
        return 30 * self.config.election_ticks + round_trip * (backlog // per_message + 1)

    def commit_new_entry(self, within: int) -> int:
        """After heal_all: within `within` ticks a leader must take a new entry and every
        node apply it. Returns the ticks it took."""
        start = self.now
        proposals: dict[int, bytes] = {}  # index -> marker; one per leader term
        terms: set[int] = set()
        while self.now - start < within:
            sim = self.leader()
            if sim is not None and sim.node.term not in terms:
                marker = f"live{len(terms)}".encode()
                if self.propose(sim, marker):
                    terms.add(sim.node.term)
                    proposals[sim.node.last_index] = marker
                    self._process(sim.node.node_id, sim)
            for index, marker in proposals.items():
                if self.committed.get(index, (0, b""))[1] == marker and all(
                    s.applied >= index for s in self.nodes.values()
                ):
                    return self.now - start
            self.step()
        last = max(proposals, default=None)
        roles = {i: (s.node.role.value, s.node.term, s.applied) for i, s in self.nodes.items()}
        self.fail(f"no progress {within} ticks after healing: proposed at {last}; "
                  f"nodes (role, term, applied): {roles}")


def _describe(message: Message) -> str:
    text = (f"{message.type.value} {message.source}->{message.target} t{message.term} "
            f"i{message.index}")
    if message.entries:
        text += f" e{message.entries[0].index}..{message.entries[-1].index}"
    if message.reject:
        text += f" reject(hint {message.reject_hint})"
    if message.commit:
        text += f" c{message.commit}"
    return text
