"""A broker's transaction coordinator shell over logs on disk, without sockets: the broker,
its replica manager and the applier of its metadata batches, as the tests of the shared
coordinator runtime drive them."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.replica_manager import IsrChangeRequest, ReplicaManager
from odradek.broker.txn_markers import MarkerWriter
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from odradek.config.kafka_configs import BrokerConfig
from odradek.metadata.image import TRANSACTION_STATE_TOPIC
from odradek.metadata.records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from tests.unit.controller_harness import plaintext_at

TOPIC_ID = "0b6f5c1e-3c2a-4d7e-9f10-1a2b3c4d5e6f"
_REFUSING = socket.socket()
_REFUSING.bind(("127.0.0.1", 0))
REFUSING_PORT: int = _REFUSING.getsockname()[1]
"""Every broker's listener in these images: bound and never listened on, so a follower's
fetcher is refused at once, whatever else runs on the machine. A fixed port (9092 + node)
reached another test's real broker once, and the test hung at its end."""


async def no_isr_changes(changes: Sequence[IsrChangeRequest]) -> list[tuple[ErrorCode, int]]:
    raise AssertionError("the tests keep the ISR as the metadata sets it, asking no change")


def no_group_transactions(partition: int, producer_id: int, commit: bool) -> None:
    raise AssertionError("no markers are written here")


def transaction_coordinator(log_dir: Path, node: int, configs: dict[str, str] | None = None
                            ) -> tuple[TransactionCoordinatorRuntime, MetadataApplier]:
    """Node `node`'s transaction coordinator (one partition of `__transaction_state`), and
    the applier of its metadata batches."""
    config = BrokerConfig({"node.id": str(node), "log.dirs": str(log_dir),
                           "transaction.state.log.num.partitions": "1", **(configs or {})})
    broker = Broker(config, "PLAINTEXT", generate_cluster_id=True)
    replicas = ReplicaManager(broker, alter_partition=no_isr_changes)
    writer: Any = None  # the topic is in the image: ensure_loaded creates nothing
    txns = TransactionCoordinatorRuntime(
        broker, replicas, writer, MarkerWriter(broker, replicas, no_group_transactions))
    return txns, MetadataApplier(broker, replicas.on_metadata, [txns.refresh_topics])


async def apply_transaction_state_topic(
        applier: MetadataApplier, leader: int, leader_epoch: int, replicas: Sequence[int],
        isr: Sequence[int], min_insync_replicas: int = 1) -> None:
    """`__transaction_state` with one partition, led by `leader`."""
    records: list[MetadataRecord] = [
        *(record for node in replicas for record in (
            RegisterBrokerRecord(node, f"incarnation-{node}", 1,
                                 plaintext_at("127.0.0.1", REFUSING_PORT), None),
            UnfenceBrokerRecord(node, 1))),
        TopicRecord(TRANSACTION_STATE_TOPIC, TOPIC_ID),
        ConfigRecord(ConfigResourceType.TOPIC, TRANSACTION_STATE_TOPIC, "min.insync.replicas",
                     str(min_insync_replicas)),
        PartitionRecord(TOPIC_ID, 0, tuple(replicas), tuple(isr), leader,
                        leader_epoch=leader_epoch),
    ]
    await applier.apply(records, offset=len(records), snapshot=False)
