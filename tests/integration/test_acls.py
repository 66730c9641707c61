"""ACLs enforced on every API of a real `odradek dev` with Kafka's StandardAuthorizer.

Until TLS or SASL name principals, every connection is User:ANONYMOUS, so the module toggles
`super.users`: the broker first runs with User:ANONYMOUS a super user, which sets up topics,
data, a group, a transaction and the ACLs (with `odradek acls add`); then it restarts
without, where ANONYMOUS has no ACL on `secret`, on the group or the transactional id, nor
on the cluster (User:other has ALL on each, so none falls to allow.everyone.if.no.acl.found),
ALL on the topics prefixed `open.`, and a DENY of WRITE on `open.closed`. Every API is
called there and must answer its authorization error; the last test restarts as a super
user and finds the state exactly as it was set up."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer
from kio.schema.errors import ErrorCode

from odradek.broker.apis import API_TABLE
from odradek.net.kafka_client import KafkaCluster
from odradek.protocol.codec import build_request, encode_body
from odradek.protocol.record_codec import build_batch
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.tool_runs import one_line_failure
from tests.waiting import wait_until

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECRET, OPEN, CLOSED = "secret", "open.a", "open.closed"
GROUP, TXN = "g", "t1"
SHARE_GROUP = "open-share"
"""A share group User:ANONYMOUS has every ACL on, to get past the group gates."""
TIMEOUT = 30
TOPIC_DENIED = ErrorCode.topic_authorization_failed
GROUP_DENIED = ErrorCode.group_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
TXN_DENIED = ErrorCode.transactional_id_authorization_failed


@dataclass
class Setup:
    broker: BrokerProcess
    before: dict[str, Any]


def start(data_dir: Path, log: Path, port: int | None, super_user: bool) -> BrokerProcess:
    overrides = {"authorizer.class.name": STANDARD_AUTHORIZER, "num.partitions": "1",
                 "allow.everyone.if.no.acl.found": "true"}
    if super_user:
        overrides["super.users"] = "User:ANONYMOUS"
    broker = BrokerProcess(data_dir, log, overrides, port=port)
    broker.start()
    return broker


def acls(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, "acls", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=60)


def set_up(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (SECRET, OPEN, CLOSED)]
                                      ).values():
        future.result(TIMEOUT)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce(SECRET, b"kept")
    producer.commit_transaction(TIMEOUT)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    # a commit before the group's coordinator is found can fail (COORDINATOR_NOT_AVAILABLE),
    # which librdkafka hands back from a synchronous commit rather than retrying
    wait_until(lambda: consumer.commit(offsets=[TopicPartition(SECRET, 0, 1)],
                                       asynchronous=False), TIMEOUT, "a committed offset",
               ignoring=KafkaException)
    consumer.close()
    # The share coordinator's topic, made by its first FindCoordinator (key type 2), as
    # Kafka makes it.
    found = call(bootstrap, 10, 6, {"key_type": 2, "coordinator_keys": [
        f"{SHARE_GROUP}:{uuid.UUID(int=1)}:0"]})
    wait_until(lambda: "__share_group_state" in admin.list_topics(timeout=TIMEOUT).topics,
               TIMEOUT, f"__share_group_state made ({found})")
    for args in (["--topic", "*", "--group", "*", "--transactional-id", "*", "--cluster",
                  "--allow-principal", "User:other"],
                 ["--topic", "open.", "--resource-pattern-type", "prefixed",
                  "--allow-principal", "User:ANONYMOUS"],
                 ["--topic", CLOSED, "--deny-principal", "User:ANONYMOUS", "--operation",
                  "Write"],
                 ["--group", SHARE_GROUP, "--allow-principal", "User:ANONYMOUS"]):
        result = acls(bootstrap, "add", *args)
        assert result.returncode == 0, result.stderr


def state(bootstrap: str) -> dict[str, Any]:
    """What the refused requests must not change, as a super user sees it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=TIMEOUT).topics
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    ends = {t: consumer.get_watermark_offsets(TopicPartition(t, 0), TIMEOUT)
            for t in sorted(topics) if not t.startswith("__")}
    committed = consumer.committed([TopicPartition(SECRET, 0)], TIMEOUT)[0].offset
    consumer.close()
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    bindings = admin.describe_acls(everything).result(TIMEOUT)
    groups = admin.list_consumer_groups().result(TIMEOUT).valid
    return {"topics": {t: len(m.partitions) for t, m in topics.items()}, "ends": ends,
            "committed": committed, "groups": sorted(g.group_id for g in groups),
            "acls": sorted(str(b) for b in bindings)}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("acls")
    data, log = root / "data", root / "broker.log"
    broker = start(data, log, None, super_user=True)
    try:
        set_up(broker.bootstrap)
        before = state(broker.bootstrap)
    finally:
        broker.stop()
    running = Setup(start(data, log, broker.port, super_user=False), before)
    try:
        yield running
    finally:
        running.broker.stop()


