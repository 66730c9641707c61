"""Bad group and offset requests get Kafka's error codes on a connection that keeps
serving; requests are built with kafka-python's protocol classes, not the broker's codec."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.protocol.admin.groups import DeleteGroupsRequest, DeleteGroupsResponse
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.raw_client import RawClient, batch_of

NONE = 0
INVALID_TOPIC_EXCEPTION = 17
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
OFFSET_METADATA_TOO_LARGE = 12
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    raw = RawClient(broker.bootstrap)
    yield raw
    assert raw.api_versions().error_code == NONE, "the connection still serves"
    raw.close()


def join(client: RawClient, group: str, member_id: str = "", session_ms: int = 10_000,
         protocols: list[tuple[str, bytes]] | None = None) -> object:
    request = JoinGroupRequest[5](
        group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=10_000,
        member_id=member_id, group_instance_id=None, protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                   for n, m in (protocols if protocols is not None else [("range", b"x")])],
    )
    return client.request(request, JoinGroupResponse, 5)


def test_find_coordinator_by_key_type(broker: BrokerProcess, client: RawClient) -> None:
    request = FindCoordinatorRequest[4](key_type=0, coordinator_keys=["a", "b"])
    response = client.request(request, FindCoordinatorResponse, 4)
    assert [(c.key, c.error_code, c.port) for c in response.coordinators] == [
        ("a", NONE, broker.port), ("b", NONE, broker.port)]
    transactions = client.request(
        FindCoordinatorRequest[4](key_type=1, coordinator_keys=["tx"]),
        FindCoordinatorResponse, 4)
    assert [(c.key, c.error_code, c.port) for c in transactions.coordinators] == [
        ("tx", NONE, broker.port)]
    unknown = client.request(FindCoordinatorRequest[4](key_type=9, coordinator_keys=["x"]),
                             FindCoordinatorResponse, 4)
    assert unknown.coordinators[0].error_code == INVALID_REQUEST
    single = client.request(FindCoordinatorRequest[3](key="g", key_type=0),
                            FindCoordinatorResponse, 3)
    assert (single.error_code, single.node_id, single.port) == (NONE, 1, broker.port)


def test_join_group_refusals(client: RawClient) -> None:
    assert join(client, "").error_code == INVALID_GROUP_ID  # type: ignore[attr-defined]
    assert join(client, unique("g"), session_ms=1).error_code == (  # type: ignore[attr-defined]
        INVALID_SESSION_TIMEOUT)
    assert join(client, unique("g"), protocols=[]).error_code == (  # type: ignore[attr-defined]
        INCONSISTENT_GROUP_PROTOCOL)
    assert join(client, unique("g"), member_id="ghost").error_code == (  # type: ignore[attr-defined]
        UNKNOWN_MEMBER_ID)
    first = join(client, unique("g"), protocols=[("range", b"\xff" * 3)])
    assert first.error_code == MEMBER_ID_REQUIRED  # type: ignore[attr-defined]
    assert first.member_id  # type: ignore[attr-defined]


def test_sync_and_heartbeat_of_unknown_groups(client: RawClient) -> None:
    sync = client.request(SyncGroupRequest[3](
        group_id=unique("g"), generation_id=1, member_id="m", group_instance_id=None,
        assignments=[]), SyncGroupResponse, 3)
    assert sync.error_code == UNKNOWN_MEMBER_ID
    heartbeat = client.request(HeartbeatRequest[3](
        group_id=unique("g"), generation_id=1, member_id="m", group_instance_id=None),
        HeartbeatResponse, 3)
    assert heartbeat.error_code == UNKNOWN_MEMBER_ID


def test_offset_commit_errors_per_partition(broker: BrokerProcess, client: RawClient) -> None:
    topic = create_topic(broker.bootstrap, unique("offsets"), 1)
    group = unique("g")
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    request = OffsetCommitRequest[8](
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                partition(partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                          committed_metadata="ok"),
                partition(partition_index=7, committed_offset=5, committed_leader_epoch=-1,
                          committed_metadata=None)]),
            OffsetCommitRequest.OffsetCommitRequestTopic(name="no-such-topic", partitions=[
                partition(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                          committed_metadata=None)]),
        ])
    response = client.request(request, OffsetCommitResponse, 8)
    errors = {(t.name, p.partition_index): p.error_code
              for t in response.topics for p in t.partitions}
    assert errors == {(topic, 0): NONE, (topic, 7): UNKNOWN_TOPIC_OR_PARTITION,
                      ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
    too_large = OffsetCommitRequest[8](
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
            name=topic, partitions=[partition(partition_index=0, committed_offset=9,
                                              committed_leader_epoch=-1,
                                              committed_metadata="m" * 4097)])])
    response = client.request(too_large, OffsetCommitResponse, 8)
    assert response.topics[0].partitions[0].error_code == OFFSET_METADATA_TOO_LARGE
    fetch = client.request(OffsetFetchRequest[7](group_id=group, topics=None,
                                                 require_stable=False),
                           OffsetFetchResponse, 7)
    assert [(t.name, p.partition_index, p.committed_offset, p.metadata)
            for t in fetch.topics for p in t.partitions] == [(topic, 0, 5, "ok")]


def test_member_commit_with_a_generation_to_a_missing_group(broker: BrokerProcess,
                                                            client: RawClient) -> None:
    topic = create_topic(broker.bootstrap, unique("offsets"), 1)
    topic_request = OffsetCommitRequest[8](
        group_id=unique("g"), generation_id_or_member_epoch=4, member_id="m",
        group_instance_id=None, topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
            name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                    committed_metadata=None)])])
    response = client.request(topic_request, OffsetCommitResponse, 8)
    assert response.topics[0].partitions[0].error_code == ILLEGAL_GENERATION


def test_internal_topics_cannot_be_created_or_produced_to(client: RawClient) -> None:
    join(client, unique("g"))  # the coordinator creates __consumer_offsets
    created = client.request(CreateTopicsRequest[5](topics=[
        CreateTopicsRequest.CreatableTopic(name="__consumer_offsets", num_partitions=1,
                                           replication_factor=1, assignments=[], configs=[])],
        timeout_ms=5000, validate_only=False), CreateTopicsResponse, 5)
    assert created.topics[0].error_code == INVALID_REQUEST
    produced = client.produce_partition("__consumer_offsets", 0, batch_of([(b"k", b"v")]))
    assert produced.error_code == INVALID_TOPIC_EXCEPTION


def test_delete_groups_of_unknown_groups(client: RawClient) -> None:
    response = client.request(DeleteGroupsRequest[2](groups_names=["nope"]),
                              DeleteGroupsResponse, 2)
    assert [(r.group_id, r.error_code) for r in response.results] == [("nope", GROUP_ID_NOT_FOUND)]
