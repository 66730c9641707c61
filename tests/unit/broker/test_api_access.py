"""Every API of the broker's table declares what it needs authorized, and declares what
Kafka's KafkaApis checks for it (written out below from KafkaApis.scala). A new API without
a declaration, or with a different one, fails here; the dispatcher refuses to serve it."""

from __future__ import annotations

import typing
from dataclasses import fields, replace
from typing import Any

import pytest

from odradek.broker.access import top_level_error
from odradek.broker.apis import API_TABLE
from odradek.broker.dispatch import Dispatcher, UndeclaredAccess, undeclared
from odradek.protocol import codec
from odradek.security.acls import AclOperation, ResourceType

T, G, C, X = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
              ResourceType.TRANSACTIONAL_ID)
Op = AclOperation
PUBLIC_APIS = {"ApiVersions", "SaslHandshake", "SaslAuthenticate"}
"""Kafka authorizes none of these: they come before (or establish) the principal."""

KAFKA_CHECKS: dict[str, set[tuple[ResourceType, AclOperation]]] = {
    "Produce": {(X, Op.WRITE), (T, Op.WRITE)},
    "Fetch": {(C, Op.CLUSTER_ACTION), (T, Op.READ)},
    "ListOffsets": {(T, Op.DESCRIBE)},
    "Metadata": {(T, Op.DESCRIBE), (C, Op.CREATE), (T, Op.CREATE)},
    "OffsetCommit": {(G, Op.READ), (T, Op.READ)},
    "OffsetFetch": {(G, Op.DESCRIBE), (T, Op.DESCRIBE)},
    "FindCoordinator": {(G, Op.DESCRIBE), (X, Op.DESCRIBE), (C, Op.CLUSTER_ACTION)},
    "JoinGroup": {(G, Op.READ)},
    "Heartbeat": {(G, Op.READ)},
    "LeaveGroup": {(G, Op.READ)},
    "SyncGroup": {(G, Op.READ)},
    "DescribeGroups": {(G, Op.DESCRIBE)},
    "ListGroups": {(C, Op.DESCRIBE), (G, Op.DESCRIBE)},
    "CreateTopics": {(C, Op.CREATE), (T, Op.CREATE), (T, Op.DESCRIBE_CONFIGS)},
    "DeleteTopics": {(T, Op.DELETE), (T, Op.DESCRIBE)},
    "DeleteRecords": {(T, Op.DELETE)},
    "InitProducerId": {(X, Op.WRITE), (C, Op.IDEMPOTENT_WRITE), (T, Op.WRITE)},
    "OffsetForLeaderEpoch": {(C, Op.CLUSTER_ACTION), (T, Op.DESCRIBE)},
    "AddPartitionsToTxn": {(X, Op.WRITE), (T, Op.WRITE), (C, Op.CLUSTER_ACTION)},
    "AddOffsetsToTxn": {(X, Op.WRITE), (G, Op.READ)},
    "EndTxn": {(X, Op.WRITE)},
    "WriteTxnMarkers": {(C, Op.CLUSTER_ACTION)},
    "TxnOffsetCommit": {(X, Op.WRITE), (G, Op.READ), (T, Op.READ)},
    "DescribeAcls": {(C, Op.DESCRIBE)},
    "CreateAcls": {(C, Op.ALTER)},
    "DeleteAcls": {(C, Op.ALTER)},
    "DescribeConfigs": {(T, Op.DESCRIBE_CONFIGS), (G, Op.DESCRIBE_CONFIGS),
                        (C, Op.DESCRIBE_CONFIGS)},
    "AlterConfigs": {(T, Op.ALTER_CONFIGS), (G, Op.ALTER_CONFIGS), (C, Op.ALTER_CONFIGS)},
    "DescribeLogDirs": {(C, Op.DESCRIBE)},
    "CreatePartitions": {(T, Op.ALTER)},
    "DeleteGroups": {(G, Op.DELETE)},
    "ElectLeaders": {(C, Op.ALTER)},
    "IncrementalAlterConfigs": {(T, Op.ALTER_CONFIGS), (G, Op.ALTER_CONFIGS),
                                (C, Op.ALTER_CONFIGS)},
    "ListConfigResources": {(C, Op.DESCRIBE_CONFIGS)},
    "AlterPartitionReassignments": {(C, Op.ALTER)},
    "ListPartitionReassignments": {(C, Op.DESCRIBE)},
    "OffsetDelete": {(G, Op.DELETE), (T, Op.READ)},
    "DescribeClientQuotas": {(C, Op.DESCRIBE_CONFIGS)},
    "AlterClientQuotas": {(C, Op.ALTER_CONFIGS)},
    "DescribeUserScramCredentials": {(C, Op.DESCRIBE)},
    "AlterUserScramCredentials": {(C, Op.ALTER)},
    "DescribeQuorum": {(C, Op.DESCRIBE)},
    "DescribeCluster": {(C, Op.DESCRIBE)},
    "DescribeProducers": {(T, Op.READ)},
    "DescribeTransactions": {(X, Op.DESCRIBE), (T, Op.DESCRIBE)},
    "ListTransactions": {(X, Op.DESCRIBE)},
    "ConsumerGroupHeartbeat": {(G, Op.READ)},
    "ConsumerGroupDescribe": {(G, Op.DESCRIBE)},
    "DescribeTopicPartitions": {(T, Op.DESCRIBE)},
    "ShareGroupHeartbeat": {(G, Op.READ), (T, Op.DESCRIBE)},
    "ShareGroupDescribe": {(G, Op.DESCRIBE)},
    "DescribeShareGroupOffsets": {(G, Op.DESCRIBE), (T, Op.DESCRIBE)},
    "AlterShareGroupOffsets": {(G, Op.READ), (T, Op.READ)},
    "DeleteShareGroupOffsets": {(G, Op.DELETE), (T, Op.READ)},
    "InitializeShareGroupState": {(C, Op.CLUSTER_ACTION)},
    "ReadShareGroupState": {(C, Op.CLUSTER_ACTION)},
    "WriteShareGroupState": {(C, Op.CLUSTER_ACTION)},
    "DeleteShareGroupState": {(C, Op.CLUSTER_ACTION)},
    "ReadShareGroupStateSummary": {(C, Op.CLUSTER_ACTION)},
    "ShareFetch": {(G, Op.READ), (T, Op.READ)},
    "ShareAcknowledge": {(G, Op.READ), (T, Op.READ)},
}


