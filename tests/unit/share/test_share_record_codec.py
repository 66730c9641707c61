"""The share coordinator's records in Kafka's `__share_group_state` layout: bytes built by
hand from Kafka 4.3's Share*.json schemas, round trips of every record, malformed input."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol.coordinator_serde import RecordFormatError, UnknownRecordType
from odradek.share.record_codec import decode, encode
from odradek.share.records import (
    SharePartitionKey,
    ShareRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)
from tests.unit.packing import i8, i16, i32, i64

TOPIC = "5f6c2a4e-8a1b-4c3d-9e0f-112233445566"
KEY = SharePartitionKey("grp", TOPIC, 3)
BATCHES = (StateBatch(10, 14, 2, 1), StateBatch(15, 15, 0, 3))


# ShareSnapshotKey / ShareUpdateKey v0 ("flexibleVersions": "none"): GroupId string
# (int16 length), TopicId uuid, Partition int32; prefixed by the int16 apiKey.
KEY_BODY = i16(3) + b"grp" + uuid.UUID(TOPIC).bytes + i32(3)
# StateBatch (flexible): FirstOffset int64, LastOffset int64, DeliveryState int8,
# DeliveryCount int16, then its empty tagged fields.
BATCH_BYTES = (bytes([3])  # compact array of 2
               + i64(10) + i64(14) + i8(2) + i16(1) + b"\x00"
               + i64(15) + i64(15) + i8(0) + i16(3) + b"\x00")


def test_snapshot_bytes_as_the_json_schema_lays_them_out() -> None:
    value = ShareSnapshotValue(snapshot_epoch=7, state_epoch=2, leader_epoch=5, start_offset=10,
                               create_timestamp=1700000000000, write_timestamp=1700000000123,
                               state_batches=BATCHES, delivery_complete_count=5)
    key, data = encode((ShareSnapshotKey(KEY), value))
    assert key == i16(0) + KEY_BODY
    assert data == (i16(0)  # value version
                    + i32(7) + i32(2) + i32(5) + i64(10)  # SnapshotEpoch .. StartOffset
                    + i64(1700000000000) + i64(1700000000123)  # Create/WriteTimestamp
                    + BATCH_BYTES
                    + bytes([1, 0, 4]) + i32(5))  # tagged: DeliveryCompleteCount, tag 0
    assert decode(key, data) == (ShareSnapshotKey(KEY), value)


def test_update_bytes_as_the_json_schema_lays_them_out() -> None:
    value = ShareUpdateValue(snapshot_epoch=7, leader_epoch=5, start_offset=-1,
                             state_batches=BATCHES)
    key, data = encode((ShareUpdateKey(KEY), value))
    assert key == i16(1) + KEY_BODY
    # No DeliveryCompleteCount tag when it is the default -1.
    assert data == i16(0) + i32(7) + i32(5) + i64(-1) + BATCH_BYTES + b"\x00"
    assert decode(key, data) == (ShareUpdateKey(KEY), value)


def test_tombstone() -> None:
    key, data = encode((ShareSnapshotKey(KEY), None))
    assert data is None
    assert decode(key, None) == (ShareSnapshotKey(KEY), None)
    with pytest.raises(RecordFormatError):
        decode(i16(1) + KEY_BODY, None)


def test_malformed() -> None:
    key, data = encode((ShareUpdateKey(KEY), ShareUpdateValue(0, 0, 0, ())))
    assert data is not None
    with pytest.raises(UnknownRecordType):
        decode(i16(2) + KEY_BODY, data)
    with pytest.raises(RecordFormatError):
        decode(key + b"\x00", data)
    with pytest.raises(RecordFormatError):
        decode(key, data[:-1])
    with pytest.raises(RecordFormatError):
        decode(key, i16(1) + data[2:])
    with pytest.raises(RecordFormatError):
        decode(key, data[:-1] + bytes([1, 0, 2]) + i16(1))  # a 2-byte DeliveryCompleteCount


ints32 = st.integers(-(2**31), 2**31 - 1)
ints64 = st.integers(-(2**63), 2**63 - 1)
batches = st.lists(st.builds(StateBatch, ints64, ints64, st.sampled_from([0, 2, 4]),
                             st.integers(-(2**15), 2**15 - 1))).map(tuple)
keys = st.builds(SharePartitionKey, st.text(max_size=20),
                 st.uuids().map(str), st.integers(0, 2**31 - 1))
records: st.SearchStrategy[ShareRecord] = st.one_of(
    st.tuples(keys.map(ShareSnapshotKey),
              st.none() | st.builds(ShareSnapshotValue, ints32, ints32, ints32, ints64, ints64,
                                    ints64, batches,
                                    ints32)),
    st.tuples(keys.map(ShareUpdateKey),
              st.builds(ShareUpdateValue, ints32, ints32, ints64,
                        batches, ints32)),
)


@given(records)
def test_round_trip(record: ShareRecord) -> None:
    assert decode(*encode(record)) == record
