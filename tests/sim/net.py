"""A synchronous in-memory network of RaftNodes for scenario tests, in the spirit of
etcd-io/raft's test `network`: each node's Readys are carried out at once (persist to a
SimDisk, queue messages, apply, advance), and `deliver()` passes queued messages on until
the quorum is quiet. Links can be cut, nodes stopped, and messages filtered or held back."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from odradek.raft import Entry, Message, MessageType, RaftConfig, RaftNode, Ready, Role
from tests.sim.disk import SimDisk

Filter = Callable[[Message], bool]


class Net:
    def __init__(self, voters: Iterable[int], observers: Iterable[int] = (), seed: int = 0,
                 **config: Any) -> None:
        self.voters = frozenset(voters)
        self.observers = frozenset(observers)
        self.config = config
        self.rng = random.Random(seed)
        self.disks = {i: SimDisk() for i in self.voters | self.observers}
        self.nodes: dict[int, RaftNode] = {}
        self.applied: dict[int, list[Entry]] = {i: [] for i in self.disks}
        self.readies: dict[int, list[Ready]] = {i: [] for i in self.disks}
        self.queue: list[Message] = []
        self.sent: list[Message] = []
        """Every message any node sent, in order, delivered or not."""
        self.cut: set[frozenset[int]] = set()
        self.stopped: set[int] = set()
        self.drop: Filter = lambda message: False
        for node_id in sorted(self.disks):
            self.nodes[node_id] = self.make_node(node_id)

    def make_node(self, node_id: int, **overrides: Any) -> RaftNode:
        config = RaftConfig(node_id, self.voters, self.observers, **{**self.config, **overrides})
        disk = self.disks[node_id]
        return RaftNode(config, random.Random(self.rng.random()), disk.hard_state,
                        disk.snapshot, list(disk.entries))

    def __getitem__(self, node_id: int) -> RaftNode:
        return self.nodes[node_id]

    # --- driving --------------------------------------------------------------------------

    def process(self, node_id: int) -> None:
        """Carry out every Ready of the node, as the controller's driver does."""
        node, disk = self.nodes[node_id], self.disks[node_id]
        while node.has_ready():
            ready = node.ready()
            self.readies[node_id].append(ready)
            if ready.snapshot is not None:
                disk.save_snapshot(ready.snapshot)
                self.applied[node_id] = []
            disk.write(ready.hard_state, ready.entries, ready.must_sync)
            self.queue.extend(ready.messages)
            self.sent.extend(ready.messages)
            self.applied[node_id].extend(ready.committed_entries)
            node.advance(ready)

    def tick(self, *node_ids: int, times: int = 1) -> None:
        """Tick the given nodes (all running ones by default), carrying out their Readys."""
        targets = node_ids or tuple(i for i in sorted(self.nodes) if i not in self.stopped)
        for _ in range(times):
            for node_id in targets:
                self.nodes[node_id].tick()
                self.process(node_id)

    def deliver(self, limit: int = 10_000) -> None:
        """Deliver queued messages (and those they cause) until none are left."""
        for _ in range(limit):
            if not self.queue:
                return
            message = self.queue.pop(0)
            if self.blocked(message):
                continue
            self.nodes[message.target].step(message)
            self.process(message.target)
        raise AssertionError("the network did not quiesce")

    def blocked(self, message: Message) -> bool:
        return (
            message.target in self.stopped
            or message.source in self.stopped
            or frozenset({message.source, message.target}) in self.cut
            or self.drop(message)
        )

    def campaign(self, node_id: int) -> None:
        """Let only `node_id`'s election timer run out, then settle the election."""
        node = self.nodes[node_id]
        for _ in range(2 * node.config.election_ticks):
            self.tick(node_id)
            if node.role is not Role.FOLLOWER:
                break
        self.deliver()

    def heartbeat(self, rounds: int = 1) -> None:
        """Tick the leader(s) through heartbeat rounds and deliver everything."""
        for _ in range(rounds):
            for node_id, node in sorted(self.nodes.items()):
                if node.role is Role.LEADER and node_id not in self.stopped:
                    self.tick(node_id, times=node.config.heartbeat_ticks)
            self.deliver()

    def propose(self, node_id: int, *payloads: bytes) -> list[int]:
        indexes = [self.nodes[node_id].propose(data) for data in payloads]
        self.process(node_id)
        self.deliver()
        return indexes

    # --- faults ---------------------------------------------------------------------------

    def isolate(self, node_id: int) -> None:
        for other in self.nodes:
            if other != node_id:
                self.cut.add(frozenset({node_id, other}))

    def heal(self) -> None:
        self.cut.clear()
        self.stopped.clear()
        self.drop = lambda message: False

    def restart(self, node_id: int, **overrides: Any) -> RaftNode:
        """Rebuild the node from its disk (everything it was told to persist)."""
        self.queue = [m for m in self.queue if node_id not in (m.source, m.target)]
        self.nodes[node_id] = self.make_node(node_id, **overrides)
        self.applied[node_id] = []
        self.stopped.discard(node_id)
        return self.nodes[node_id]

    # --- looking --------------------------------------------------------------------------

    def leaders(self) -> list[int]:
        return [i for i, node in sorted(self.nodes.items())
                if node.role is Role.LEADER and i not in self.stopped]

    def terms(self, entries: Iterable[Entry]) -> list[int]:
        return [entry.term for entry in entries]

    def log_terms(self, node_id: int) -> list[int]:
        """The terms of the node's persisted entries after its snapshot."""
        return [entry.term for entry in self.disks[node_id].entries]

    def sent_of(self, kind: MessageType, source: int | None = None) -> list[Message]:
        return [m for m in self.sent
                if m.type is kind and (source is None or m.source == source)]
