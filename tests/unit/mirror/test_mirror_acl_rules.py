"""MirrorSourceConnector's topic ACL rules: which source bindings a flow creates on the
target, and as what."""

from __future__ import annotations

from odradek.mirror.acl_rules import should_replicate_acl, target_acl_binding, topic_acls_to_sync
from odradek.mirror.config import parse_mirror_config
from odradek.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

Op, Allow, Deny = AclOperation, AclPermissionType.ALLOW, AclPermissionType.DENY


def flow(**settings: str):
    return parse_mirror_config({"clusters": "east, west", "east.bootstrap.servers": "h:1",
                                "west.bootstrap.servers": "h:2", "east->west.enabled": "true",
                                **settings}).flow("east", "west")


def topic(name: str, operation: AclOperation = Op.READ,
          permission: AclPermissionType = Allow, pattern: PatternType = PatternType.LITERAL,
          kind: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(kind, name, pattern, "User:alice", "*", operation, permission)


def test_a_literal_topic_acl_is_renamed_by_the_replication_policy() -> None:
    assert topic_acls_to_sync(flow(), [topic("orders", Op.DESCRIBE)]) == [
        topic("east.orders", Op.DESCRIBE)]
    identity = flow(**{"replication.policy.class": "IdentityReplicationPolicy"})
    assert topic_acls_to_sync(identity, [topic("orders")]) == [topic("orders")]
    dashes = flow(**{"replication.policy.separator": "__"})
    assert topic_acls_to_sync(dashes, [topic("orders")]) == [topic("east__orders")]


def test_allow_write_is_not_synced_and_deny_write_is() -> None:
    assert not should_replicate_acl(topic("orders", Op.WRITE))
    assert should_replicate_acl(topic("orders", Op.WRITE, Deny))
    assert topic_acls_to_sync(flow(), [topic("orders", Op.WRITE),
                                       topic("orders", Op.WRITE, Deny)]) == [
        topic("east.orders", Op.WRITE, Deny)]


def test_allow_all_becomes_read_and_deny_all_stays() -> None:
    assert target_acl_binding(flow(), topic("orders", Op.ALL)) == topic("east.orders")
    assert target_acl_binding(flow(), topic("orders", Op.ALL, Deny)) == topic(
        "east.orders", Op.ALL, Deny)


def test_prefixed_and_non_topic_acls_are_not_synced() -> None:
    assert topic_acls_to_sync(flow(), [
        topic("team.", pattern=PatternType.PREFIXED),
        topic("readers", kind=ResourceType.GROUP),
        topic("kafka-cluster", Op.DESCRIBE, kind=ResourceType.CLUSTER)]) == []


def test_only_topics_the_flow_replicates() -> None:
    chosen = flow(topics="orders.*", **{"topics.exclude": "orders-secret"})
    synced = topic_acls_to_sync(chosen, [
        topic("orders"), topic("orders-secret"), topic("payments"), topic("__consumer_offsets"),
        topic("west.orders"), topic("mm2-offsets.west.internal")])
    assert synced == [topic("east.orders")]
    assert topic_acls_to_sync(flow(), [topic("heartbeats")]) == [topic("east.heartbeats")]
