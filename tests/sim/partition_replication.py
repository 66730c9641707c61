"""One replicated partition simulated from a seed: the real replication cores
(`odradek.replication.leader.LeaderState`, `OffsetPurgatory`, `follower.truncation`,
`odradek.log.leader_epochs.LeaderEpochCache`) and the real controller logic
(`QuorumController.alter_partition`, fencing and election), wired the way the broker wires
them (`replica_manager.py`, `replica_fetcher.py`, the Fetch and OffsetForLeaderEpoch
handlers), over a network that delays, drops and reorders messages and cuts links, with
brokers that crash (keeping their log: kill -9 keeps the page cache) and restart, and
metadata that reaches each broker late.

Invariants, checked after every event (`check`):
1. an acknowledged (acks=all) record is never lost or changed: it stays at its offset on
   every broker that leads the partition afterwards, and on every ISR member;
2. a leader's high watermark never decreases within its leader epoch;
3. records a consumer could read (below a leader's high watermark) never change or vanish;
4. two replicas agree on every offset below both their high watermarks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.log.leader_epochs import UNDEFINED_EPOCH, LeaderEpochCache
from odradek.metadata.errors import MetadataError
from odradek.metadata.records import NO_LEADER, PartitionRecord
from odradek.replication.follower import truncation
from odradek.replication.leader import IsrChange, LeaderState, OffsetPurgatory
from tests.unit.controller_harness import Cluster as ControllerHarness

CONTROLLER = 0
LAG_TIME_MS = 400
SESSION_TIMEOUT_MS = 600
TICK_MS = 10
MIN_ISR = 2


class InvariantViolation(AssertionError):
    pass


@dataclass
class Message:
    src: int
    dst: int
    kind: str
    body: dict[str, Any]


@dataclass
class Broker:
    node_id: int
    log: list[tuple[int, int]] = field(default_factory=list)
    """(leader epoch, value) per offset."""
    epochs: LeaderEpochCache = field(default_factory=lambda: LeaderEpochCache(None))
    high_watermark: int = 0
    alive: bool = True
    view: PartitionRecord | None = None
    """The partition as this broker's (possibly stale) metadata shows it."""
    leading: LeaderState | None = None
    purgatory: OffsetPurgatory[tuple[int, int]] = field(default_factory=OffsetPurgatory)
    following: tuple[int, int] | None = None
    truncating: bool = False
    in_flight: bool = False
    pending_isr: IsrChange | None = None
    last_heartbeat_ms: int = 0

    def truncate(self, offset: int) -> None:
        if offset < len(self.log):
            del self.log[offset:]
            self.epochs.truncate_from_end(offset)
            self.high_watermark = min(self.high_watermark, offset)


@dataclass
class Stats:
    acked: int = 0
    leader_changes: int = 0
    truncations: int = 0
    crashes: int = 0
    isr_changes: int = 0


