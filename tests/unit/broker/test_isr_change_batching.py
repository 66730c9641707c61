"""ISR changes reach the controller batched, as Kafka's AlterPartitionManager sends them: one
AlterPartition in flight per broker, carrying every change queued meanwhile, committed by
the controller as one metadata write.

Each change once went alone, as its own request and its own Raft commit, all queued behind
the controller's single write lock. After the fault campaign healed, the changes asked for
outnumbered the commits the quorum could make within controller.quorum.request.timeout.ms:
every request timed out, each leader asked again at once, and ISRs stayed shrunk for
minutes (acks=all writes failed with them)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.replica_manager import IsrChangeRequest, ReplicaManager
from odradek.config.kafka_configs import BrokerConfig
from odradek.controller.machine import ControllerMachine
from odradek.controller.service import ControllerService
from odradek.metadata.records import (
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from odradek.rpc import controller_pb2 as pb
from tests.unit.controller_harness import ActiveDriver, Cluster, plaintext_at

PARTITIONS = 8
TOPIC = "orders"
TOPIC_ID = "5f1c4ab6-4f4c-4b4e-9b1c-2f6f0e1d9a01"


class SlowController:
    """The controller's side of AlterPartition: records each request and answers it only
    when the test releases it, accepting every change."""

    def __init__(self) -> None:
        self.requests: list[list[IsrChangeRequest]] = []
        self.release = asyncio.Event()
        self.in_flight = self.most_in_flight = 0

    async def alter_partition(self, changes: Sequence[IsrChangeRequest]
                              ) -> list[tuple[ErrorCode, int]]:
        self.requests.append(list(changes))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.release.wait()
        self.release.clear()
        self.in_flight -= 1
        return [(ErrorCode.none, change.partition_epoch + 1) for _, _, change in changes]


async def leader_of_partitions(log_dir: Path, controller: SlowController) -> ReplicaManager:
    """Broker 1 leading PARTITIONS partitions with replicas [1, 2] and an ISR of [1]."""
    broker = Broker(BrokerConfig({"node.id": "1", "log.dirs": str(log_dir)}), "PLAINTEXT",
                    generate_cluster_id=True)
    replicas = ReplicaManager(broker, controller.alter_partition)
    broker.caught_up = True
    records: list[MetadataRecord] = [
        *(record for node in (1, 2) for record in (
            RegisterBrokerRecord(node, f"incarnation-{node}", 1,
                                 plaintext_at("127.0.0.1", 9090 + node), None),
            UnfenceBrokerRecord(node, 1))),
        TopicRecord(TOPIC, TOPIC_ID),
        *(PartitionRecord(TOPIC_ID, i, (1, 2), (1,), 1) for i in range(PARTITIONS)),
    ]
    await MetadataApplier(broker, replicas.on_metadata, []).apply(
        records, offset=len(records), snapshot=False)
    assert len(replicas.leaders) == PARTITIONS
    return replicas


async def expansions_sent(log_dir: Path) -> SlowController:
    """The requests a leader sends when follower 2 catches up on partition 0, then, while
    that change is in flight, on every other partition."""
    controller = SlowController()
    replicas = await leader_of_partitions(log_dir, controller)
    replicas.record_follower_fetch((TOPIC, 0), 2, 0, 0, now_ms=1)
    await settle()
    for i in range(1, PARTITIONS):
        replicas.record_follower_fetch((TOPIC, i), 2, 0, 0, now_ms=2)
    await settle()
    for _ in range(PARTITIONS):
        controller.release.set()
        await settle()
    await replicas.stop()
    return controller


async def settle() -> None:
    """Let every ready task run until it waits (here only on the test's events)."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_a_broker_sends_its_isr_changes_together_one_request_at_a_time(
        tmp_path: Path) -> None:
    controller = asyncio.run(expansions_sent(tmp_path))
    assert controller.most_in_flight == 1
    assert [[(p, change.isr) for _, p, change in r] for r in controller.requests] == [
        [(0, (1, 2))],
        [(i, (1, 2)) for i in range(1, PARTITIONS)],
    ]


