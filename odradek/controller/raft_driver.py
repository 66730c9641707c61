"""Runs the Raft core on the event loop: ticks it, feeds it messages and proposals, and carries
out each `Ready` in order (persist with fsync in a worker thread, send, apply, advance).

Every call into the core happens in one task, so the core is never stepped while a Ready is
being carried out. Proposals resolve when their entry is applied, or fail with
NotLeaderError when leadership is lost first.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from odradek.controller.quorum_replication import QuorumReplication, ReplicaReport
from odradek.controller.raft_store import RaftLogStore
from odradek.raft import RaftNode
from odradek.raft.types import Entry, Message, MessageType, NotLeaderError, Ready, Role, Snapshot
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.controller.raft")



class StateMachine(Protocol):
    def apply(self, index: int, data: bytes) -> None: ...

    def restore(self, snapshot: Snapshot) -> None: ...

    def snapshot_data(self) -> bytes: ...

    def compacted(self, index: int) -> None:
        """Entries up to `index` are now only in the snapshot."""


class Outbox(Protocol):
    def send(self, messages: list[Message]) -> None: ...


class RaftDriver:
    def __init__(
        self,
        node: RaftNode,
        store: RaftLogStore,
        machine: StateMachine,
        outbox: Outbox,
        tick_ms: int,
        snapshot_bytes: int,
        on_active: Callable[[], None] = lambda: None,
    ) -> None:
        self.node = node
        self.store = store
        self.machine = machine
        self.outbox = outbox
        self.tick_ms = tick_ms
        self.snapshot_bytes = snapshot_bytes
        self.on_active = on_active
        self.applied = node.applied
        self.applied_term = 0
        self.leader = node.leader
        self.role = node.role
        self.commit_latency_ms: list[float] = []
        """Proposal-to-apply latencies since the metrics last read them."""
        self.appended_entries = 0
        """Entries this node appended to its log as the leader (one offset each)."""
        self.fetched_entries = 0
        """Entries this node appended to its log from a leader."""
        self._inbox: collections.deque[Callable[[], None]] = collections.deque()
        self._wake = asyncio.Event()
        self._pending: dict[int, tuple[int, float, asyncio.Future[int]]] = {}
        self._bytes_since_snapshot = 0
        self._term_start = -1
        self._active_term = -1
        self._replication: QuorumReplication | None = None

    @property
    def active(self) -> bool:
        """Leader, with every entry of earlier terms applied: its state is the committed one."""
        return self.role is Role.LEADER and self._active_term == self.node.term

    def step(self, message: Message) -> None:
        self._submit(lambda: self._receive(message))

    def _receive(self, message: Message) -> None:
        self.node.step(message)
        if message.type is not MessageType.APPEND_RESPONSE or message.reject:
            return
        replication = self._leadership()
        match = self.node.match_indexes().get(message.source, 0)
        if replication is not None and match > 0:
            replication.voter_fetched(message.source, match, self.node.last_index, now_ms())

    def _leadership(self) -> QuorumReplication | None:
        """This leadership's replication report; None unless this node leads."""
        node = self.node
        if node.role is not Role.LEADER:
            self._replication = None
        elif self._replication is None or self._replication.term != node.term:
            self._replication = QuorumReplication(node.node_id, node.term, node.config.voters)
        return self._replication

    def observer_fetched(self, observer: int, metadata_offset: int) -> None:
        """A broker (a metadata log observer) has applied the log up to `metadata_offset`."""
        replication = self._leadership()
        if replication is not None:
            replication.observer_fetched(observer, metadata_offset, self.node.last_index,
                                         now_ms())

    def describe_quorum(self) -> tuple[list[ReplicaReport], list[ReplicaReport]] | None:
        """(voters, observers) as the leader sees them; None unless this node leads."""
        replication = self._leadership()
        if replication is None:
            return None
        return replication.describe(self.node.last_index, now_ms())

    def propose(self, data: bytes) -> asyncio.Future[int]:
        """The index of the entry once it is applied."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()

        def do() -> None:
            if future.done():
                return
            try:
                index = self.node.propose(data)
            except NotLeaderError as error:
                future.set_exception(error)
                return
            self._pending[index] = (self.node.term, loop.time(), future)

        self._submit(do)
        return future

    def transfer_leadership(self, target: int) -> None:
        """Hand leadership to `target` (a no-op unless this node leads)."""

        def do() -> None:
            with contextlib.suppress(NotLeaderError, ValueError):
                self.node.transfer_leadership(target)

        self._submit(do)

    def _submit(self, action: Callable[[], None]) -> None:
        self._inbox.append(action)
        self._wake.set()

    async def run(self) -> None:
        if self.node.config.voters == {self.node.node_id}:
            self._submit(self.node.tick)  # a lone voter elects itself at once, as KRaft's
        ticker = asyncio.create_task(self._tick())
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                await self._drain()
        finally:
            ticker.cancel()
            for _, _, future in self._pending.values():
                if not future.done():
                    future.set_exception(NotLeaderError(self.leader))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_ms / 1000)
            self._submit(self.node.tick)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._inbox or self.node.has_ready():
            while self._inbox:
                self._inbox.popleft()()
            if not self.node.has_ready():
                continue
            ready = self.node.ready()
            if ready.snapshot is not None or ready.entries or ready.hard_state is not None:
                await loop.run_in_executor(None, self._persist, ready)
            if self.node.role is Role.LEADER:
                self.appended_entries += len(ready.entries)
            else:
                self.fetched_entries += len(ready.entries)
            self.outbox.send(ready.messages)
            self._apply(ready)
            self.node.advance(ready)
            await self._maybe_snapshot()

    def _persist(self, ready: Ready) -> None:
        if ready.snapshot is not None:
            self.store.save_snapshot(ready.snapshot)
        if ready.entries or ready.hard_state is not None:
            self.store.save(ready.hard_state, ready.entries, sync=ready.must_sync)

    def _apply(self, ready: Ready) -> None:
        if ready.soft_state is not None:
            self._observe(ready.soft_state.leader, ready.soft_state.role)
        if ready.snapshot is not None and ready.snapshot.index > self.applied:
            self.machine.restore(ready.snapshot)
            self.applied, self.applied_term = ready.snapshot.index, ready.snapshot.term
            self._bytes_since_snapshot = 0
        for entry in ready.committed_entries:
            self._apply_entry(entry)
        if (self.role is Role.LEADER and self._active_term != self.node.term
                and self.applied >= self._term_start):
            self._active_term = self.node.term
            log.info("active controller for term %d", self.node.term)
            self.on_active()

    def _apply_entry(self, entry: Entry) -> None:
        if entry.index <= self.applied:
            return
        self.machine.apply(entry.index, entry.data)
        self.applied, self.applied_term = entry.index, entry.term
        self._bytes_since_snapshot += len(entry.data)
        pending = self._pending.pop(entry.index, None)
        if pending is None:
            return
        term, started, future = pending
        if future.done():
            return
        if term == entry.term:
            self.commit_latency_ms.append((asyncio.get_running_loop().time() - started) * 1000)
            future.set_result(entry.index)
        else:
            future.set_exception(NotLeaderError(self.leader))

    def _observe(self, leader: int, role: Role) -> None:
        if role is Role.LEADER and self.role is not Role.LEADER:
            self._term_start = self.node.last_index
        if self.role is Role.LEADER and role is not Role.LEADER:
            for _, _, future in self._pending.values():
                if not future.done():
                    future.set_exception(NotLeaderError(leader))
            self._pending.clear()
        if (leader, role) != (self.leader, self.role):
            log.info("raft: node %d is %s in term %d; leader %d",
                     self.node.node_id, role.value, self.node.term, leader)
        self.leader, self.role = leader, role

    async def _maybe_snapshot(self) -> None:
        if self._bytes_since_snapshot < self.snapshot_bytes or self.applied == 0:
            return
        snapshot = Snapshot(self.applied, self.applied_term, self.machine.snapshot_data(),
                            self.node.config.voters)
        self._bytes_since_snapshot = 0
        self.node.compact(snapshot)
        await asyncio.get_running_loop().run_in_executor(
            None, self.store.save_snapshot, snapshot
        )
        self.machine.compacted(snapshot.index)
        log.info("metadata snapshot at offset %d (term %d)", snapshot.index, snapshot.term)