class PartitionSim:
    def __init__(self, seed: int, replicas: int = 3) -> None:
        self.rng = random.Random(seed)
        self.ids = list(range(1, replicas + 1))
        self.controller = ControllerHarness(session_timeout_ms=SESSION_TIMEOUT_MS)
        self.controller.start(*self.ids)
        self.topic_id = self.controller.create("t", 1, replicas, {0: self.ids})
        self.brokers = {i: Broker(i) for i in self.ids}
        self.now = 0
        self.net: list[Message] = []
        self.cut: set[frozenset[int]] = set()
        self.drop_rate = 0.0
        self.next_value = 0
        self.acked: dict[int, int] = {}
        """offset -> value of every acknowledged record."""
        self.visible: dict[int, int] = {}
        """offset -> value of every record a consumer could have read."""
        self.hw_seen: dict[tuple[int, int], int] = {}
        self.stats = Stats()
        for broker in self.brokers.values():
            self.deliver_metadata(broker)

    # --- metadata and controller -----------------------------------------------------------

    def partition(self) -> PartitionRecord:
        return self.controller.partition(self.topic_id)

    def deliver_metadata(self, broker: Broker) -> None:
        """The broker applies the latest metadata (replica_manager.on_metadata)."""
        record = self.partition()
        broker.view = record
        if record.leader == broker.node_id:
            state = broker.leading
            if state is not None and state.leader_epoch == record.leader_epoch:
                if state.partition_epoch != record.partition_epoch:
                    state.update(record.replicas, record.isr, record.partition_epoch)
                    self.advance(broker)
                return
            self.resign(broker)
            broker.following = None
            broker.epochs.assign(record.leader_epoch, len(broker.log))
            broker.leading = LeaderState.start(
                broker.node_id, record.replicas, record.isr, record.leader_epoch,
                record.partition_epoch, len(broker.log), broker.high_watermark, self.now)
            self.stats.leader_changes += 1
            self.check_new_leader(broker)
            self.advance(broker)
            return
        self.resign(broker)
        wanted = (record.leader, record.leader_epoch)
        if record.leader == NO_LEADER:
            broker.following = None
        elif broker.following != wanted:
            broker.following = wanted
            broker.truncating = True
            broker.in_flight = False

    def resign(self, broker: Broker) -> None:
        if broker.leading is not None:
            broker.leading = None
            broker.purgatory.drain()

    def controller_tick(self) -> None:
        """Heartbeats of live, connected brokers; sessions of the others expire."""
        harness = self.controller
        for broker in self.brokers.values():
            if broker.alive and frozenset((broker.node_id, CONTROLLER)) not in self.cut:
                broker.last_heartbeat_ms = self.now
                registration = harness.metadata.brokers[broker.node_id]
                if registration.fenced:
                    harness.heartbeat(broker.node_id, now=self.now)
            elif self.now - broker.last_heartbeat_ms > SESSION_TIMEOUT_MS:
                registration = harness.metadata.brokers[broker.node_id]
                if not registration.fenced:
                    harness.heartbeat(broker.node_id, now=self.now, want_fence=True)

    # --- leader side ---------------------------------------------------------------------

    def advance(self, broker: Broker) -> None:
        state = broker.leading
        if state is None or not state.advance_high_watermark(len(broker.log)):
            return
        broker.high_watermark = state.high_watermark
        key = (broker.node_id, state.leader_epoch)
        if state.high_watermark < self.hw_seen.get(key, 0):
            raise InvariantViolation(f"broker {broker.node_id} moved its high watermark back")
        self.hw_seen[key] = state.high_watermark
        for offset in range(state.high_watermark):
            self.visible.setdefault(offset, broker.log[offset][1])
        enough = len(state.isr) >= MIN_ISR
        for offset, value in broker.purgatory.reached(state.high_watermark):
            if enough:
                self.acked[offset] = value
                self.stats.acked += 1

    def produce(self, broker: Broker) -> None:
        state = broker.leading
        if state is None or len(state.isr) < MIN_ISR:
            return
        value = self.next_value
        self.next_value += 1
        broker.log.append((state.leader_epoch, value))
        broker.epochs.assign(state.leader_epoch, len(broker.log) - 1)
        broker.purgatory.add(len(broker.log), (len(broker.log) - 1, value))
        self.advance(broker)

    def handle_fetch(self, leader: Broker, message: Message) -> None:
        state, body = leader.leading, message.body
        if state is None or body["epoch"] != state.leader_epoch:
            self.send(leader.node_id, message.src, "fetched", error=ErrorCode.fenced_leader_epoch,
                      **body)
            return
        offset = body["offset"]
        if offset > len(leader.log):
            self.send(leader.node_id, message.src, "fetched",
                      error=ErrorCode.offset_out_of_range, **body)
            return
        state.record_fetch(message.src, offset, len(leader.log), self.now)
        self.advance(leader)
        registration = self.controller.metadata.brokers[message.src]
        change = state.expansion(message.src, not registration.fenced)
        if change is not None:
            self.send(leader.node_id, CONTROLLER, "alter", change=change)
        records = leader.log[offset:offset + self.rng.randint(0, 5)]
        self.send(leader.node_id, message.src, "fetched", error=ErrorCode.none,
                  records=records, hw=state.high_watermark, **body)

    def handle_epoch_query(self, leader: Broker, message: Message) -> None:
        state, body = leader.leading, message.body
        if state is None or body["epoch"] != state.leader_epoch:
            self.send(leader.node_id, message.src, "epoch_answer",
                      error=ErrorCode.fenced_leader_epoch, **body)
            return
        epoch, end = leader.epochs.end_offset_for(body["latest"], len(leader.log))
        self.send(leader.node_id, message.src, "epoch_answer", error=ErrorCode.none,
                  answer_epoch=epoch, end=end, **body)

    def shrink(self, broker: Broker) -> None:
        state = broker.leading
        if state is not None:
            change = state.shrink(len(broker.log), self.now, LAG_TIME_MS)
            if change is not None:
                self.send(broker.node_id, CONTROLLER, "alter", change=change)

    def handle_alter(self, message: Message) -> None:
        change: IsrChange = message.body["change"]
        harness = self.controller
        error = ErrorCode.none
        try:
            records = harness.controller.alter_partition(
                message.src, harness.epochs[message.src], self.topic_id, 0,
                change.leader_epoch, change.partition_epoch, change.isr)
        except MetadataError as refusal:
            records, error = [], refusal.error_code
        harness.commit(records)
        self.stats.isr_changes += bool(records)
        self.send(CONTROLLER, message.src, "altered", change=change, error=error)

    # --- follower side -------------------------------------------------------------------

    def follow_step(self, broker: Broker) -> None:
        if broker.following is None or broker.in_flight:
            return
        leader_id, epoch = broker.following
        if broker.truncating:
            latest = broker.epochs.latest_epoch
            if latest == UNDEFINED_EPOCH:
                self.truncate(broker, broker.high_watermark)
                broker.truncating = False
                return
            self.send(broker.node_id, leader_id, "epoch_query", epoch=epoch, latest=latest)
        else:
            self.send(broker.node_id, leader_id, "fetch", epoch=epoch, offset=len(broker.log))
        broker.in_flight = True

    def truncate(self, broker: Broker, offset: int) -> None:
        if offset < len(broker.log):
            self.stats.truncations += 1
            broker.truncate(offset)

    def handle_fetched(self, broker: Broker, message: Message) -> None:
        body = message.body
        if broker.following != (message.src, body["epoch"]):
            return
        broker.in_flight = False
        if body["error"] == ErrorCode.offset_out_of_range:
            broker.truncating = True
        if body["error"] != ErrorCode.none or len(broker.log) != body["offset"]:
            return
        for epoch, value in body["records"]:
            broker.epochs.assign(epoch, len(broker.log))
            broker.log.append((epoch, value))
        broker.high_watermark = min(body["hw"], len(broker.log))

    def handle_epoch_answer(self, broker: Broker, message: Message) -> None:
        body = message.body
        if broker.following != (message.src, body["epoch"]):
            return
        broker.in_flight = False
        if body["error"] != ErrorCode.none:
            return
        cut = truncation(broker.epochs, len(broker.log), broker.high_watermark,
                         body["answer_epoch"], body["end"])
        self.truncate(broker, cut.offset)
        broker.truncating = not cut.completed

    # --- network, faults and the event loop ----------------------------------------------

    def send(self, src: int, dst: int, kind: str, **body: Any) -> None:
        self.net.append(Message(src, dst, kind, body))

    def deliver_one(self) -> None:
        message = self.net.pop(self.rng.randrange(len(self.net)))
        if frozenset((message.src, message.dst)) in self.cut or self.rng.random() < self.drop_rate:
            self.lost(message)
            return
        if message.dst == CONTROLLER:
            self.handle_alter(message)
            return
        broker = self.brokers[message.dst]
        if not broker.alive:
            self.lost(message)
            return
        if message.kind == "altered":
            state = broker.leading
            if state is not None and state.answered(message.body["change"],
                                                    message.body["error"],
                                                    self.partition().partition_epoch):
                self.send(broker.node_id, CONTROLLER, "alter", change=message.body["change"])
            return
        {"fetch": self.handle_fetch, "epoch_query": self.handle_epoch_query,
         "fetched": self.handle_fetched, "epoch_answer": self.handle_epoch_answer}[
            message.kind](broker, message)

    def lost(self, message: Message) -> None:
        """A lost request or answer: the sender's timeout makes it try again."""
        sender = self.brokers.get(message.src if message.kind in ("fetch", "epoch_query")
                                  else message.dst)
        if message.kind in ("fetch", "epoch_query", "fetched", "epoch_answer") and sender:
            sender.in_flight = False
        if message.kind in ("alter", "altered"):
            leader = self.brokers[message.src if message.kind == "alter" else message.dst]
            change = message.body["change"]
            if leader.alive and leader.leading is not None and leader.leading.answered(
                    change, ErrorCode.request_timed_out, -1):
                self.send(leader.node_id, CONTROLLER, "alter", change=change)

    def crash(self, broker: Broker) -> None:
        broker.alive = False
        self.resign(broker)
        broker.following, broker.in_flight, broker.view = None, False, None
        self.stats.crashes += 1

    def restart(self, broker: Broker) -> None:
        broker.alive = True
        self.deliver_metadata(broker)

    def step(self) -> None:
        self.now += TICK_MS
        roll = self.rng.random()
        live = [b for b in self.brokers.values() if b.alive]
        if roll < 0.004:
            victim = self.rng.choice(list(self.brokers.values()))
            self.crash(victim) if victim.alive else self.restart(victim)
        elif roll < 0.012:
            pair = frozenset(self.rng.sample([CONTROLLER, *self.ids], 2))
            self.cut ^= {pair}
        elif roll < 0.15 and live:
            self.deliver_metadata(self.rng.choice(live))
        elif roll < 0.30:
            for broker in live:
                self.produce(broker)
        elif roll < 0.35:
            self.controller_tick()
        elif roll < 0.40:
            for broker in live:
                self.shrink(broker)
        elif roll < 0.65:
            for broker in live:
                self.follow_step(broker)
        elif self.net:
            self.deliver_one()
        self.check()

    def heal(self) -> None:
        self.cut.clear()
        self.drop_rate = 0.0
        for broker in self.brokers.values():
            if not broker.alive:
                self.restart(broker)

    def settle(self, steps: int) -> None:
        """Run without faults: metadata everywhere, followers fetching, messages delivered."""
        for _ in range(steps):
            self.now += TICK_MS
            self.controller_tick()
            for broker in self.brokers.values():
                self.deliver_metadata(broker)
                self.shrink(broker)
                self.follow_step(broker)
            while self.net:
                self.deliver_one()
            self.check()

    # --- invariants ----------------------------------------------------------------------

    def check_new_leader(self, broker: Broker) -> None:
        for offset, value in self.acked.items():
            if offset >= len(broker.log) or broker.log[offset][1] != value:
                raise InvariantViolation(
                    f"broker {broker.node_id} leads without acknowledged offset {offset}")

    def check(self) -> None:
        isr = self.partition().isr
        for broker in self.brokers.values():
            if broker.node_id in isr or broker.leading is not None:
                for offset, value in self.acked.items():
                    if offset < len(broker.log) and broker.log[offset][1] != value:
                        raise InvariantViolation(f"broker {broker.node_id} changed acknowledged "
                                                 f"offset {offset}")
            if broker.leading is not None:
                for offset, value in self.visible.items():
                    if offset < len(broker.log) and broker.log[offset][1] != value:
                        raise InvariantViolation(f"leader {broker.node_id} changed visible "
                                                 f"offset {offset}")
        brokers = list(self.brokers.values())
        for i, a in enumerate(brokers):
            for b in brokers[i + 1:]:
                common = min(a.high_watermark, b.high_watermark)
                if [v for _, v in a.log[:common]] != [v for _, v in b.log[:common]]:
                    raise InvariantViolation(f"brokers {a.node_id} and {b.node_id} disagree "
                                             f"below their high watermarks")
