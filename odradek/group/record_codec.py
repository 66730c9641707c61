"""The group coordinator's records in `__consumer_offsets`, laid out by the schemas generated
from Kafka's group-coordinator JSON (`record_schema.py`), framed as in CoordinatorRecordSerde.

A key is an int16 record type followed by the key struct at version 0, non-flexible. A value
is an int16 version followed by the value struct; a null value is a tombstone. The records
are the dataclasses of `records.py`, whose fields are named as the definitions' (those they
leave out are written as their defaults, or as `also_written` says, and ignored on reading:
OffsetCommitValue's TopicId, ConsumerGroupMetadataValue's MetadataHash,
ConsumerGroupMemberMetadataValue's ClassicMemberMetadata).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.group.record_schema import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_MEMBER_METADATA_KEY,
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_GROUP_METADATA_KEY,
    CONSUMER_GROUP_METADATA_VALUE,
    CONSUMER_GROUP_PARTITION_METADATA_KEY,
    CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
    CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    LEGACY_OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    SHARE_GROUP_MEMBER_METADATA_KEY,
    SHARE_GROUP_MEMBER_METADATA_VALUE,
    SHARE_GROUP_METADATA_KEY,
    SHARE_GROUP_METADATA_VALUE,
    SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
    SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
)
from odradek.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    RecordKey,
    RecordValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from odradek.protocol.message_schema import (
    Message,
    build,
    by_record_type,
    read_key,
    read_versioned,
    struct_of,
    write_key,
    write_versioned,
)


@dataclass(frozen=True, slots=True)
class _Layout:
    key_schema: Message
    value_schema: Message
    key: type
    value: type
    written_version: int = 0
    also_written: Mapping[str, Any] = field(default_factory=dict)
    """Values of fields the record leaves out that differ from Kafka's defaults."""


_OFFSET_COMMIT = _Layout(OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE, OffsetCommitKey,
                         OffsetCommitValue, written_version=3)
_LAYOUTS = (
    _OFFSET_COMMIT,
    _Layout(GROUP_METADATA_KEY, GROUP_METADATA_VALUE, GroupMetadataKey, GroupMetadataValue,
            written_version=3),
    _Layout(CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE,
            ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    _Layout(CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE,
            ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    # A member of the consumer protocol: ClassicMemberMetadata null, written as such (its
    # default is an empty struct, which Kafka reads as a member of the classic protocol).
    _Layout(CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE,
            ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue,
            also_written={"classic_member_metadata": None}),
    _Layout(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
            ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    _Layout(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    _Layout(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    _Layout(CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
            ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
    _Layout(SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE,
            ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue),
    _Layout(SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE, ShareGroupMetadataKey,
            ShareGroupMetadataValue),
    _Layout(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
            ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue),
    _Layout(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue),
    _Layout(SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue),
    _Layout(SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
            SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
            ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue),
)
_BY_KEY = {layout.key: layout for layout in _LAYOUTS}
_BY_SCHEMA: dict[Message, _Layout] = {layout.key_schema: layout for layout in _LAYOUTS}
# Record type 0 is the offset commit key of Kafka 0.8.2, its value laid out as type 1's.
_BY_SCHEMA[LEGACY_OFFSET_COMMIT_KEY] = _OFFSET_COMMIT
_KEY_SCHEMAS = by_record_type(*_BY_SCHEMA)


def encode_record(key: RecordKey, value: RecordValue | None) -> tuple[bytes, bytes | None]:
    """The key and value bytes Kafka 4.0 writes for this record (None value: tombstone).

    OffsetCommitValue goes out as version 3, or as version 1 when it carries an expire
    timestamp; version 1 has no leader epoch, which then reads back as -1 (as in Kafka, where
    retention and leader epochs never come in the same OffsetCommit request version)."""
    layout = _BY_KEY.get(type(key))
    if layout is None:
        raise TypeError(f"not a group coordinator record key: {key!r}")
    if value is not None and type(value) is not layout.value:
        raise TypeError(f"{type(value).__name__} is not the value of {layout.key.__name__}")
    key_bytes = write_key(layout.key_schema, struct_of(key))
    if value is None:
        return key_bytes, None
    version = layout.written_version
    if isinstance(value, OffsetCommitValue) and value.expire_timestamp != -1:
        version = 1
    return key_bytes, write_versioned(layout.value_schema, version,
                                      {**layout.also_written, **struct_of(value)})


def decode_record(key: bytes, value: bytes | None) -> Record:
    """The record in these key and value bytes, of any version Kafka can have written.

    Raises UnknownRecordType for a record type we do not know, RecordFormatError for bytes
    that do not hold exactly one key (or value) of its type."""
    schema, key_fields = read_key(_KEY_SCHEMAS, key)
    layout = _BY_SCHEMA[schema]
    decoded_key: Any = build(layout.key, key_fields)
    if value is None:
        return decoded_key, None
    _, value_fields = read_versioned(layout.value_schema, value)
    decoded_value: Any = build(layout.value, value_fields)
    return decoded_key, decoded_value
