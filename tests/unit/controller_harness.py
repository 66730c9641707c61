"""An active controller and its log for the unit tests: `Cluster.commit` replays a batch
at the next offset, as the Raft driver does once the batch is committed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeVar

from odradek.config.listeners import Endpoint
from odradek.controller.machine import ControllerMachine
from odradek.metadata.controller import HeartbeatResult, QuorumController
from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import MetadataRecord, PartitionRecord, decode_batch, encode_batch

TIMEOUT = 9000
T = TypeVar("T")


def plaintext_at(host: str, port: int) -> tuple[Endpoint, ...]:
    """A broker's endpoints with one PLAINTEXT listener, as a registration holds them."""
    return (Endpoint("PLAINTEXT", host, port),)


def image(metadata: ClusterMetadata) -> tuple[object, ...]:
    """Everything the metadata holds, for comparisons."""
    return (
        {name: (s.topic_id, dict(s.partitions), dict(s.configs))
         for name, s in metadata.topics.items()},
        dict(metadata.topic_names_by_id),
        {name: dict(configs) for name, configs in metadata.broker_configs.items()},
        dict(metadata.brokers),
        metadata.next_producer_id,
    )


class Cluster:
    """A controller and its log: `commit` replays a batch at the next offset, as the Raft
    driver does once the batch is committed."""

    def __init__(self, session_timeout_ms: int = TIMEOUT) -> None:
        self.controller = QuorumController(session_timeout_ms=session_timeout_ms)
        self.offset = 0
        self.epochs: dict[int, int] = {}

    @property
    def metadata(self) -> ClusterMetadata:
        return self.controller.metadata

    def commit(self, records: Sequence[MetadataRecord]) -> list[MetadataRecord]:
        if records:
            self.offset += 1
            self.controller.replay(decode_batch(encode_batch(list(records))), self.offset)
        return list(records)

    def handle(self, build: Callable[[], tuple[list[MetadataRecord], T]]) -> T:
        """Run a handler, check it changed nothing, commit its records."""
        before = image(self.metadata)
        records, result = build()
        assert image(self.metadata) == before, "a handler must not change the metadata"
        self.commit(records)
        return result

    def register(self, broker_id: int, now: int = 0, incarnation: str | None = None,
                 rack: str | None = None) -> int:
        epoch = self.handle(lambda: self.controller.register_broker(
            broker_id, incarnation or f"incarnation-{broker_id}",
            plaintext_at("localhost", 9090 + broker_id), rack, now))
        self.epochs[broker_id] = epoch
        return epoch

    def heartbeat(self, broker_id: int, now: int = 0, want_fence: bool = False,
                  want_shutdown: bool = False, offset: int | None = None) -> HeartbeatResult:
        return self.handle(lambda: self.controller.broker_heartbeat(
            broker_id, self.epochs[broker_id], self.offset if offset is None else offset,
            want_fence, want_shutdown, now))

    def start(self, *broker_ids: int, now: int = 0, racks: Sequence[str | None] = ()) -> None:
        """Register these brokers and unfence them."""
        for index, broker_id in enumerate(broker_ids):
            self.register(broker_id, now, rack=racks[index] if racks else None)
        for broker_id in broker_ids:
            assert not self.heartbeat(broker_id, now).is_fenced

    def tick(self, now: int) -> list[MetadataRecord]:
        return self.commit(self.controller.tick(now))

    def create(self, name: str, partitions: int, replication: int,
               assignments: dict[int, list[int]] | None = None) -> str:
        self.commit(self.controller.create_topic(name, f"id-{name}", partitions, replication,
                                                 {}, assignments))
        return f"id-{name}"

    def partition(self, topic_id: str, index: int = 0) -> PartitionRecord:
        return self.metadata.partition(topic_id, index)

    def grow_isr(self, topic_id: str, index: int, isr: Sequence[int]) -> None:
        p = self.partition(topic_id, index)
        self.commit(self.controller.alter_partition(
            p.leader, self.epochs[p.leader], topic_id, index, p.leader_epoch, p.partition_epoch,
            tuple(isr)))


def alter(cluster: Cluster, topic: str, isr: Sequence[int], broker: int = 1,
          epoch: int | None = None, leader_epoch: int | None = None,
          partition_epoch: int | None = None, index: int = 0) -> list[MetadataRecord]:
    current = cluster.partition(topic)
    return cluster.controller.alter_partition(
        broker, cluster.epochs[broker] if epoch is None else epoch, topic, index,
        current.leader_epoch if leader_epoch is None else leader_epoch,
        current.partition_epoch if partition_epoch is None else partition_epoch, tuple(isr))


class ActiveDriver:
    """The active controller's Raft driver for a `ControllerService`: each proposal is
    applied to the machine at once, or, with `hold`, when the test calls `apply_next`."""

    def __init__(self, machine: ControllerMachine, offset: int, hold: bool = False) -> None:
        self.machine = machine
        self.offset = offset
        self.hold = hold
        self.active = True
        self.leader = 1
        self.proposals = 0
        self.held: list[tuple[bytes, asyncio.Future[int]]] = []

    def propose(self, data: bytes) -> asyncio.Future[int]:
        self.proposals += 1
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.held.append((data, future))
        if not self.hold:
            self.apply_next()
        return future

    def apply_next(self) -> None:
        data, future = self.held.pop(0)
        self.offset += 1
        self.machine.apply(self.offset, data)
        future.set_result(self.offset)
