"""The share-group offsets admin APIs against a real `odradek dev`, over a raw socket with a
codec written from Kafka's JSON schemas: AlterShareGroupOffsets initializes an empty (here
new) group's share-partitions at new start offsets through the share coordinator,
DescribeShareGroupOffsets reads them back with their lag, and DeleteShareGroupOffsets
deletes a topic's state; a group with a member, an unknown topic or partition and an unknown
group are refused with Kafka's errors. DeleteGroups (confluent-kafka's AdminClient) deletes
an empty share group's share-partition state before the group. In a two-broker cluster the
lag of a partition led by another broker than the group's coordinator is asked of its
leader, DeleteGroups deletes state kept by either broker's share coordinator, and after
AlterShareGroupOffsets that other broker serves confluent-kafka's ShareConsumer from the
new start offset at once: it dropped the group's share-partitions when the group's last
share session there went (Kafka's onGroupEmpty)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, ShareConsumer
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kio.schema.errors import ErrorCode

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, produce_values, unique
from tests.integration.cluster import (
    Cluster,
    admin,
    broker_ids,
    partitions,
    running_cluster,
)
from tests.integration.raw_client import RawClient
from tests.integration.share_offsets_wire import (
    DescribedPartition,
    alter_offsets,
    delete_offsets,
    describe_offsets,
)
from tests.integration.share_wire import heartbeat
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TOPIC, GROUP = "share-offsets", "reset-group"
RECORDS = 10


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    path: Path = tmp_path_factory.mktemp("share-offsets")
    process = BrokerProcess(path / "data", path / "broker.log", {})
    process.start()
    create_topic(process.bootstrap, TOPIC, 2, replication=1)
    producer = Producer({"bootstrap.servers": process.bootstrap})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    yield process
    process.stop()


def test_alter_describe_delete(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        nothing = describe_offsets(client, GROUP)
        assert (nothing.error_code, nothing.partitions) == (ErrorCode.none, {})

        altered = alter_offsets(client, GROUP, {TOPIC: {0: 3, 1: 0, 5: 0}, "missing": {0: 0}})
        assert (altered.error_code, altered.partitions) == (ErrorCode.none, {
            (TOPIC, 0): ErrorCode.none, (TOPIC, 1): ErrorCode.none,
            (TOPIC, 5): ErrorCode.unknown_topic_or_partition,
            ("missing", 0): ErrorCode.unknown_topic_or_partition})

        # Lag: the end offset less the start offset (nothing delivered beyond it yet).
        described = describe_offsets(client, GROUP)
        assert described.partitions == {(TOPIC, 0): DescribedPartition(3, 0, RECORDS - 3, 0),
                                        (TOPIC, 1): DescribedPartition(0, 0, 0, 0)}
        v0 = describe_offsets(client, GROUP, version=0)
        assert v0.partitions[(TOPIC, 0)] == DescribedPartition(3, 0, -1, 0)
        some = describe_offsets(client, GROUP, {TOPIC: [0], "missing": [0]})
        assert some.partitions == {(TOPIC, 0): DescribedPartition(3, 0, RECORDS - 3, 0),
                                   ("missing", 0): DescribedPartition(-1, 0, -1, 0)}

        # Altering again moves the start offset back.
        assert alter_offsets(client, GROUP, {TOPIC: {0: 1}}).error_code == ErrorCode.none
        assert describe_offsets(client, GROUP, {TOPIC: [0]}).partitions[(TOPIC, 0)] == (
            DescribedPartition(1, 0, RECORDS - 1, 0))

        # Not while the group has a member.
        member = heartbeat(client, GROUP, "m-1", 0, [TOPIC])
        assert member.error_code == ErrorCode.none
        busy = alter_offsets(client, GROUP, {TOPIC: {0: 0}})
        assert (busy.error_code, busy.error_message, busy.partitions) == (
            ErrorCode.non_empty_group, "The group is not empty.", {})
        assert delete_offsets(client, GROUP, [TOPIC]).error_code == ErrorCode.non_empty_group
        assert heartbeat(client, GROUP, "m-1", -1).error_code == ErrorCode.none

        deleted = delete_offsets(client, GROUP, [TOPIC, "missing"])
        assert (deleted.error_code, deleted.topics) == (ErrorCode.none, {
            TOPIC: (ErrorCode.none, None),
            "missing": (ErrorCode.unknown_topic_or_partition,
                        "This server does not host this topic-partition.")})
        assert describe_offsets(client, GROUP).partitions == {}
        # The state itself is gone: asked by name, the partitions have no start offset.
        assert describe_offsets(client, GROUP, {TOPIC: [0]}).partitions == {
            (TOPIC, 0): DescribedPartition(-1, 0, -1, 0)}
        again = delete_offsets(client, GROUP, [TOPIC])
        assert again.topics == {TOPIC: (ErrorCode.unknown_topic_or_partition,
                                        "There is no offset information to delete.")}

        unknown = delete_offsets(client, "no-such-group", [TOPIC])
        assert (unknown.error_code, unknown.error_message) == (
            ErrorCode.group_id_not_found, "Group no-such-group not found.")
        assert alter_offsets(client, "", {TOPIC: {0: 0}}).error_code == (
            ErrorCode.invalid_group_id)


def delete_group(bootstrap: str, group: str) -> None:
    """DeleteGroups with confluent-kafka's AdminClient, which has no notion of group types."""
    client = admin(bootstrap)  # kept alive until its answer came
    client.delete_consumer_groups([group], request_timeout=60)[group].result(60)


