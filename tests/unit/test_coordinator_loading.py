"""When a coordinator shard is loaded, on a real broker shell over logs on disk: only once the
broker's replica leads the partition, as Kafka loads a shard when its replica becomes leader.

The image is applied before the logs are created and led (in a worker thread), and the first
FindCoordinator that creates `__transaction_state` loaded shards in between: a Kafka Streams
application's first InitProducerId then met a shard with no log to append to (answered
COORDINATOR_NOT_AVAILABLE, with an error logged) and a coordinator epoch of -1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import NotCoordinator
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.txn_markers import MarkerWriter
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from odradek.config import BrokerConfig
from odradek.metadata.image import TRANSACTION_STATE_TOPIC
from odradek.metadata.records import (
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from odradek.replication.leader import IsrChange
from tests.unit.controller_harness import plaintext_at

NODE = 1
TOPIC_ID = "0b6f5c1e-3c2a-4d7e-9f10-1a2b3c4d5e6f"
LEADER_EPOCH = 4


async def no_isr_changes(topic_id: str, partition: int, change: IsrChange
                         ) -> tuple[ErrorCode, int]:
    raise AssertionError("a partition with an ISR of one asks for no ISR change")


def no_group_transactions(partition: int, producer_id: int, commit: bool) -> None:
    raise AssertionError("no markers are written here")


def transaction_coordinator(log_dir: Path) -> tuple[TransactionCoordinatorRuntime,
                                                   MetadataApplier]:
    """A broker's transaction coordinator, and the applier of its metadata batches."""
    config = BrokerConfig({"node.id": str(NODE), "log.dirs": str(log_dir),
                           "transaction.state.log.num.partitions": "1"})
    broker = Broker(config, "PLAINTEXT", generate_cluster_id=True)
    replicas = ReplicaManager(broker, alter_partition=no_isr_changes)
    writer: Any = None  # the topic is in the image: ensure_loaded creates nothing
    txns = TransactionCoordinatorRuntime(
        broker, replicas, writer, MarkerWriter(broker, replicas, no_group_transactions))
    return txns, MetadataApplier(broker, replicas.on_metadata, [txns.refresh_topics])


async def apply_transaction_state_topic(applier: MetadataApplier) -> None:
    """`__transaction_state`, one partition led by this broker."""
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(NODE, "incarnation", 1, plaintext_at("127.0.0.1", 9092), None),
        UnfenceBrokerRecord(NODE, 1),
        TopicRecord(TRANSACTION_STATE_TOPIC, TOPIC_ID),
        PartitionRecord(TOPIC_ID, 0, (NODE,), (NODE,), NODE, leader_epoch=LEADER_EPOCH),
    ]
    await applier.apply(records, offset=len(records), snapshot=False)


def coordinator_epochs(txns: TransactionCoordinatorRuntime) -> dict[int, int]:
    return {p: shard.coordinator_epoch for p, shard in txns.shards.items()}


def test_a_shard_waits_for_its_replica_to_lead(tmp_path: Path) -> None:
    async def scenario() -> None:
        txns, applier = transaction_coordinator(tmp_path)
        # Not caught up with the metadata log yet: the image says this broker leads
        # partition 0, its replica manager does not lead it yet.
        await apply_transaction_state_topic(applier)
        await txns.ensure_loaded()
        assert txns.num_partitions == 1
        assert coordinator_epochs(txns) == {}
        with pytest.raises(NotCoordinator):  # the client looks the coordinator up again
            txns.shard_for("streams-app-1")
        await applier.caught_up()  # the logs placed and led: refresh_topics follows
        assert coordinator_epochs(txns) == {0: LEADER_EPOCH}
        assert txns.shard_for("streams-app-1")[0] == 0
        txns.close()

    asyncio.run(scenario())


def test_a_shard_whose_replica_leads_is_served_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        txns, applier = transaction_coordinator(tmp_path)
        txns.broker.caught_up = True
        await apply_transaction_state_topic(applier)
        await txns.ensure_loaded()
        assert coordinator_epochs(txns) == {0: LEADER_EPOCH}
        assert txns.shard_for("streams-app-1")[0] == 0
        txns.close()

    asyncio.run(scenario())
