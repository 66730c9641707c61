"""The bytes of `__share_group_state` records, laid out by the schemas generated from Kafka's
Share*.json (`record_schema.py`), as its CoordinatorRecordSerde writes them.

A key is the int16 record type (0 ShareSnapshot, 1 ShareUpdate: the schemas' apiKey, as
MessageUtil.toCoordinatorTypePrefixedBytes writes it) and the key struct at version 0,
non-flexible: GroupId (int16-length string), TopicId (16 bytes), Partition (int32). A value
is its int16 version (0) and the value struct, flexible: compact array lengths, each
StateBatch closed by its tagged fields, and the value's own tagged fields last, where
DeliveryCompleteCount (tag 0) appears only when it is not -1. A ShareSnapshot key with no
value is a tombstone.
"""

from __future__ import annotations

from odradek.protocol.coordinator_serde import RecordFormatError
from odradek.protocol.message_schema import (
    build,
    by_record_type,
    read_key,
    read_versioned,
    struct_of,
    write_key,
    write_versioned,
)
from odradek.share.record_schema import (
    SHARE_SNAPSHOT_KEY,
    SHARE_SNAPSHOT_VALUE,
    SHARE_UPDATE_KEY,
    SHARE_UPDATE_VALUE,
)
from odradek.share.records import (
    SharePartitionKey,
    ShareRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)

VALUE_VERSION = 0
_KEYS = by_record_type(SHARE_SNAPSHOT_KEY, SHARE_UPDATE_KEY)


def encode(record: ShareRecord) -> tuple[bytes, bytes | None]:
    """The key and value bytes of a record (None: a tombstone)."""
    key, value = record
    snapshot = isinstance(key, ShareSnapshotKey)
    key_bytes = write_key(SHARE_SNAPSHOT_KEY if snapshot else SHARE_UPDATE_KEY,
                          struct_of(key.key))
    if value is None:
        return key_bytes, None
    schema = SHARE_SNAPSHOT_VALUE if snapshot else SHARE_UPDATE_VALUE
    return key_bytes, write_versioned(schema, VALUE_VERSION, struct_of(value))


def decode(key: bytes, value: bytes | None) -> ShareRecord:
    """The record in these bytes. Raises UnknownRecordType for a record type other than 0
    and 1, RecordFormatError for bytes Kafka could not have written (truncated, unknown
    version, trailing bytes, an update tombstone)."""
    schema, fields = read_key(_KEYS, key)
    partition_key = build(SharePartitionKey, fields)
    if schema is SHARE_SNAPSHOT_KEY:
        if value is None:
            return ShareSnapshotKey(partition_key), None
        _, found = read_versioned(SHARE_SNAPSHOT_VALUE, value)
        return ShareSnapshotKey(partition_key), build(ShareSnapshotValue, found)
    if value is None:
        raise RecordFormatError("a ShareUpdate record has no tombstone")
    _, found = read_versioned(SHARE_UPDATE_VALUE, value)
    return ShareUpdateKey(partition_key), build(ShareUpdateValue, found)