def test_delete_groups_deletes_the_share_state(broker: BrokerProcess) -> None:
    group = "deleted-share-group"
    with RawClient(broker.bootstrap) as client:
        assert alter_offsets(client, group, {TOPIC: {0: 4, 1: 0}}).error_code == ErrorCode.none
        member = heartbeat(client, group, "m-1", 0, [TOPIC])
        assert member.error_code == ErrorCode.none
        with pytest.raises(KafkaException) as busy:
            delete_group(broker.bootstrap, group)
        assert busy.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        assert describe_offsets(client, group, {TOPIC: [0]}).partitions[(TOPIC, 0)] == (
            DescribedPartition(4, 0, RECORDS - 4, 0))
        assert heartbeat(client, group, "m-1", -1).error_code == ErrorCode.none
        delete_group(broker.bootstrap, group)
        # Asked by name, the share-partitions have no state any more: a new group of the
        # same id starts from share.auto.offset.reset.
        assert describe_offsets(client, group, {TOPIC: [0, 1]}).partitions == {
            (TOPIC, 0): DescribedPartition(-1, 0, -1, 0),
            (TOPIC, 1): DescribedPartition(-1, 0, -1, 0)}
        assert describe_offsets(client, group).partitions == {}
    with pytest.raises(KafkaException) as gone:
        delete_group(broker.bootstrap, group)
    assert gone.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("share-offsets-cluster"), 1, 2, {}) as c:
        yield c


def test_lag_of_a_partition_led_elsewhere(cluster: Cluster) -> None:
    # both brokers registered first, so that the two partitions are placed one on each
    wait_until(lambda: broker_ids(cluster.bootstrap) == {1, 2}, 60, "both brokers registered")
    topic = create_topic(cluster.bootstrap, unique("t"), 2, replication=1)
    leaders = {p: info.leader for p, info in partitions(cluster.bootstrap, topic).items()}
    assert set(leaders.values()) == {1, 2}  # one partition on each broker
    for partition, count in ((0, 6), (1, 9)):
        produce_values(cluster.bootstrap, topic, [b"%d" % i for i in range(count)], partition)
    with RawClient(cluster.bootstrap.split(",")[0]) as client:
        request = FindCoordinatorRequest[6](key_type=0, coordinator_keys=[GROUP])
        (found,) = client.request(request, FindCoordinatorResponse, 6).coordinators
    assert found.error_code == ErrorCode.none
    with RawClient(f"127.0.0.1:{found.port}") as coordinator:
        # as a client does, until the coordinator has loaded the group's shard
        wait_until(lambda: alter_offsets(coordinator, GROUP, {topic: {0: 1, 1: 2}}).error_code
                   not in (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress),
                   60, "the coordinator loaded")
        assert alter_offsets(coordinator, GROUP, {topic: {0: 1, 1: 2}}).error_code == (
            ErrorCode.none)
        described = describe_offsets(coordinator, GROUP)
    assert described.partitions == {(topic, 0): DescribedPartition(1, 0, 5, 0),
                                    (topic, 1): DescribedPartition(2, 0, 7, 0)}


