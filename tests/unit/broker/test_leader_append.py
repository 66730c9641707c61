"""The leader-append path of a real broker shell over a log on disk: under flush.messages=1
whatever it acknowledges is fsynced first (the log's recovery point covers it). Transaction
markers once skipped the flush policy and were acknowledged before any fsync."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.handlers.transactions import handle_write_txn_markers
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.txn_markers import MarkerWriter
from odradek.config.kafka_configs import BrokerConfig
from odradek.metadata.records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import validate_batches
from tests.unit.controller_harness import plaintext_at
from tests.unit.coordinator_shell import no_isr_changes

NODE = 1
TOPIC = "orders"
TOPIC_ID = "5f1c4ab6-4f4c-4b4e-9b1c-2f6f0e1d9a01"
PRODUCER_ID, PRODUCER_EPOCH = 7, 0


async def leading_broker(log_dir: Path, configs: dict[str, str],
                         topic_configs: dict[str, str], replicas_of: tuple[int, ...] = (NODE,)
                         ) -> tuple[Broker, ReplicaManager]:
    """A broker leading TOPIC-0 alone (ISR of one, of `replicas_of`), its log created on
    disk, and its replicas."""
    config = BrokerConfig({"node.id": str(NODE), "log.dirs": str(log_dir), **configs})
    broker = Broker(config, "PLAINTEXT", generate_cluster_id=True)
    replicas = ReplicaManager(broker, alter_partition=no_isr_changes)
    broker.caught_up = True
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(NODE, "incarnation", 1, plaintext_at("127.0.0.1", 9092), None),
        UnfenceBrokerRecord(NODE, 1),
        TopicRecord(TOPIC, TOPIC_ID),
        PartitionRecord(TOPIC_ID, 0, replicas_of, (NODE,), NODE),
        *(ConfigRecord(ConfigResourceType.TOPIC, TOPIC, name, value)
          for name, value in topic_configs.items()),
    ]
    await MetadataApplier(broker, replicas.on_metadata, []).apply(
        records, offset=len(records), snapshot=False)
    return broker, replicas


def no_group_transactions(partition: int, producer_id: int, commit: bool) -> None:
    raise AssertionError(f"the markers go to {TOPIC}, not __consumer_offsets")


def write_txn_markers_request(commit: bool) -> Any:
    return SimpleNamespace(markers=[SimpleNamespace(
        producer_id=PRODUCER_ID, producer_epoch=PRODUCER_EPOCH, transaction_result=commit,
        coordinator_epoch=0, topics=[SimpleNamespace(name=TOPIC, partition_indexes=[0])])])


async def marker_fsynced_when_acknowledged(
        log_dir: Path, commit: bool, configs: dict[str, str], topic_configs: dict[str, str],
        replicas_of: tuple[int, ...] = (NODE,)) -> tuple[int, int, int]:
    """Appends a transactional batch (fsynced), then ends its transaction through
    WriteTxnMarkers: (error code, log end offset, recovery point) when it answers."""
    broker, replicas = await leading_broker(log_dir, configs, topic_configs, replicas_of)
    log_ = broker.partition(TOPIC, 0)
    assert log_ is not None
    data = bytearray(build_batch([(b"k", b"v")], timestamp_ms=0, producer_id=PRODUCER_ID,
                                 producer_epoch=PRODUCER_EPOCH, base_sequence=0,
                                 is_transactional=True))
    log_.append(data, validate_batches(data, len(data)), 0, leader_epoch=0)
    await broker.flush(log_)
    assert log_.recovery_point == log_.log_end_offset == 1
    markers = MarkerWriter(broker, replicas, no_group_transactions)
    context: Any = SimpleNamespace(broker=broker, services=SimpleNamespace(markers=markers))
    response = await handle_write_txn_markers(context, write_txn_markers_request(commit))
    [marker] = response["markers"]
    [topic] = marker["topics"]
    [partition] = topic["partitions"]
    answered = (partition["error_code"], log_.log_end_offset, log_.recovery_point)
    await replicas.stop()
    broker.logs.shutdown()
    return answered


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
@pytest.mark.parametrize(("configs", "topic_configs"), [
    ({"log.flush.interval.messages": "1"}, {}), ({}, {"flush.messages": "1"}),
], ids=["log.flush.interval.messages", "flush.messages"])
def test_a_marker_is_fsynced_before_it_is_acknowledged(
        tmp_path: Path, commit: bool, configs: dict[str, str],
        topic_configs: dict[str, str]) -> None:
    answered = asyncio.run(marker_fsynced_when_acknowledged(tmp_path, commit, configs,
                                                            topic_configs))
    assert answered == (ErrorCode.none, 2, 2)


def test_markers_are_not_fsynced_under_the_default_flush_policy(tmp_path: Path) -> None:
    """The page cache holds them (Kafka's default): the recovery point stays behind."""
    answered = asyncio.run(marker_fsynced_when_acknowledged(tmp_path, True, {}, {}))
    assert answered == (ErrorCode.none, 2, 1)


def test_a_marker_is_refused_unwritten_while_the_isr_is_below_min_insync_replicas(
        tmp_path: Path) -> None:
    """As Kafka's acks=all append: NOT_ENOUGH_REPLICAS before the write. Written first, each
    retry of the coordinator appended one more marker (the fault campaign saw a partition
    grow by thousands of markers while its ISR was short)."""
    answered = asyncio.run(marker_fsynced_when_acknowledged(
        tmp_path, True, {}, {"min.insync.replicas": "2"}, replicas_of=(NODE, 2)))
    assert answered == (ErrorCode.not_enough_replicas, 1, 1)


def test_min_insync_replicas_above_the_replication_factor_is_capped_at_it(
        tmp_path: Path) -> None:
    """Kafka's Partition.effectiveMinIsr: a partition of one replica takes acks=all writes,
    markers included, whatever min.insync.replicas says. Apache Kafka wrote this marker
    where Odradek refused it (tests/integration/jvm/test_stalled_commit_markers.py)."""
    answered = asyncio.run(marker_fsynced_when_acknowledged(tmp_path, True, {},
                                                            {"min.insync.replicas": "2"}))
    assert answered == (ErrorCode.none, 2, 1)
