"""Every admin API of the foundation against a 3-controller, 3-broker cluster, through each
broker in turn, with the same real clients as the single-node suite: CreateTopics,
CreatePartitions, DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeCluster, DeleteRecords, DescribeLogDirs, DescribeTopicPartitions, ListOffsets and
Metadata. A change made through one broker is visible through every other at once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

from tests.integration.clients import create_topic, numbered, produce_values, unique
from tests.integration.cluster import Cluster, wait_until
from tests.integration.raw_client import RawClient, batch_of

TIMEOUT = 30.0
BROKERS = ("broker-1", "broker-2", "broker-3")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("cluster-admin"), controllers=3, brokers=3)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(params=BROKERS)
def via(request: pytest.FixtureRequest, cluster: Cluster) -> str:
    """The bootstrap of the one broker this test talks to."""
    return cluster.broker_bootstrap(request.param)


def others(cluster: Cluster, via: str) -> list[str]:
    return [cluster.broker_bootstrap(b) for b in BROKERS if cluster.broker_bootstrap(b) != via]


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def kafka_admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)


def partition_counts(bootstrap: str) -> dict[str, int]:
    metadata = admin(bootstrap).list_topics(timeout=TIMEOUT)
    return {name: len(t.partitions) for name, t in metadata.topics.items()}


def topic_config(bootstrap: str, topic: str) -> dict[str, Any]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    client = admin(bootstrap)
    result: dict[str, Any] = client.describe_configs([resource])[resource].result(TIMEOUT)
    return result


def test_create_topics_is_seen_by_every_broker(cluster: Cluster, via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=4, replication=3)
    for bootstrap in [via, *others(cluster, via)]:
        assert partition_counts(bootstrap)[topic] == 4
    client = admin(via)
    with pytest.raises(KafkaException) as exists:
        client.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT)
    assert exists.value.args[0].name() == "TOPIC_ALREADY_EXISTS"


def test_create_topics_validate_only_and_errors(via: str) -> None:
    name = f"adm-{uuid.uuid4().hex[:10]}"
    client = admin(via)
    client.create_topics([NewTopic(name, 2, 3)], validate_only=True)[name].result(TIMEOUT)
    assert name not in partition_counts(via)
    with pytest.raises(KafkaException) as too_many:
        client.create_topics([NewTopic(name, 1, 4)])[name].result(TIMEOUT)
    assert too_many.value.args[0].name() == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(KafkaException) as bad_config:
        client.create_topics([NewTopic(name, 1, 1, config={"retention.ms": "soon"})])[
            name
        ].result(TIMEOUT)
    assert bad_config.value.args[0].name() == "INVALID_CONFIG"


def test_create_partitions_then_delete_topics(cluster: Cluster, via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=2, replication=3)
    grower = admin(via)
    grower.create_partitions([NewPartitions(topic, 5)])[topic].result(TIMEOUT)
    assert all(partition_counts(b)[topic] == 5 for b in [via, *others(cluster, via)])

    client = kafka_admin(via)
    try:
        client.delete_topics([topic], timeout_ms=15_000)
    finally:
        client.close()
    assert all(topic not in partition_counts(b) for b in [via, *others(cluster, via)])


def test_alter_and_incremental_alter_configs(cluster: Cluster, via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=3, replication=3,
                         config={"retention.ms": "7200000"})
    client = admin(via)
    replace = ConfigResource(ResourceType.TOPIC, topic, set_config={"segment.bytes": "1048576"})
    client.alter_configs([replace])[replace].result(TIMEOUT)
    incremental = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
    ])
    client.incremental_alter_configs([incremental])[incremental].result(TIMEOUT)

    for bootstrap in [via, *others(cluster, via)]:
        configs = topic_config(bootstrap, topic)
        assert configs["segment.bytes"].value == "1048576"
        assert configs["cleanup.policy"].value == "compact"
        assert configs["retention.ms"].value == "604800000"  # the legacy call replaced it


def test_each_brokers_own_configs_go_through_the_controller(cluster: Cluster) -> None:
    for node_id, name in enumerate(BROKERS, 1):
        bootstrap = cluster.broker_bootstrap(name)
        client = admin(bootstrap)
        resource = ConfigResource(ResourceType.BROKER, str(node_id), incremental_configs=[
            ConfigEntry("log.retention.ms", str(3_600_000 * node_id),
                        incremental_operation=AlterConfigOpType.SET),
        ])
        client.incremental_alter_configs([resource])[resource].result(TIMEOUT)
    for node_id, name in enumerate(BROKERS, 1):
        client = admin(cluster.broker_bootstrap(name))
        resource = ConfigResource(ResourceType.BROKER, str(node_id))
        configs = client.describe_configs([resource])[resource].result(TIMEOUT)
        assert configs["log.retention.ms"].value == str(3_600_000 * node_id)


def test_describe_cluster_lists_every_broker(cluster: Cluster, via: str) -> None:
    client = kafka_admin(via)
    try:
        described = client.describe_cluster()
    finally:
        client.close()
    ports = {cluster.node(b)["port"] for b in BROKERS}
    assert {b["broker_id"] for b in described["brokers"]} == {1, 2, 3}
    assert {b["port"] for b in described["brokers"]} == ports
    assert described["cluster_id"] == cluster.layout["cluster_id"]
    assert described["controller_id"] in {1, 2, 3}


def test_delete_records_and_list_offsets_reach_the_leader(via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=3, replication=3)
    for partition in range(3):
        produce_values(via, topic, numbered(10), partition)
    client = admin(via)
    wanted = [CTopicPartition(topic, p, 4) for p in range(3)]
    deleted = client.delete_records(wanted, request_timeout=TIMEOUT)
    for partition in wanted:
        assert deleted[partition].result(TIMEOUT).low_watermark == 4

    earliest = client.list_offsets({CTopicPartition(topic, p): OffsetSpec.earliest()
                                    for p in range(3)})
    latest = client.list_offsets({CTopicPartition(topic, p): OffsetSpec.latest()
                                  for p in range(3)})
    assert {tp.partition: f.result(TIMEOUT).offset for tp, f in earliest.items()} == {
        0: 4, 1: 4, 2: 4
    }
    assert {tp.partition: f.result(TIMEOUT).offset for tp, f in latest.items()} == {
        0: 10, 1: 10, 2: 10
    }


def test_describe_log_dirs_of_each_broker_holds_its_replicas(cluster: Cluster, via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=3, replication=1)
    leaders = {p: info.leader for p, info in
               admin(via).list_topics(topic, timeout=TIMEOUT).topics[topic].partitions.items()}
    client = kafka_admin(via)
    try:
        held: dict[int, set[int]] = {}
        for node_id in (1, 2, 3):
            (entry,) = client.describe_log_dirs(brokers=[node_id])
            (log_dir,) = entry["log_dirs"]
            held[node_id] = {p["partition_index"] for t in log_dir["topics"]
                             if t["name"] == topic for p in t["partitions"]}
    finally:
        client.close()
    assert held == {n: {p for p, leader in leaders.items() if leader == n} for n in (1, 2, 3)}


def test_describe_topic_partitions_and_describe_topics(via: str) -> None:
    topic = create_topic(via, unique("adm"), partitions=3, replication=3)
    client = kafka_admin(via)
    try:
        page = client.describe_topic_partitions([topic])
    finally:
        client.close()
    (described,) = page["topics"]
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1, 2]
    assert all(len(p["replica_nodes"]) == 3 for p in described["partitions"])
    describer = admin(via)
    topics = describer.describe_topics(TopicCollection([topic]))
    assert len(topics[topic].result(TIMEOUT).partitions) == 3


PARTITION_FIELDS = ("error_code", "partition_index", "leader_id", "leader_epoch",
                    "replica_nodes", "isr_nodes", "offline_replicas")
LEADER_NOT_AVAILABLE = 5


def described_partitions(bootstrap: str, topics: list[str]) -> tuple[Any, Any]:
    """{topic: [partition fields]} as Metadata and as DescribeTopicPartitions describe them,
    from one broker."""
    client = RawClient(bootstrap)
    try:
        metadata = client.metadata(topics)
        request = DescribeTopicPartitionsRequest[0](
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in topics],
            response_partition_limit=2000, cursor=None)
        described = client.request(request, DescribeTopicPartitionsResponse, 0)
    finally:
        client.close()

    def fields(response: Any) -> dict[str, list[tuple[Any, ...]]]:
        return {t.name: [tuple(getattr(p, f) for f in PARTITION_FIELDS) for p in t.partitions]
                for t in response.topics}

    return fields(metadata), fields(described)


def test_metadata_and_describe_topic_partitions_agree_on_a_broker_that_is_down(
        cluster: Cluster) -> None:
    """With broker 3 down, both APIs list its replicas as offline, and the partition it alone
    held as LEADER_NOT_AVAILABLE without a leader."""
    bootstrap = cluster.broker_bootstrap("broker-1")
    alone, shared = f"adm-{uuid.uuid4().hex[:10]}", f"adm-{uuid.uuid4().hex[:10]}"
    client = admin(bootstrap)
    for future in client.create_topics([NewTopic(alone, 1, replica_assignment=[[3]]),
                                        NewTopic(shared, 1, replica_assignment=[[3, 1, 2]])]
                                       ).values():
        future.result(TIMEOUT)
    cluster.stop("broker-3")
    try:
        wait_until(lambda: [p[2] for p in described_partitions(bootstrap, [shared])[0][shared]]
                   != [3], what="leadership of the shared partition moved off broker 3")
        metadata, described = described_partitions(bootstrap, [alone, shared])
    finally:
        cluster.start("broker-3")
        wait_until(lambda: 3 in {b.id for b in admin(bootstrap).list_topics(
            timeout=TIMEOUT).brokers.values()}, what="broker 3 registered again")
    assert described == metadata
    [(code, _, leader, _, _, _, offline)] = metadata[alone]
    assert (code, leader, offline) == (LEADER_NOT_AVAILABLE, -1, [3])
    [(code, _, leader, _, replicas, _, offline)] = metadata[shared]
    assert (code, leader, replicas, offline) == (0, 1, [3, 1, 2], [3])


def test_produce_to_a_partition_led_elsewhere_is_not_leader(cluster: Cluster) -> None:
    bootstrap = cluster.broker_bootstrap("broker-1")
    topic = create_topic(bootstrap, unique("adm"), partitions=3, replication=3)
    partitions = admin(bootstrap).list_topics(topic, timeout=TIMEOUT).topics[topic].partitions
    elsewhere = next(p for p, info in partitions.items() if info.leader != 1)
    client = RawClient(bootstrap)
    try:
        produced = client.produce_partition(topic, elsewhere, batch_of([(b"k", b"v")]))
    finally:
        client.close()
    assert produced.error_code == 6  # NOT_LEADER_OR_FOLLOWER
