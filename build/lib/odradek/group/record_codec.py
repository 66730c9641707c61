"""The binary layout of the group coordinator's records in `__consumer_offsets`, as Apache
Kafka writes them (group-coordinator/src/main/resources/common/message/*.json, framed as in
CoordinatorRecordSerde).

A key is an int16 record type followed by the key struct, always non-flexible. A value is an
int16 version followed by the value struct; a null value is a tombstone. Flexible versions use
compact strings, arrays and bytes and end every struct with tagged fields: we skip them on
reading and write none, which is Kafka's encoding of their defaults (OffsetCommitValue's
TopicId, ConsumerGroupMetadataValue's MetadataHash, ConsumerGroupMemberMetadataValue's
ClassicMemberMetadata).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

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
    MemberMetadata,
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
    ShareTopicInfo,
    TopicMetadata,
    TopicPartitions,
    TopicPartitionsInfo,
)
from odradek.protocol.coordinator_serde import (
    RecordFormatError,
    RecordReader,
    RecordWriter,
    UnknownRecordType,
)

T = TypeVar("T")


# Values. Each reader and writer takes the version, which the caller has read or chosen.


def _read_offset_commit(r: RecordReader, version: int) -> OffsetCommitValue:
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    r.end_struct()
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _write_offset_commit(w: RecordWriter, version: int, v: OffsetCommitValue) -> None:
    w.int64(v.offset)
    if version >= 3:
        w.int32(v.leader_epoch)
    w.string(v.metadata)
    w.int64(v.commit_timestamp)
    if version == 1:
        w.int64(v.expire_timestamp)
    w.end_struct()


def _read_member(r: RecordReader, version: int) -> MemberMetadata:
    member_id = r.string()
    group_instance_id = r.nullable_string() if version >= 3 else None
    client_id = r.string()
    client_host = r.string()
    rebalance_timeout = r.int32() if version >= 1 else -1
    member = MemberMetadata(
        member_id, group_instance_id, client_id, client_host, rebalance_timeout,
        session_timeout=r.int32(), subscription=r.bytes_(), assignment=r.bytes_(),
    )
    r.end_struct()
    return member


def _read_group_metadata(r: RecordReader, version: int) -> GroupMetadataValue:
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp = r.int64() if version >= 2 else -1
    members = r.array(lambda: _read_member(r, version))
    r.end_struct()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, members
    )


def _write_group_metadata(w: RecordWriter, version: int, v: GroupMetadataValue) -> None:
    def member(m: MemberMetadata) -> None:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.end_struct()

    w.string(v.protocol_type)
    w.int32(v.generation)
    w.string(v.protocol)
    w.string(v.leader)
    if version >= 2:
        w.int64(v.current_state_timestamp)
    w.array(v.members, member)
    w.end_struct()


def _read_epoch(r: RecordReader, _version: int) -> ConsumerGroupMetadataValue:
    value = ConsumerGroupMetadataValue(epoch=r.int32())
    r.end_struct()
    return value


def _write_epoch(w: RecordWriter, _version: int, v: ConsumerGroupMetadataValue) -> None:
    w.int32(v.epoch)
    w.end_struct()


def _read_topic_metadata(r: RecordReader) -> TopicMetadata:
    def partition_racks() -> None:
        r.int32()
        r.array(r.string)
        r.end_struct()

    topic = TopicMetadata(topic_id=r.uuid(), topic_name=r.string(), num_partitions=r.int32())
    r.array(partition_racks)
    r.end_struct()
    return topic


def _read_partition_metadata(r: RecordReader, _version: int) -> ConsumerGroupPartitionMetadataValue:
    value = ConsumerGroupPartitionMetadataValue(topics=r.array(lambda: _read_topic_metadata(r)))
    r.end_struct()
    return value


def _write_partition_metadata(
    w: RecordWriter, _version: int, v: ConsumerGroupPartitionMetadataValue
) -> None:
    def topic(t: TopicMetadata) -> None:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.int32(t.num_partitions)
        w.array((), w.int32)  # PartitionMetadata: deprecated, Kafka 4.0 stores it empty.
        w.end_struct()

    w.array(v.topics, topic)
    w.end_struct()


def _read_member_metadata(r: RecordReader, _version: int) -> ConsumerGroupMemberMetadataValue:
    instance_id = r.nullable_string()
    rack_id = r.nullable_string()
    client_id = r.string()
    client_host = r.string()
    subscribed_topic_names = r.array(r.string)
    subscribed_topic_regex = r.nullable_string()
    rebalance_timeout_ms = r.int32()
    server_assignor = r.nullable_string()
    r.end_struct()
    return ConsumerGroupMemberMetadataValue(
        instance_id, rack_id, client_id, client_host, subscribed_topic_names,
        subscribed_topic_regex, server_assignor, rebalance_timeout_ms,
    )


def _write_member_metadata(
    w: RecordWriter, _version: int, v: ConsumerGroupMemberMetadataValue
) -> None:
    w.string(v.instance_id)
    w.string(v.rack_id)
    w.string(v.client_id)
    w.string(v.client_host)
    w.array(v.subscribed_topic_names, w.string)
    w.string(v.subscribed_topic_regex)
    w.int32(v.rebalance_timeout_ms)
    w.string(v.server_assignor)
    w.end_struct()


def _read_topic_partitions(r: RecordReader) -> tuple[TopicPartitions, ...]:
    def one() -> TopicPartitions:
        value = TopicPartitions(topic_id=r.uuid(), partitions=r.array(r.int32))
        r.end_struct()
        return value

    return r.array(one)


def _write_topic_partitions(w: RecordWriter, items: Sequence[TopicPartitions]) -> None:
    def one(tp: TopicPartitions) -> None:
        w.uuid(tp.topic_id)
        w.array(tp.partitions, w.int32)
        w.end_struct()

    w.array(items, one)


def _read_target_member(r: RecordReader, _version: int) -> ConsumerGroupTargetAssignmentMemberValue:
    value = ConsumerGroupTargetAssignmentMemberValue(topic_partitions=_read_topic_partitions(r))
    r.end_struct()
    return value


def _write_target_member(
    w: RecordWriter, _version: int, v: ConsumerGroupTargetAssignmentMemberValue
) -> None:
    _write_topic_partitions(w, v.topic_partitions)
    w.end_struct()


def _read_target_epoch(
    r: RecordReader, _version: int
) -> ConsumerGroupTargetAssignmentMetadataValue:
    value = ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=r.int32())
    r.end_struct()
    return value


def _write_target_epoch(
    w: RecordWriter, _version: int, v: ConsumerGroupTargetAssignmentMetadataValue
) -> None:
    w.int32(v.assignment_epoch)
    w.end_struct()


def _read_current_assignment(
    r: RecordReader, _version: int
) -> ConsumerGroupCurrentMemberAssignmentValue:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=r.int32(),
        previous_member_epoch=r.int32(),
        state=r.int8(),
        assigned_partitions=_read_topic_partitions(r),
        partitions_pending_revocation=_read_topic_partitions(r),
    )
    r.end_struct()
    return value


def _write_current_assignment(
    w: RecordWriter, _version: int, v: ConsumerGroupCurrentMemberAssignmentValue
) -> None:
    w.int32(v.member_epoch)
    w.int32(v.previous_member_epoch)
    w.int8(v.state)
    _write_topic_partitions(w, v.assigned_partitions)
    _write_topic_partitions(w, v.partitions_pending_revocation)
    w.end_struct()


def _read_regex(r: RecordReader, _version: int) -> ConsumerGroupRegularExpressionValue:
    value = ConsumerGroupRegularExpressionValue(
        topics=r.array(r.string), version=r.int64(), timestamp=r.int64()
    )
    r.end_struct()
    return value


def _write_regex(w: RecordWriter, _version: int, v: ConsumerGroupRegularExpressionValue) -> None:
    w.array(v.topics, w.string)
    w.int64(v.version)
    w.int64(v.timestamp)
    w.end_struct()


# Share groups (KIP-932): all flexible, version 0.


def _read_share_epoch(r: RecordReader, _version: int) -> ShareGroupMetadataValue:
    value = ShareGroupMetadataValue(epoch=r.int32(), metadata_hash=r.int64())
    r.end_struct()
    return value


def _write_share_epoch(w: RecordWriter, _version: int, v: ShareGroupMetadataValue) -> None:
    w.int32(v.epoch)
    w.int64(v.metadata_hash)
    w.end_struct()


def _read_share_member(r: RecordReader, _version: int) -> ShareGroupMemberMetadataValue:
    value = ShareGroupMemberMetadataValue(
        rack_id=r.nullable_string(), client_id=r.string(), client_host=r.string(),
        subscribed_topic_names=r.array(r.string),
    )
    r.end_struct()
    return value


def _write_share_member(w: RecordWriter, _version: int, v: ShareGroupMemberMetadataValue) -> None:
    w.string(v.rack_id)
    w.string(v.client_id)
    w.string(v.client_host)
    w.array(v.subscribed_topic_names, w.string)
    w.end_struct()


_ASSIGNMENT_TIMESTAMP_TAG = 0


def _read_share_target_epoch(
    r: RecordReader, _version: int
) -> ShareGroupTargetAssignmentMetadataValue:
    epoch = r.int32()
    tagged = r.tagged_fields()
    raw = tagged.get(_ASSIGNMENT_TIMESTAMP_TAG)
    timestamp = 0 if raw is None else struct.unpack(">q", raw)[0]
    return ShareGroupTargetAssignmentMetadataValue(epoch, timestamp)


def _write_share_target_epoch(
    w: RecordWriter, _version: int, v: ShareGroupTargetAssignmentMetadataValue
) -> None:
    w.int32(v.assignment_epoch)
    tagged = [] if v.assignment_timestamp == 0 else [
        (_ASSIGNMENT_TIMESTAMP_TAG, struct.pack(">q", v.assignment_timestamp))]
    w.end_struct(tagged)


def _read_share_target_member(
    r: RecordReader, _version: int
) -> ShareGroupTargetAssignmentMemberValue:
    value = ShareGroupTargetAssignmentMemberValue(topic_partitions=_read_topic_partitions(r))
    r.end_struct()
    return value


def _write_share_target_member(
    w: RecordWriter, _version: int, v: ShareGroupTargetAssignmentMemberValue
) -> None:
    _write_topic_partitions(w, v.topic_partitions)
    w.end_struct()


def _read_share_current(r: RecordReader, _version: int) -> ShareGroupCurrentMemberAssignmentValue:
    value = ShareGroupCurrentMemberAssignmentValue(
        member_epoch=r.int32(), previous_member_epoch=r.int32(), state=r.int8(),
        assigned_partitions=_read_topic_partitions(r),
    )
    r.end_struct()
    return value


def _write_share_current(
    w: RecordWriter, _version: int, v: ShareGroupCurrentMemberAssignmentValue
) -> None:
    w.int32(v.member_epoch)
    w.int32(v.previous_member_epoch)
    w.int8(v.state)
    _write_topic_partitions(w, v.assigned_partitions)
    w.end_struct()


def _read_partitions_info(r: RecordReader) -> TopicPartitionsInfo:
    value = TopicPartitionsInfo(topic_id=r.uuid(), topic_name=r.string(),
                                partitions=r.array(r.int32))
    r.end_struct()
    return value


def _read_topic_info(r: RecordReader) -> ShareTopicInfo:
    value = ShareTopicInfo(topic_id=r.uuid(), topic_name=r.string())
    r.end_struct()
    return value


def _read_state_partitions(
    r: RecordReader, _version: int
) -> ShareGroupStatePartitionMetadataValue:
    value = ShareGroupStatePartitionMetadataValue(
        initializing_topics=r.array(lambda: _read_partitions_info(r)),
        initialized_topics=r.array(lambda: _read_partitions_info(r)),
        deleting_topics=r.array(lambda: _read_topic_info(r)),
    )
    r.end_struct()
    return value


def _write_state_partitions(
    w: RecordWriter, _version: int, v: ShareGroupStatePartitionMetadataValue
) -> None:
    def info(t: TopicPartitionsInfo) -> None:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.array(t.partitions, w.int32)
        w.end_struct()

    def deleting(t: ShareTopicInfo) -> None:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.end_struct()

    w.array(v.initializing_topics, info)
    w.array(v.initialized_topics, info)
    w.array(v.deleting_topics, deleting)
    w.end_struct()


@dataclass(frozen=True, slots=True)
class _Layout:
    record_type: int
    key: type
    value: type
    read_key: Callable[[RecordReader], RecordKey]
    read_value: Callable[[RecordReader, int], RecordValue]
    write_value: Callable[[RecordWriter, int, Any], None]
    last_version: int
    first_flexible: int
    written_version: int


_OFFSET_COMMIT = _Layout(
    1, OffsetCommitKey, OffsetCommitValue,
    lambda r: OffsetCommitKey(r.string(), r.string(), r.int32()),
    _read_offset_commit, _write_offset_commit, last_version=4, first_flexible=4,
    written_version=3,
)
_LAYOUTS = (
    _OFFSET_COMMIT,
    _Layout(
        2, GroupMetadataKey, GroupMetadataValue, lambda r: GroupMetadataKey(r.string()),
        _read_group_metadata, _write_group_metadata, 4, 4, 3,
    ),
    _Layout(
        3, ConsumerGroupMetadataKey, ConsumerGroupMetadataValue,
        lambda r: ConsumerGroupMetadataKey(r.string()), _read_epoch, _write_epoch, 0, 0, 0,
    ),
    _Layout(
        4, ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue,
        lambda r: ConsumerGroupPartitionMetadataKey(r.string()),
        _read_partition_metadata, _write_partition_metadata, 0, 0, 0,
    ),
    _Layout(
        5, ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue,
        lambda r: ConsumerGroupMemberMetadataKey(r.string(), r.string()),
        _read_member_metadata, _write_member_metadata, 0, 0, 0,
    ),
    _Layout(
        6, ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
        lambda r: ConsumerGroupTargetAssignmentMetadataKey(r.string()),
        _read_target_epoch, _write_target_epoch, 0, 0, 0,
    ),
    _Layout(
        7, ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue,
        lambda r: ConsumerGroupTargetAssignmentMemberKey(r.string(), r.string()),
        _read_target_member, _write_target_member, 0, 0, 0,
    ),
    _Layout(
        8, ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue,
        lambda r: ConsumerGroupCurrentMemberAssignmentKey(r.string(), r.string()),
        _read_current_assignment, _write_current_assignment, 0, 0, 0,
    ),
    _Layout(
        16, ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue,
        lambda r: ConsumerGroupRegularExpressionKey(r.string(), r.string()),
        _read_regex, _write_regex, 0, 0, 0,
    ),
    _Layout(
        10, ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue,
        lambda r: ShareGroupMemberMetadataKey(r.string(), r.string()),
        _read_share_member, _write_share_member, 0, 0, 0,
    ),
    _Layout(
        11, ShareGroupMetadataKey, ShareGroupMetadataValue,
        lambda r: ShareGroupMetadataKey(r.string()), _read_share_epoch, _write_share_epoch,
        0, 0, 0,
    ),
    _Layout(
        12, ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue,
        lambda r: ShareGroupTargetAssignmentMetadataKey(r.string()),
        _read_share_target_epoch, _write_share_target_epoch, 0, 0, 0,
    ),
    _Layout(
        13, ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue,
        lambda r: ShareGroupTargetAssignmentMemberKey(r.string(), r.string()),
        _read_share_target_member, _write_share_target_member, 0, 0, 0,
    ),
    _Layout(
        14, ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue,
        lambda r: ShareGroupCurrentMemberAssignmentKey(r.string(), r.string()),
        _read_share_current, _write_share_current, 0, 0, 0,
    ),
    _Layout(
        15, ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue,
        lambda r: ShareGroupStatePartitionMetadataKey(r.string()),
        _read_state_partitions, _write_state_partitions, 0, 0, 0,
    ),
)
_BY_KEY = {layout.key: layout for layout in _LAYOUTS}
# Record type 0 is the offset commit key of Kafka 0.8.2, laid out as type 1.
_BY_TYPE = {0: _OFFSET_COMMIT} | {layout.record_type: layout for layout in _LAYOUTS}


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
    try:
        w = RecordWriter(flexible=False)
        w.int16(layout.record_type)
        for field in fields(key):
            part = getattr(key, field.name)
            if isinstance(part, int):
                w.int32(part)
            else:
                w.string(part)
        if value is None:
            return w.getvalue(), None
        version = layout.written_version
        if isinstance(value, OffsetCommitValue) and value.expire_timestamp != -1:
            version = 1
        v = RecordWriter(flexible=version >= layout.first_flexible)
        v.int16(version)
        layout.write_value(v, version, value)
    except struct.error as exc:
        raise ValueError(f"record field out of range: {exc}") from None
    return w.getvalue(), v.getvalue()


def decode_record(key: bytes, value: bytes | None) -> Record:
    """The record in these key and value bytes, of any version Kafka can have written.

    Raises UnknownRecordType for a record type we do not know, RecordFormatError for bytes
    that do not hold exactly one key (or value) of its type."""
    r = RecordReader(key)
    record_type = r.int16()
    layout = _BY_TYPE.get(record_type)
    if layout is None:
        raise UnknownRecordType(record_type)
    decoded_key = layout.read_key(r)
    r.end()
    if value is None:
        return decoded_key, None
    r = RecordReader(value)
    version = r.int16()
    if not 0 <= version <= layout.last_version:
        raise RecordFormatError(f"{layout.value.__name__} has no version {version}")
    r.flexible = version >= layout.first_flexible
    decoded_value = layout.read_value(r, version)
    r.end()
    return decoded_key, decoded_value