def coordinator_of(bootstrap: str, key: str, key_type: int = 0) -> tuple[int, int]:
    """The node id and port of the coordinator of a group (`key_type` 0) or a transactional
    id (1)."""
    with RawClient(bootstrap.split(",")[0]) as client:
        request = FindCoordinatorRequest[6](key_type=key_type, coordinator_keys=[key])
        (found,) = client.request(request, FindCoordinatorResponse, 6).coordinators
    assert found.error_code == ErrorCode.none
    return int(found.node_id), int(found.port)


def share_consume(bootstrap: str, group: str, topic: str, count: int) -> list[int]:
    """The offsets confluent-kafka's ShareConsumer is given (implicitly accepted), once it
    had `count` records; closed, it leaves the group and its connections close."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    offsets: list[int] = []

    def polled() -> bool:
        for message in consumer.poll(1.0):
            assert message.error() is None, message.error()
            offsets.append(message.offset())
        return len(offsets) >= count

    try:
        consumer.subscribe([topic])
        wait_until(polled, 120, lambda: f"{count} records delivered (got {offsets})")
        consumer.commit_sync()
    finally:
        consumer.close()
    return offsets


def test_a_reset_is_served_at_once_by_a_partition_leader_elsewhere(cluster: Cluster) -> None:
    wait_until(lambda: broker_ids(cluster.bootstrap) == {1, 2}, 60, "both brokers registered")
    topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=1)
    leader = partitions(cluster.bootstrap, topic)[0].leader
    # a group whose coordinator is the other broker
    group, port = next((g, port) for g in (f"reset-elsewhere-{i}" for i in range(100))
                       for node, port in [coordinator_of(cluster.bootstrap, g)]
                       if node != leader)
    produce_values(cluster.bootstrap, topic, [b"%d" % i for i in range(6)])
    with RawClient(f"127.0.0.1:{port}") as coordinator:
        wait_until(lambda: alter_offsets(coordinator, group, {topic: {0: 0}}).error_code
                   not in (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress),
                   60, "the coordinator loaded")
        assert sorted(share_consume(cluster.bootstrap, group, topic, 6)) == list(range(6))
        wait_until(lambda: describe_offsets(coordinator, group).partitions.get((topic, 0)) == (
            DescribedPartition(6, 0, 0, 0)), 60, "all six accepted")
        # Reset once the member left; the leader reads the new state on the next fetch.
        wait_until(lambda: alter_offsets(coordinator, group, {topic: {0: 2}}).error_code
                   == ErrorCode.none, 60, "the group empty")
    assert sorted(share_consume(cluster.bootstrap, group, topic, 4)) == [2, 3, 4, 5]


def test_delete_groups_deletes_state_kept_by_either_broker(cluster: Cluster) -> None:
    """Share-partition keys of one group hash to several `__share_group_state` partitions,
    led by both brokers."""
    group = "deleted-in-a-cluster"
    topic = create_topic(cluster.bootstrap, unique("t"), 8, replication=1)
    every = {topic: dict.fromkeys(range(8), 0)}
    with RawClient(cluster.bootstrap.split(",")[0]) as client:
        request = FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group])
        (found,) = client.request(request, FindCoordinatorResponse, 6).coordinators
    with RawClient(f"127.0.0.1:{found.port}") as coordinator:
        wait_until(lambda: alter_offsets(coordinator, group, every).error_code
                   not in (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress),
                   60, "the coordinator loaded")
        altered = alter_offsets(coordinator, group, every)
        assert set(altered.partitions.values()) == {ErrorCode.none}
        assert {p.start_offset for p in describe_offsets(coordinator, group).partitions.values()
                } == {0}
        delete_group(cluster.bootstrap, group)
        assert describe_offsets(coordinator, group, {topic: list(range(8))}).partitions == {
            (topic, p): DescribedPartition(-1, 0, -1, 0) for p in range(8)}
