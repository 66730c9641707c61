"""Deleting and re-creating a topic at once: the new topic never sees the old one's data,
directories or checkpointed log start offset, even across a kill -9."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

PARTITIONS = 40


def wait_for_checkpointed_start(data_dir: Path, topic: str) -> None:
    path = data_dir / "log-start-offset-checkpoint"
    wait_until(lambda: path.exists() and f"{topic} 0 2" in path.read_text(), 10,
               f"log start offset 2 of {topic}-0 checkpointed", interval=0.05)


def test_delete_then_recreate_then_kill_keeps_only_the_new_data(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.overrides["log.flush.offset.checkpoint.interval.ms"] = "100"
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = unique("reborn")
    for generation in range(3):
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(TIMEOUT)
        outs = [Out(None, f"gen{generation}-{p}".encode(), now_ms(), partition=p)
                for p in range(PARTITIONS) for _ in range(3)]
        produce_confluent(bootstrap, topic, outs)
        # a log start offset past 0 gets checkpointed for the old generation
        deleted = admin.delete_records([CTopicPartition(topic, 0, 2)])
        deleted[CTopicPartition(topic, 0, 2)].result(TIMEOUT)
        wait_for_checkpointed_start(fresh_broker.data_dir, topic)
        admin.delete_topics([topic])[topic].result(TIMEOUT)

    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(TIMEOUT)
    fresh = [Out(None, f"new-{p}".encode(), now_ms(), partition=p) for p in range(PARTITIONS)]
    acked = produce_confluent(bootstrap, topic, fresh)
    assert {(r.partition, r.offset) for r in acked} == {(p, 0) for p in range(PARTITIONS)}

    fresh_broker.kill()
    fresh_broker.start()
    stored = read_confluent(fresh_broker.bootstrap, topic, partitions=range(PARTITIONS))
    assert [(r.partition, r.offset, r.value) for r in stored] == [
        (p, 0, f"new-{p}".encode()) for p in range(PARTITIONS)
    ]
    leftovers = [d.name for d in fresh_broker.data_dir.iterdir() if d.name.endswith("-stray")]
    assert leftovers == []


def test_metadata_by_topic_id_ignores_an_empty_name(broker: BrokerProcess) -> None:
    """Kafka's Java consumer with a broker-side regex asks Metadata by topic id and leaves each
    name empty (""), not null: the id wins, as in Kafka."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = unique("by-id")
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(TIMEOUT)
    client = RawClient(broker.bootstrap)
    try:
        named = client.metadata([topic])
        topic_id = named.topics[0].topic_id
        request = MetadataRequest[12](
            topics=[MetadataRequest[12].MetadataRequestTopic(topic_id=topic_id, name=""),
                    MetadataRequest[12].MetadataRequestTopic(topic_id=uuid.uuid4(), name="")],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        answer = client.request(request, MetadataResponse, 12)
    finally:
        client.close()
    found, unknown = answer.topics
    assert (found.error_code, found.name, found.topic_id) == (0, topic, topic_id)
    assert sorted(p.partition_index for p in found.partitions) == [0, 1]
    assert (unknown.error_code, unknown.name, unknown.partitions) == (100, None, [])


def test_api_versions_announce_metadata_version(broker: BrokerProcess) -> None:
    """ApiVersions v3 carries the features (KIP-584) that Kafka's Admin describeFeatures reads:
    at v3 only metadata.version is listed as supported (3.3-IV3 to 4.0-IV3, as Kafka leaves
    out features whose minimum is 0), and the finalized levels (share.version 1: share groups
    are on; transaction.version 1, not 2, which would switch Kafka's producer to KIP-890)
    with the metadata offset as epoch."""
    client = RawClient(broker.bootstrap)
    try:
        request = ApiVersionsRequest[3](client_software_name="odradek-test",
                                        client_software_version="1")
        answer = client.request(request, ApiVersionsResponse, 3)
    finally:
        client.close()
    assert [(f.name, f.min_version, f.max_version) for f in answer.supported_features] == [
        ("metadata.version", 7, 25)]
    assert [(f.name, f.min_version_level, f.max_version_level)
            for f in answer.finalized_features] == [
        ("group.version", 1, 1), ("metadata.version", 25, 25), ("share.version", 1, 1),
        ("transaction.version", 1, 1)]
    assert answer.finalized_features_epoch > 0