def test_every_api_declares_its_authorization() -> None:
    assert undeclared(API_TABLE) == []


def test_the_dispatcher_refuses_a_table_with_an_api_that_declares_nothing() -> None:
    stripped = [replace(API_TABLE[0], access=None), *API_TABLE[1:]]
    assert undeclared(stripped) == ["Produce"]
    with pytest.raises(UndeclaredAccess, match="Produce"):
        Dispatcher(typing.cast(Any, None), stripped, "PLAINTEXT")


@pytest.mark.parametrize("api", API_TABLE, ids=lambda api: api.name)
def test_each_api_declares_what_kafka_checks(api: Any) -> None:
    if api.name in PUBLIC_APIS:
        assert api.access.public
        return
    assert not api.access.public, f"{api.name} is not one of Kafka's unauthorized APIs"
    assert api.name in KAFKA_CHECKS, f"write down KafkaApis' checks of {api.name} here"
    assert set(api.access.declared) == KAFKA_CHECKS[api.name]


@pytest.mark.parametrize("api", [a for a in API_TABLE if a.access and a.access.gates
                                 and a.access.refusal is top_level_error],
                         ids=lambda api: api.name)
def test_a_refused_gate_has_an_error_code_to_carry_it_in(api: Any) -> None:
    """An API refused with just a top-level error code has one in every version served."""
    for version in range(api.min_version, api.max_version + 1):
        schema = codec.response_schema(api.key, version)
        assert "error_code" in {f.name for f in fields(schema)}, f"{api.name} v{version}"
