"""ACLs in the metadata log: CreateAcls and DeleteAcls as records (Kafka's
AclControlManager), replayed into the image, kept by snapshots, and JSON round trips."""

from __future__ import annotations

import itertools

from kio.schema.errors import ErrorCode

from odradek.metadata.image import ClusterMetadata, MetadataError
from odradek.metadata.records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    decode_batch,
    encode_batch,
)
from odradek.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

READ_ORDERS = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
WRITE_LOGS = AclBinding(ResourceType.TOPIC, "logs.", PatternType.PREFIXED, "User:bob", "*",
                        AclOperation.WRITE, AclPermissionType.DENY)


def ids() -> itertools.count[int]:
    return itertools.count()


def created(metadata: ClusterMetadata, *acls: AclBinding) -> list[MetadataError | None]:
    counter = ids()
    records, outcomes = metadata.create_acls(acls, lambda: f"acl-{next(counter)}")
    for record in decode_batch(encode_batch(records)):
        metadata.replay(record)
    return outcomes


def test_created_acls_replay_into_the_image_once() -> None:
    metadata = ClusterMetadata()
    assert created(metadata, READ_ORDERS, WRITE_LOGS) == [None, None]
    assert sorted(metadata.acls.values(), key=str) == sorted([READ_ORDERS, WRITE_LOGS], key=str)
    version = metadata.acl_version
    records, outcomes = metadata.create_acls([READ_ORDERS], lambda: "again")
    assert (records, outcomes) == ([], [None])
    assert metadata.acl_version == version


def test_invalid_acls_are_refused_one_by_one() -> None:
    metadata = ClusterMetadata()
    bad = AclBinding(ResourceType.TOPIC, "", PatternType.LITERAL, "User:alice", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    first, second = created(metadata, bad, READ_ORDERS)
    assert isinstance(first, MetadataError) and first.error_code == ErrorCode.invalid_request
    assert second is None
    assert list(metadata.acls.values()) == [READ_ORDERS]


def test_delete_removes_what_each_filter_matches() -> None:
    metadata = ClusterMetadata()
    created(metadata, READ_ORDERS, WRITE_LOGS)
    records, outcomes = metadata.delete_acls([
        AclFilter(ResourceType.TOPIC, "logs.app", PatternType.MATCH),
        AclFilter(principal="User:bob"),
        AclFilter(operation=AclOperation.UNKNOWN),
    ])
    assert outcomes[0] == [WRITE_LOGS] and outcomes[1] == [WRITE_LOGS]
    assert isinstance(outcomes[2], MetadataError)
    assert all(isinstance(r, RemoveAccessControlEntryRecord) for r in records)
    assert len(records) == 1
    for record in records:
        metadata.replay(record)
    assert list(metadata.acls.values()) == [READ_ORDERS]


def test_snapshots_keep_the_acls() -> None:
    metadata = ClusterMetadata()
    created(metadata, READ_ORDERS, WRITE_LOGS)
    image = metadata.to_records()
    assert sum(isinstance(r, AccessControlEntryRecord) for r in image) == 2
    rebuilt = ClusterMetadata()
    for record in image:
        rebuilt.replay(record)
    assert rebuilt.acls == metadata.acls