async def alter_partitions(cluster: Cluster, changes: list[pb.PartitionIsrChange]
                           ) -> tuple[pb.AlterPartitionResponse, int]:
    machine = ControllerMachine(lambda: cluster.controller)
    driver = ActiveDriver(machine, cluster.offset)
    service = ControllerService(machine, driver, "cluster", {}, 9000)  # type: ignore[arg-type]
    response = await service.AlterPartition(pb.AlterPartitionRequest(
        broker_id=1, broker_epoch=cluster.epochs[1], partitions=changes), None)  # type: ignore[arg-type]
    return response, driver.proposals


def test_the_controller_commits_a_requests_isr_changes_in_one_write() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic_id = cluster.create(TOPIC, PARTITIONS, 2, {i: [1, 2] for i in range(PARTITIONS)})
    for i in range(PARTITIONS):
        cluster.grow_isr(topic_id, i, (1,))
    changes = [pb.PartitionIsrChange(
        topic_id=topic_id, partition=i, leader_epoch=cluster.partition(topic_id, i).leader_epoch,
        partition_epoch=cluster.partition(topic_id, i).partition_epoch, new_isr=[1, 2])
        for i in range(PARTITIONS)]
    changes[3].partition_epoch -= 1  # a stale change, refused alone
    response, proposals = asyncio.run(alter_partitions(cluster, changes))
    assert proposals == 1
    assert response.error.code == ErrorCode.none
    assert [(r.partition, r.error.code, list(r.isr)) for r in response.partitions] == [
        (i, ErrorCode.invalid_update_version if i == 3 else ErrorCode.none,
         [] if i == 3 else [1, 2]) for i in range(PARTITIONS)]
    assert [cluster.partition(topic_id, i).isr for i in range(PARTITIONS)] == [
        (1,) if i == 3 else (1, 2) for i in range(PARTITIONS)]


class ScriptedController:
    """Answers each AlterPartition with the next code of its script, for every change."""

    def __init__(self, *codes: ErrorCode) -> None:
        self.codes = list(codes)
        self.requests: list[list[IsrChangeRequest]] = []

    async def alter_partition(self, changes: Sequence[IsrChangeRequest]
                              ) -> list[tuple[ErrorCode, int]]:
        self.requests.append(list(changes))
        code = self.codes.pop(0) if self.codes else ErrorCode.operation_not_attempted
        return [(code, -1)] * len(changes)


async def expansion_answered(log_dir: Path, *codes: ErrorCode
                             ) -> tuple[ScriptedController, tuple[int, ...]]:
    """Follower 2 catches up on partition 0; the controller answers with `codes` in turn.
    Returns the controller and the leader's maximal ISR once the answers are spent."""
    controller = ScriptedController(*codes)
    replicas = await leader_of_partitions(log_dir, controller)  # type: ignore[arg-type]
    replicas.record_follower_fetch((TOPIC, 0), 2, 0, 0, now_ms=1)
    for _ in range(len(codes) + 1):
        await asyncio.sleep(0.15)
    maximal = replicas.leaders[(TOPIC, 0)].maximal_isr
    await replicas.stop()
    return controller, maximal


def test_an_unanswered_expansion_stays_in_the_maximal_isr_and_is_sent_again(
        tmp_path: Path) -> None:
    """The controller may have committed an expansion it did not answer: a leader that went
    back to its smaller ISR acknowledged writes its new member lacked, and that member was
    later elected (the fault campaign's lost writes)."""
    controller, maximal = asyncio.run(expansion_answered(
        tmp_path, ErrorCode.request_timed_out, ErrorCode.request_timed_out,
        ErrorCode.fenced_leader_epoch))
    assert [[(p, change.isr) for _, p, change in r] for r in controller.requests] == [
        [(0, (1, 2))]] * 3
    assert maximal == (1, 2), "refused for a newer epoch: it waits for the metadata"


def test_an_expansion_refused_as_not_applied_goes_back_to_the_committed_isr(
        tmp_path: Path) -> None:
    controller, maximal = asyncio.run(expansion_answered(
        tmp_path, ErrorCode.ineligible_replica))
    assert len(controller.requests) == 1
    assert maximal == (1,)
