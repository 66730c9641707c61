"""Scenarios of ACLs and authorization: CreateAcls, DescribeAcls, DeleteAcls by the super
user, then User:alice (SASL/PLAIN) refused or allowed as her ACLs say, on every kind of
resource."""

from __future__ import annotations

from typing import Any

from tests.integration.jvm.conformance.data_plane import fetch, list_offsets, metadata, produce
from tests.integration.jvm.conformance.scenario import (
    CREATE_ACLS,
    CREATE_TOPICS,
    DELETE_ACLS,
    DELETE_TOPICS,
    DESCRIBE_ACLS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    JOIN_GROUP,
    METADATA,
    OFFSET_FETCH,
    Scenario,
    create_topic,
)
from tests.integration.jvm.conformance.steps import ALICE, Batch, Name, Step

TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
READ, WRITE, DESCRIBE = 3, 4, 8
ALLOW, DENY = 3, 2


def acl(resource_type: int, name: Any, operation: int, permission: int = ALLOW,
        pattern: int = LITERAL, principal: str = "User:alice") -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name,
            "resource_pattern_type": pattern, "principal": principal, "host": "*",
            "operation": operation, "permission_type": permission}


def acl_filter(name: Any, pattern: int = 1, principal: str | None = "User:alice"
               ) -> dict[str, Any]:
    return {"resource_type_filter": 1, "resource_name_filter": name,
            "pattern_type_filter": pattern, "principal_filter": principal, "host_filter": None,
            "operation": 1, "permission_type": 1}


def as_alice(step: Step) -> Step:
    return Step(step.api, step.body, step.version, step.name, step.compare, ALICE, step.until)


SCENARIOS = [
    Scenario("acls", CREATE_ACLS, (
        Step(CREATE_ACLS, {"creations": [
            acl(TOPIC, Name("read"), READ), acl(TOPIC, Name("pre"), WRITE, pattern=PREFIXED),
            acl(TOPIC, Name("read"), WRITE, permission=DENY)]}),
        Step(CREATE_ACLS, {"creations": [acl(TOPIC, Name("x"), READ, pattern=1),
                                         acl(TOPIC, Name("x"), 0),
                                         acl(TOPIC, Name("x"), READ, principal="alice"),
                                         acl(CLUSTER, "not-kafka-cluster", 7)]}),
        Step(DESCRIBE_ACLS, {**acl_filter(Name("read")), "operation": 1,
                             "permission_type": 1}, version=3),
        Step(DESCRIBE_ACLS, {**acl_filter(Name("pre")), "pattern_type_filter": 2},
             version=3),
        Step(DELETE_ACLS, {"filters": [acl_filter(Name("read")), acl_filter(Name("nothing"))]},
             version=3),
        Step(DESCRIBE_ACLS, {**acl_filter(Name("read"))}, version=3),
    )),
    Scenario("describe_acls", DESCRIBE_ACLS, (
        Step(DESCRIBE_ACLS, acl_filter(Name("none"))),
        Step(DESCRIBE_ACLS, {**acl_filter(Name("none")), "resource_type_filter": 0}),
    )),
    Scenario("delete_acls", DELETE_ACLS, (
        Step(DELETE_ACLS, {"filters": [{**acl_filter(None), "resource_type_filter": 0}]}),
    )),
    Scenario("authorization", METADATA, (
        *create_topic("read"),
        *create_topic("secret"),
        Step(CREATE_ACLS, {"creations": [
            acl(TOPIC, Name("read"), READ), acl(TOPIC, Name("read"), WRITE, permission=DENY),
            acl(GROUP, Name("g"), READ)]}, version=3),
        as_alice(metadata("read", "secret")),
        as_alice(produce("read", Batch(), version=9)),
        as_alice(produce("secret", Batch(), version=9)),
        as_alice(fetch("read", 0, version=12)),
        as_alice(fetch("secret", 0, version=12)),
        as_alice(list_offsets("secret", -1, version=7)),
        as_alice(Step(CREATE_TOPICS, {"topics": [{
            "name": Name("new"), "num_partitions": 1, "replication_factor": 1,
            "assignments": [], "configs": []}], "timeout": 30_000, "validate_only": False},
            version=7)),
        as_alice(Step(DELETE_TOPICS, {"topic_names": [Name("read")], "timeout": 30_000},
                      version=5)),
        as_alice(Step(DESCRIBE_CONFIGS, {"resources": [
            {"resource_type": TOPIC, "resource_name": Name("read"), "configuration_keys": []},
            {"resource_type": CLUSTER, "resource_name": "1", "configuration_keys": []}],
            "include_synonyms": False, "include_documentation": False}, version=4)),
        as_alice(Step(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": True},
                      version=1)),
        as_alice(Step(DESCRIBE_ACLS, acl_filter(None), version=3)),
        as_alice(Step(FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [Name("g"),
                                                                             Name("other")]},
                      version=4)),
        as_alice(Step(FIND_COORDINATOR, {"key_type": 1, "coordinator_keys": [Name("txn")]},
                      version=4)),
        as_alice(Step(JOIN_GROUP, {
            "group_id": Name("other"), "session_timeout": 30_000, "rebalance_timeout": 30_000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}, version=5)),
        as_alice(Step(OFFSET_FETCH, {"groups": [{"group_id": Name("g"), "member_id": None,
                                                 "member_epoch": -1, "topics": [{
                                                     "name": Name("secret"),
                                                     "partition_indexes": [0]}]}],
                                     "require_stable": False}, version=9)),
        as_alice(Step(INIT_PRODUCER_ID, {"transactional_id": Name("txn"),
                                         "transaction_timeout": 60_000, "producer_id": -1,
                                         "producer_epoch": -1}, version=5)),
        as_alice(Step(INIT_PRODUCER_ID, {"transactional_id": None,
                                         "transaction_timeout": 60_000, "producer_id": -1,
                                         "producer_epoch": -1}, version=5)),
    ), versions=(12, 12)),
]