# --- every API without its ACL -------------------------------------------------------------

Check = Callable[[Any], None]


def codes(response: Any) -> list[int]:
    """Every error code anywhere in a response."""
    found: list[int] = []
    if is_dataclass(response):
        for item in fields(response):
            value = getattr(response, item.name)
            if item.name.endswith("error_code"):
                found.append(int(value))
            else:
                found += codes(value)
    elif isinstance(response, tuple | list):
        for value in response:
            found += codes(value)
    return found


def refused_with(code: ErrorCode) -> Check:
    def check(response: Any) -> None:
        errors = set(codes(response)) - {ErrorCode.none}
        assert errors == {code}, (errors, response)
    return check


def hidden(field: str, key: str, name: str) -> Check:
    def check(response: Any) -> None:
        assert ErrorCode.none in codes(response) or not codes(response)
        assert name not in [getattr(item, key) for item in getattr(response, field)], response
    return check


def no_cluster_operations(response: Any) -> None:
    assert response.error_code == ErrorCode.none
    assert response.cluster_authorized_operations == 0


BATCH = build_batch([(None, b"refused")], timestamp_ms=0)
PARTITION = [{"partition_index": 0}]
CASES: dict[str, tuple[int, dict[str, Any], Check]] = {
    "Produce": (9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": SECRET, "partition_data": [{"index": 0, "records": BATCH}]}]},
        refused_with(TOPIC_DENIED)),
    "Fetch": (12, {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                   "session_epoch": -1, "topics": [{"topic": SECRET, "partitions": [
                       {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                        "current_leader_epoch": -1, "log_start_offset": -1}]}]},
              refused_with(TOPIC_DENIED)),
    "ListOffsets": (7, {"replica_id": -1, "topics": [{"name": SECRET, "partitions": [
        {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]},
        refused_with(TOPIC_DENIED)),
    "Metadata": (12, {"topics": [{"name": SECRET}], "allow_auto_topic_creation": False},
                 refused_with(TOPIC_DENIED)),
    "OffsetCommit": (8, {"group_id": GROUP, "generation_id_or_member_epoch": -1,
                         "member_id": "", "topics": [{"name": SECRET, "partitions": [
                             {"partition_index": 0, "committed_offset": 0}]}]},
                     refused_with(GROUP_DENIED)),
    "OffsetFetch": (7, {"group_id": GROUP, "topics": None}, refused_with(GROUP_DENIED)),
    "FindCoordinator": (3, {"key": GROUP, "key_type": 0}, refused_with(GROUP_DENIED)),
    "JoinGroup": (7, {"group_id": GROUP, "session_timeout": 10000, "rebalance_timeout": 10000,
                      "member_id": "", "protocol_type": "consumer",
                      "protocols": [{"name": "range", "metadata": b""}]},
                  refused_with(GROUP_DENIED)),
    "Heartbeat": (4, {"group_id": GROUP, "generation_id": 1, "member_id": "m"},
                  refused_with(GROUP_DENIED)),
    "LeaveGroup": (4, {"group_id": GROUP, "members": [{"member_id": "m"}]},
                   refused_with(GROUP_DENIED)),
    "SyncGroup": (5, {"group_id": GROUP, "generation_id": 1, "member_id": "m",
                      "assignments": []}, refused_with(GROUP_DENIED)),
    "DescribeGroups": (5, {"groups": [GROUP]}, refused_with(GROUP_DENIED)),
    "ListGroups": (4, {"states_filter": []}, hidden("groups", "group_id", GROUP)),
    "CreateTopics": (7, {"topics": [{"name": "created", "num_partitions": 1,
                                     "replication_factor": 1}], "timeout": 5000},
                     refused_with(TOPIC_DENIED)),
    "DeleteTopics": (6, {"topics": [{"name": SECRET}], "timeout": 5000},
                     refused_with(TOPIC_DENIED)),
    "DeleteRecords": (2, {"topics": [{"name": SECRET, "partitions": [
        {"partition_index": 0, "offset": -1}]}], "timeout": 5000}, refused_with(TOPIC_DENIED)),
    "InitProducerId": (4, {"transactional_id": TXN, "transaction_timeout": 60000,
                           "producer_id": -1, "producer_epoch": -1}, refused_with(TXN_DENIED)),
    "OffsetForLeaderEpoch": (4, {"replica_id": -1, "topics": [{"topic": SECRET, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]},
        refused_with(TOPIC_DENIED)),
    "AddPartitionsToTxn": (3, {"v3_and_below_transactional_id": TXN,
                               "v3_and_below_producer_id": 0, "v3_and_below_producer_epoch": 0,
                               "v3_and_below_topics": [{"name": SECRET, "partitions": [0]}]},
                           refused_with(TXN_DENIED)),
    "AddOffsetsToTxn": (3, {"transactional_id": TXN, "producer_id": 0, "producer_epoch": 0,
                            "group_id": GROUP}, refused_with(TXN_DENIED)),
    "EndTxn": (3, {"transactional_id": TXN, "producer_id": 0, "producer_epoch": 0,
                   "committed": True}, refused_with(TXN_DENIED)),
    "WriteTxnMarkers": (1, {"markers": [{"producer_id": 0, "producer_epoch": 0,
                                         "transaction_result": True, "coordinator_epoch": 0,
                                         "topics": [{"name": SECRET, "partition_indexes": [0]}]}]},
                        refused_with(CLUSTER_DENIED)),
    "TxnOffsetCommit": (3, {"transactional_id": TXN, "group_id": GROUP, "producer_id": 0,
                            "producer_epoch": 0, "topics": [{"name": SECRET, "partitions": [
                                {"partition_index": 0, "committed_offset": 0}]}]},
                        refused_with(TXN_DENIED)),
    "DescribeAcls": (3, {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1,
                         "permission_type": 1}, refused_with(CLUSTER_DENIED)),
    "CreateAcls": (3, {"creations": [{"resource_type": 2, "resource_name": SECRET,
                                      "resource_pattern_type": 3, "principal": "User:ANONYMOUS",
                                      "host": "*", "operation": 2, "permission_type": 3}]},
                   refused_with(CLUSTER_DENIED)),
    "DeleteAcls": (3, {"filters": [{"resource_type_filter": 1, "pattern_type_filter": 1,
                                    "operation": 1, "permission_type": 1}]},
                   refused_with(CLUSTER_DENIED)),
    "DescribeConfigs": (4, {"resources": [{"resource_type": 2, "resource_name": SECRET,
                                           "configuration_keys": None}]},
                        refused_with(TOPIC_DENIED)),
    "AlterConfigs": (2, {"resources": [{"resource_type": 2, "resource_name": SECRET, "configs": [
        {"name": "retention.ms", "value": "1"}]}]}, refused_with(TOPIC_DENIED)),
    "DescribeLogDirs": (4, {"topics": None}, refused_with(CLUSTER_DENIED)),
    "CreatePartitions": (3, {"topics": [{"name": SECRET, "count": 2, "assignments": None}],
                             "timeout": 5000}, refused_with(TOPIC_DENIED)),
    "DeleteGroups": (2, {"groups_names": [GROUP]}, refused_with(GROUP_DENIED)),
    "ElectLeaders": (2, {"election_type": 0, "topic_partitions": [
        {"topic": SECRET, "partitions": [0]}], "timeout": 5000}, refused_with(CLUSTER_DENIED)),
    "IncrementalAlterConfigs": (1, {"resources": [{"resource_type": 2, "resource_name": SECRET,
                                                   "configs": [{"name": "retention.ms",
                                                                "config_operation": 0,
                                                                "value": "1"}]}]},
                                refused_with(TOPIC_DENIED)),
    "AlterPartitionReassignments": (0, {"timeout": 5000, "topics": [{"name": SECRET, "partitions": [
        {"partition_index": 0, "replicas": None}]}]}, refused_with(CLUSTER_DENIED)),
    "ListPartitionReassignments": (0, {"timeout": 5000, "topics": None},
                                   refused_with(CLUSTER_DENIED)),
    "OffsetDelete": (0, {"group_id": GROUP, "topics": [{"name": SECRET, "partitions": [
        {"partition_index": 0}]}]}, refused_with(GROUP_DENIED)),
    "ListConfigResources": (1, {"resource_types": []}, refused_with(CLUSTER_DENIED)),
    "DescribeClientQuotas": (1, {"components": [], "strict": False},
                             refused_with(CLUSTER_DENIED)),
    "AlterClientQuotas": (1, {"entries": [{
        "entity": [{"entity_type": "client-id", "entity_name": "app"}],
        "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
        "validate_only": False}, refused_with(CLUSTER_DENIED)),
    "DescribeUserScramCredentials": (0, {"users": None}, refused_with(CLUSTER_DENIED)),
    "AlterUserScramCredentials": (0, {"deletions": [{"name": "alice", "mechanism": 1}],
                                      "upsertions": []}, refused_with(CLUSTER_DENIED)),
    "DescribeQuorum": (1, {"topics": [{"topic_name": "__cluster_metadata",
                                       "partitions": PARTITION}]},
                       refused_with(CLUSTER_DENIED)),
    "DescribeCluster": (1, {"include_cluster_authorized_operations": True, "endpoint_type": 1},
                        no_cluster_operations),
    "DescribeProducers": (0, {"topics": [{"name": SECRET, "partition_indexes": [0]}]},
                          refused_with(TOPIC_DENIED)),
    "DescribeTransactions": (0, {"transactional_ids": [TXN]}, refused_with(TXN_DENIED)),
    # (its refusal carries Kafka's -1 start time, which kio cannot decode: read raw below)
    "ListTransactions": (1, {"state_filters": [], "producer_id_filters": [],
                             "duration_filter": -1},
                         hidden("transaction_states", "transactional_id", TXN)),
    "ConsumerGroupHeartbeat": (0, {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                   "rebalance_timeout": 10000, "subscribed_topic_names": [SECRET],
                                   "server_assignor": None, "topic_partitions": []},
                               refused_with(GROUP_DENIED)),
    "ConsumerGroupDescribe": (0, {"group_ids": [GROUP]}, refused_with(GROUP_DENIED)),
    "ShareGroupHeartbeat": (1, {"group_id": GROUP, "member_id": "m", "member_epoch": 0,
                                "rack_id": None, "subscribed_topic_names": [SECRET]},
                            refused_with(GROUP_DENIED)),
    "ShareGroupDescribe": (1, {"group_ids": [GROUP], "include_authorized_operations": False},
                           refused_with(GROUP_DENIED)),
    "DescribeShareGroupOffsets": (1, {"groups": [{"group_id": GROUP, "topics": None}]},
                                  refused_with(GROUP_DENIED)),
    "AlterShareGroupOffsets": (0, {"group_id": GROUP, "topics": [{"topic_name": SECRET,
                                                                  "partitions": [{
                                                                      "partition_index": 0,
                                                                      "start_offset": 0}]}]},
                               refused_with(GROUP_DENIED)),
    "DeleteShareGroupOffsets": (0, {"group_id": GROUP, "topics": [{"topic_name": SECRET}]},
                                refused_with(GROUP_DENIED)),
    "DescribeTopicPartitions": (0, {"topics": [{"name": SECRET}],
                                    "response_partition_limit": 100},
                                refused_with(TOPIC_DENIED)),
    "ShareFetch": (1, {"group_id": GROUP, "member_id": "m", "share_session_epoch": 0,
                       "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10,
                       "batch_size": 10, "topics": [], "forgotten_topics_data": []},
                   refused_with(GROUP_DENIED)),
    "ShareAcknowledge": (1, {"group_id": GROUP, "member_id": "m", "share_session_epoch": 1,
                             "topics": []}, refused_with(GROUP_DENIED)),
    **{name: (version, {"group_id": GROUP, "topics": [
        {"topic_id": uuid.UUID(int=1), "partitions": [{"partition": 0, **fields}]}]},
        refused_with(CLUSTER_DENIED))
       for name, version, fields in (
           ("InitializeShareGroupState", 0, {"state_epoch": 0, "start_offset": 0}),
           ("ReadShareGroupState", 0, {"leader_epoch": 0}),
           ("WriteShareGroupState", 1, {"state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
                                        "state_batches": []}),
           ("DeleteShareGroupState", 0, {}),
           ("ReadShareGroupStateSummary", 1, {"leader_epoch": 0}))},
}
AUTHORIZED_APIS = [api for api in API_TABLE if api.access is not None and not api.access.public]


def call(bootstrap: str, key: int, version: int, body: dict[str, Any]) -> Any:
    host, port = bootstrap.rsplit(":", 1)

    async def send() -> Any:
        async with KafkaCluster([(host, int(port))], "acl-test", TIMEOUT) as cluster:
            return await cluster.send(build_request(key, version, body))

    return asyncio.run(send())


def first_state_error(bootstrap: str, body: dict[str, Any]) -> int:
    """DescribeTransactions v0 over a plain socket: the first state's error code (after the
    correlation id, the header's and the body's tagged-field byte, the throttle time and
    the array length)."""
    request = build_request(65, 0, body)
    header = struct.pack(">hhih", 65, 0, 1, 0) + b"\x00"
    payload = header + encode_body(request)
    with socket.create_connection(tuple_address(bootstrap), timeout=TIMEOUT) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        frame = sock.recv(size, socket.MSG_WAITALL)
    (code,) = struct.unpack_from(">h", frame, 4 + 1 + 4 + 1)
    return int(code)


def tuple_address(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def test_every_authorized_api_has_a_refusal_case() -> None:
    assert sorted(a.name for a in AUTHORIZED_APIS if a.name not in CASES) == []


@pytest.mark.parametrize("api", AUTHORIZED_APIS, ids=lambda api: api.name)
def test_every_api_without_its_acl_is_refused(setup: Setup, api: Any) -> None:
    version, body, check = CASES[api.name]
    if api.name == "DescribeTransactions":
        assert first_state_error(setup.broker.bootstrap, body) == TXN_DENIED
        return
    check(call(setup.broker.bootstrap, api.key, version, body))


@pytest.mark.parametrize(("key", "version", "body"), [
    (32, 4, {"resources": [{"resource_type": 32, "resource_name": GROUP,
                            "configuration_keys": None}]}),
    (44, 1, {"resources": [{"resource_type": 32, "resource_name": GROUP, "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}]}),
    (33, 2, {"resources": [{"resource_type": 32, "resource_name": GROUP, "configs": [
        {"name": "share.auto.offset.reset", "value": "earliest"}]}]}),
], ids=["DescribeConfigs", "IncrementalAlterConfigs", "AlterConfigs"])
def test_group_configs_take_the_operation_on_the_group(
    setup: Setup, key: int, version: int, body: dict[str, Any]
) -> None:
    """Kafka's ConfigHelper and ControllerApis: DESCRIBE_CONFIGS / ALTER_CONFIGS on the GROUP
    resource (the principal has ALTER on the cluster nowhere either, so only the group's
    ACL can be the reason)."""
    refused_with(GROUP_DENIED)(call(setup.broker.bootstrap, key, version, body))


# --- real clients ----------------------------------------------------------------------------


def test_a_refused_produce_is_reported_to_the_producer(setup: Setup) -> None:
    reports: list[Any] = []
    producer = Producer({"bootstrap.servers": setup.broker.bootstrap, "retries": 0,
                         "enable.idempotence": False})
    producer.produce(SECRET, b"refused", on_delivery=lambda error, _: reports.append(error))
    producer.flush(TIMEOUT)
    assert [error.name() for error in reports] == ["TOPIC_AUTHORIZATION_FAILED"]


def test_deny_wins_over_a_prefixed_allow(setup: Setup) -> None:
    reports: dict[str, Any] = {}
    producer = Producer({"bootstrap.servers": setup.broker.bootstrap, "retries": 0})
    for topic in (OPEN, CLOSED):
        producer.produce(topic, b"x", on_delivery=lambda e, m: reports.__setitem__(m.topic(), e))
    producer.flush(TIMEOUT)
    assert reports[OPEN] is None
    assert reports[CLOSED].name() == "TOPIC_AUTHORIZATION_FAILED"
    consumer = KafkaConsumer(CLOSED, bootstrap_servers=setup.broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    assert list(consumer) == []  # READ is allowed: nothing there, but no error either
    consumer.close()


def test_metadata_lists_only_the_topics_the_principal_may_describe(setup: Setup) -> None:
    admin = AdminClient({"bootstrap.servers": setup.broker.bootstrap})
    assert sorted(admin.list_topics(timeout=TIMEOUT).topics) == sorted([OPEN, CLOSED])


def test_acl_admin_without_alter_on_the_cluster_fails_in_one_line(setup: Setup) -> None:
    for args in (["list"], ["add", "--topic", SECRET, "--allow-principal", "User:ANONYMOUS"],
                 ["remove", "--topic", "*", "--force"]):
        one_line_failure(acls(setup.broker.bootstrap, *args), "acls",
                         "CLUSTER_AUTHORIZATION_FAILED")


def test_share_group_offsets_refuse_the_topics_without_their_acl(setup: Setup) -> None:
    """KafkaApis' topic checks of the share-group offsets APIs, past their group gates: the
    refused topic answers TOPIC_AUTHORIZATION_FAILED. (Nothing here reaches the share
    coordinator: its inter-broker calls, as User:ANONYMOUS, lack CLUSTER_ACTION, so the
    member's partitions never get their state.)"""
    bootstrap = setup.broker.bootstrap
    altered = call(bootstrap, 91, 0, {"group_id": SHARE_GROUP, "topics": [{
        "topic_name": SECRET, "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
    assert altered.error_code == ErrorCode.none
    assert [(t.topic_name, [p.error_code for p in t.partitions]) for t in altered.responses
            ] == [(SECRET, [TOPIC_DENIED])]
    described = call(bootstrap, 90, 1, {"groups": [{"group_id": SHARE_GROUP, "topics": [
        {"topic_name": SECRET, "partitions": [0]}]}]})
    assert [(t.topic_name, [(p.error_code, p.start_offset) for p in t.partitions])
            for t in described.groups[0].topics] == [(SECRET, [(TOPIC_DENIED, -1)])]
    # An empty share group, left by its one member, for the deletion to get to the topics.
    # The member's heartbeat asked the share coordinator to initialize open.a's state; the
    # refused call leaves it uninitialized, and the group holds no share-partition state.
    log = Path(setup.broker.log_path)
    joined = call(bootstrap, 76, 1, {"group_id": SHARE_GROUP, "member_id": "m1",
                                     "member_epoch": 0, "rack_id": None,
                                     "subscribed_topic_names": [OPEN]})
    assert joined.error_code == ErrorCode.none
    wait_until(lambda: f"share group {SHARE_GROUP}: left initializing" in log.read_text(),
               what="the refused initialization recorded")
    left = call(bootstrap, 76, 1, {"group_id": SHARE_GROUP, "member_id": "m1",
                                   "member_epoch": -1, "rack_id": None,
                                   "subscribed_topic_names": None})
    assert left.error_code == ErrorCode.none
    deleted = call(bootstrap, 92, 0, {"group_id": SHARE_GROUP, "topics": [
        {"topic_name": SECRET}]})
    assert (deleted.error_code, [(t.topic_name, t.error_code) for t in deleted.responses]) == (
        ErrorCode.none, [(SECRET, TOPIC_DENIED)])
    # Without share-partition state, DeleteGroups has nothing to ask the share coordinator.
    removed = call(bootstrap, 42, 2, {"groups_names": [SHARE_GROUP]})
    assert [r.error_code for r in removed.results] == [ErrorCode.none]


def test_refused_requests_changed_nothing(setup: Setup) -> None:
    """Last: as a super user again, everything is as it was set up (but what the allowed
    producer wrote to open.a)."""
    broker = setup.broker
    broker.stop()
    setup.broker = start(broker.data_dir, broker.log_path, broker.port, super_user=True)
    after = state(setup.broker.bootstrap)
    after["ends"].pop(OPEN)
    setup.before["ends"].pop(OPEN)
    assert after == setup.before
