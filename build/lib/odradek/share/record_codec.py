"""The bytes of `__share_group_state` records, as Kafka's generated message classes and its
CoordinatorRecordSerde write them.

A key is the int16 record type (0 ShareSnapshot, 1 ShareUpdate: the schemas' apiKey, as
MessageUtil.toCoordinatorTypePrefixedBytes writes it) and the key struct at version 0,
non-flexible: GroupId (int16-length string), TopicId (16 bytes), Partition (int32). A value
is its int16 version (0) and the value struct, flexible: compact array lengths, each
StateBatch closed by its tagged fields, and the value's own tagged fields last, where
DeliveryCompleteCount (tag 0) appears only when it is not -1. A ShareSnapshot key with no
value is a tombstone.
"""

from __future__ import annotations

import struct

from odradek.protocol.coordinator_serde import (
    RecordFormatError,
    RecordReader,
    RecordWriter,
    UnknownRecordType,
)
from odradek.share.records import (
    SharePartitionKey,
    ShareRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)

SNAPSHOT_TYPE = 0
UPDATE_TYPE = 1
VALUE_VERSION = 0
_DELIVERY_COMPLETE_COUNT_TAG = 0
_I32 = struct.Struct(">i")


def encode(record: ShareRecord) -> tuple[bytes, bytes | None]:
    """The key and value bytes of a record (None: a tombstone)."""
    key, value = record
    try:
        w = RecordWriter(flexible=False)
        w.int16(SNAPSHOT_TYPE if isinstance(key, ShareSnapshotKey) else UPDATE_TYPE)
        w.string(key.key.group_id)
        w.uuid(key.key.topic_id)
        w.int32(key.key.partition)
        return w.getvalue(), None if value is None else _encode_value(value)
    except struct.error as exc:
        raise ValueError(f"record field out of range: {exc}") from None


def _encode_value(value: ShareSnapshotValue | ShareUpdateValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.int16(VALUE_VERSION)
    w.int32(value.snapshot_epoch)
    if isinstance(value, ShareSnapshotValue):
        w.int32(value.state_epoch)
    w.int32(value.leader_epoch)
    w.int64(value.start_offset)
    if isinstance(value, ShareSnapshotValue):
        w.int64(value.create_timestamp)
        w.int64(value.write_timestamp)

    def batch(b: StateBatch) -> None:
        w.int64(b.first_offset)
        w.int64(b.last_offset)
        w.int8(b.delivery_state)
        w.int16(b.delivery_count)
        w.end_struct()

    w.array(value.state_batches, batch)
    tagged = []
    if value.delivery_complete_count != -1:
        tagged.append((_DELIVERY_COMPLETE_COUNT_TAG, _I32.pack(value.delivery_complete_count)))
    w.end_struct(tagged)
    return w.getvalue()


def decode(key: bytes, value: bytes | None) -> ShareRecord:
    """The record in these bytes. Raises UnknownRecordType for a record type other than 0
    and 1, RecordFormatError for bytes Kafka could not have written (truncated, unknown
    version, trailing bytes, an update tombstone)."""
    r = RecordReader(key)
    record_type = r.int16()
    if record_type not in (SNAPSHOT_TYPE, UPDATE_TYPE):
        raise UnknownRecordType(record_type)
    partition_key = SharePartitionKey(r.string(), r.uuid(), r.int32())
    r.end()
    if record_type == SNAPSHOT_TYPE:
        snapshot = None if value is None else _decode_value(value, snapshot=True)
        assert snapshot is None or isinstance(snapshot, ShareSnapshotValue)
        return ShareSnapshotKey(partition_key), snapshot
    if value is None:
        raise RecordFormatError("a ShareUpdate record has no tombstone")
    update = _decode_value(value, snapshot=False)
    assert isinstance(update, ShareUpdateValue)
    return ShareUpdateKey(partition_key), update


def _decode_value(data: bytes, snapshot: bool) -> ShareSnapshotValue | ShareUpdateValue:
    r = RecordReader(data)
    version = r.int16()
    if version != VALUE_VERSION:
        name = "ShareSnapshotValue" if snapshot else "ShareUpdateValue"
        raise RecordFormatError(f"{name} has no version {version}")
    r.flexible = True
    snapshot_epoch = r.int32()
    state_epoch = r.int32() if snapshot else 0
    leader_epoch = r.int32()
    start_offset = r.int64()
    create_timestamp, write_timestamp = (r.int64(), r.int64()) if snapshot else (0, 0)

    def batch() -> StateBatch:
        found = StateBatch(r.int64(), r.int64(), r.int8(), r.int16())
        r.end_struct()
        return found

    batches = r.array(batch)
    tagged = r.tagged_fields()
    r.end()
    count = tagged.get(_DELIVERY_COMPLETE_COUNT_TAG)
    if count is not None and len(count) != _I32.size:
        raise RecordFormatError(f"DeliveryCompleteCount has {len(count)} bytes")
    complete = -1 if count is None else _I32.unpack(count)[0]
    if snapshot:
        return ShareSnapshotValue(snapshot_epoch, state_epoch, leader_epoch, start_offset,
                                  create_timestamp, write_timestamp, batches, complete)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, batches, complete)
