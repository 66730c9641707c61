"""The group coordinator's records in Kafka's `__consumer_offsets` layout: golden bytes built
by hand from Kafka's JSON schemas, every older value version Kafka can have written, a
round trip for every record type, and malformed input."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.group.record_codec import decode_record, encode_record
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
from odradek.protocol.coordinator_serde import RecordFormatError, UnknownRecordType

TOPIC_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
TOPIC_ID_BYTES = bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f0")
TS = b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"  # int64 1_700_000_000_000
TS_MS = 1_700_000_000_000

# Golden bytes: non-flexible strings are an int16 length then UTF-8, bytes an int32 length.

OFFSET_KEY = OffsetCommitKey(group="grp", topic="topic", partition=3)
OFFSET_KEY_BYTES = (
    b"\x00\x01"  # record type 1: OffsetCommitKey, key struct at version 0
    b"\x00\x03grp"  # group
    b"\x00\x05topic"  # topic
    b"\x00\x00\x00\x03"  # partition: int32
)
OFFSET_VALUE = OffsetCommitValue(offset=42, leader_epoch=7, metadata="m", commit_timestamp=TS_MS)
OFFSET_VALUE_BYTES = (
    b"\x00\x03"  # value version 3: what Kafka writes without an expire timestamp
    b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset: int64 42
    b"\x00\x00\x00\x07"  # leaderEpoch: int32 7 (versions 3+)
    b"\x00\x01m"  # metadata
    + TS  # commitTimestamp: int64
)
OFFSET_VALUE_V1 = OffsetCommitValue(
    offset=42, leader_epoch=-1, metadata="", commit_timestamp=TS_MS,
    expire_timestamp=TS_MS + 1000,
)
OFFSET_VALUE_V1_BYTES = (
    b"\x00\x01"  # value version 1: the only one with an expire timestamp
    b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset
    b"\x00\x00"  # metadata: ""
    + TS  # commitTimestamp
    + b"\x00\x00\x01\x8b\xcf\xe5\x6b\xe8"  # expireTimestamp: int64 1_700_000_001_000
)

GROUP_KEY = GroupMetadataKey(group="grp")
GROUP_KEY_BYTES = (
    b"\x00\x02"  # record type 2: GroupMetadataKey
    b"\x00\x03grp"  # group
)
MEMBER = MemberMetadata(
    member_id="m-1", group_instance_id=None, client_id="c", client_host="/h",
    rebalance_timeout=300_000, session_timeout=45_000, subscription=b"\x01\x02",
    assignment=b"",
)
GROUP_VALUE = GroupMetadataValue(
    protocol_type="consumer", generation=5, protocol="range", leader="m-1",
    current_state_timestamp=TS_MS, members=(MEMBER,),
)
GROUP_VALUE_BYTES = (
    b"\x00\x03"  # value version 3: what Kafka writes
    b"\x00\x08consumer"  # protocolType
    b"\x00\x00\x00\x05"  # generation: int32
    b"\x00\x05range"  # protocol: nullable string
    b"\x00\x03m-1"  # leader: nullable string
    + TS  # currentStateTimestamp: int64 (versions 2+)
    + b"\x00\x00\x00\x01"  # members: int32 count
    b"\x00\x03m-1"  # . memberId
    b"\xff\xff"  # . groupInstanceId: null (versions 3+)
    b"\x00\x01c"  # . clientId
    b"\x00\x02/h"  # . clientHost
    b"\x00\x04\x93\xe0"  # . rebalanceTimeout: int32 300_000 (versions 1+)
    b"\x00\x00\xaf\xc8"  # . sessionTimeout: int32 45_000
    b"\x00\x00\x00\x02\x01\x02"  # . subscription: bytes
    b"\x00\x00\x00\x00"  # . assignment: empty bytes
)

# The KIP-848 values are flexible: compact strings and arrays (unsigned varint length + 1,
# 0 for null) and a tagged-field count closing every struct.

MEMBER_KEY = ConsumerGroupMemberMetadataKey(group_id="grp", member_id="m-1")
MEMBER_KEY_BYTES = b"\x00\x05" b"\x00\x03grp" b"\x00\x03m-1"  # type 5, groupId, memberId
MEMBER_VALUE = ConsumerGroupMemberMetadataValue(
    instance_id=None, rack_id="r1", client_id="c", client_host="/h",
    subscribed_topic_names=("a", "bc"), subscribed_topic_regex=None, server_assignor="uniform",
    rebalance_timeout_ms=300_000,
)
MEMBER_VALUE_BYTES = (
    b"\x00\x00"  # value version 0
    b"\x00"  # instanceId: null
    b"\x03r1"  # rackId
    b"\x02c"  # clientId
    b"\x03/h"  # clientHost
    b"\x03" b"\x02a" b"\x03bc"  # subscribedTopicNames: 2 compact strings
    b"\x00"  # subscribedTopicRegex: null
    b"\x00\x04\x93\xe0"  # rebalanceTimeoutMs: int32
    b"\x08uniform"  # serverAssignor
    b"\x01" b"\x00\x01\x00"  # tag 0, ClassicMemberMetadata: null (its default is not)
)
"""As Kafka 4.3.1's generated ConsumerGroupMemberMetadataValue writes it."""

ASSIGNMENT_KEY = ConsumerGroupCurrentMemberAssignmentKey(group_id="grp", member_id="m-1")
ASSIGNMENT_VALUE = ConsumerGroupCurrentMemberAssignmentValue(
    member_epoch=10, previous_member_epoch=9, state=1,
    assigned_partitions=(TopicPartitions(TOPIC_ID, (0, 2)),), partitions_pending_revocation=(),
)
ASSIGNMENT_VALUE_BYTES = (
    b"\x00\x00"  # value version 0
    b"\x00\x00\x00\x0a"  # memberEpoch: int32
    b"\x00\x00\x00\x09"  # previousMemberEpoch: int32
    b"\x01"  # state: int8
    b"\x02"  # assignedPartitions: 1 element
    + TOPIC_ID_BYTES  # . topicId: uuid, 16 bytes big-endian
    + b"\x03\x00\x00\x00\x00\x00\x00\x00\x02"  # . partitions: [0, 2]
    b"\x00"  # . tagged fields
    b"\x01"  # partitionsPendingRevocation: empty
    b"\x00"  # tagged fields
)


@pytest.mark.parametrize(
    ("key", "value", "key_bytes", "value_bytes"),
    [
        (OFFSET_KEY, OFFSET_VALUE, OFFSET_KEY_BYTES, OFFSET_VALUE_BYTES),
        (OFFSET_KEY, OFFSET_VALUE_V1, OFFSET_KEY_BYTES, OFFSET_VALUE_V1_BYTES),
        (GROUP_KEY, GROUP_VALUE, GROUP_KEY_BYTES, GROUP_VALUE_BYTES),
        (MEMBER_KEY, MEMBER_VALUE, MEMBER_KEY_BYTES, MEMBER_VALUE_BYTES),
        (ASSIGNMENT_KEY, ASSIGNMENT_VALUE, b"\x00\x08\x00\x03grp\x00\x03m-1",
         ASSIGNMENT_VALUE_BYTES),
    ],
)
def test_golden_bytes(key, value, key_bytes, value_bytes) -> None:
    assert encode_record(key, value) == (key_bytes, value_bytes)
    assert decode_record(key_bytes, value_bytes) == (key, value)


def test_tombstones_have_no_value() -> None:
    assert encode_record(GROUP_KEY, None) == (GROUP_KEY_BYTES, None)
    assert decode_record(OFFSET_KEY_BYTES, None) == (OFFSET_KEY, None)


@pytest.mark.parametrize(
    ("key", "value", "version"),
    [
        (ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(3), 0),
        (ConsumerGroupTargetAssignmentMetadataKey("g"),
         ConsumerGroupTargetAssignmentMetadataValue(3), 0),
        (ConsumerGroupRegularExpressionKey("g", "t.*"),
         ConsumerGroupRegularExpressionValue(("t1",), 7, TS_MS), 0),
    ],
)
def test_kip848_values_are_written_at_version_0(key, value, version) -> None:
    _, value_bytes = encode_record(key, value)
    assert value_bytes is not None
    assert value_bytes[:2] == version.to_bytes(2, "big")


# Older versions, and what newer Kafka writes beyond our fields.


def test_decodes_offset_commit_value_v0() -> None:
    value = (
        b"\x00\x00"  # version 0
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset
        b"\x00\x02md"  # metadata
        + TS  # commitTimestamp
    )
    assert decode_record(OFFSET_KEY_BYTES, value) == (
        OFFSET_KEY, OffsetCommitValue(42, -1, "md", TS_MS, -1)
    )


def test_decodes_offset_commit_value_v1_and_v2() -> None:
    assert decode_record(OFFSET_KEY_BYTES, OFFSET_VALUE_V1_BYTES)[1] == OFFSET_VALUE_V1
    value = (
        b"\x00\x02"  # version 2: v1 without expireTimestamp, still no leaderEpoch
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset
        b"\x00\x00"  # metadata
        + TS  # commitTimestamp
    )
    assert decode_record(OFFSET_KEY_BYTES, value)[1] == OffsetCommitValue(42, -1, "", TS_MS)


def test_decodes_offset_commit_value_v4_as_kafka_4_1_writes_it() -> None:
    # A value Kafka 4.1.0 wrote, reported in twmb/franz-go#1105.
    value = bytes.fromhex("0004000000000021d4a8ffffffff010000019964f2d83600")
    assert decode_record(OFFSET_KEY_BYTES, value)[1] == OffsetCommitValue(
        offset=2_217_128, leader_epoch=-1, metadata="", commit_timestamp=1_758_335_260_726
    )


def test_skips_the_topic_id_tag_of_offset_commit_value_v4() -> None:
    value = (
        b"\x00\x04"  # version 4, flexible
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset
        b"\x00\x00\x00\x07"  # leaderEpoch
        b"\x02m"  # metadata: compact string
        + TS  # commitTimestamp
        + b"\x01"  # one tagged field
        b"\x00\x10" + TOPIC_ID_BYTES  # tag 0 (TopicId), 16 bytes
    )
    assert decode_record(OFFSET_KEY_BYTES, value)[1] == OFFSET_VALUE


def test_decodes_the_legacy_offset_commit_key_type_0() -> None:
    key = b"\x00\x00" + OFFSET_KEY_BYTES[2:]
    assert decode_record(key, OFFSET_VALUE_BYTES) == (OFFSET_KEY, OFFSET_VALUE)


V0_MEMBER = (
    b"\x00\x03m-1"  # memberId
    b"\x00\x01c"  # clientId
    b"\x00\x02/h"  # clientHost
    b"\x00\x00\xaf\xc8"  # sessionTimeout
    b"\x00\x00\x00\x01\x09"  # subscription
    b"\x00\x00\x00\x01\x0a"  # assignment
)
V0_GROUP_HEAD = (
    b"\x00\x08consumer"  # protocolType
    b"\x00\x00\x00\x05"  # generation
    b"\xff\xff"  # protocol: null
    b"\xff\xff"  # leader: null
)


def old_member(rebalance_timeout: int) -> MemberMetadata:
    return MemberMetadata("m-1", None, "c", "/h", rebalance_timeout, 45_000, b"\x09", b"\x0a")


def test_decodes_group_metadata_value_v0() -> None:
    value = b"\x00\x00" + V0_GROUP_HEAD + b"\x00\x00\x00\x01" + V0_MEMBER
    assert decode_record(GROUP_KEY_BYTES, value)[1] == GroupMetadataValue(
        "consumer", 5, None, None, -1, (old_member(-1),)
    )


def test_decodes_group_metadata_value_v1_and_v2() -> None:
    member_v1 = V0_MEMBER[:12] + b"\x00\x04\x93\xe0" + V0_MEMBER[12:]  # + rebalanceTimeout
    v1 = b"\x00\x01" + V0_GROUP_HEAD + b"\x00\x00\x00\x01" + member_v1
    v2 = b"\x00\x02" + V0_GROUP_HEAD + TS + b"\x00\x00\x00\x01" + member_v1
    assert decode_record(GROUP_KEY_BYTES, v1)[1] == GroupMetadataValue(
        "consumer", 5, None, None, -1, (old_member(300_000),)
    )
    assert decode_record(GROUP_KEY_BYTES, v2)[1] == GroupMetadataValue(
        "consumer", 5, None, None, TS_MS, (old_member(300_000),)
    )


def test_decodes_flexible_group_metadata_value_v4() -> None:
    value = (
        b"\x00\x04"  # version 4
        b"\x09consumer"  # protocolType: compact string
        b"\x00\x00\x00\x05"  # generation
        b"\x06range"  # protocol
        b"\x00"  # leader: null
        + TS  # currentStateTimestamp
        + b"\x02"  # members: 1
        b"\x04m-1"  # . memberId
        b"\x03i1"  # . groupInstanceId
        b"\x02c"  # . clientId
        b"\x03/h"  # . clientHost
        b"\x00\x04\x93\xe0"  # . rebalanceTimeout
        b"\x00\x00\xaf\xc8"  # . sessionTimeout
        b"\x02\x09"  # . subscription: compact bytes
        b"\x01"  # . assignment: empty compact bytes
        b"\x01\x05\x02\xab\xcd"  # . one unknown tagged field (tag 5, 2 bytes), skipped
        b"\x00"  # tagged fields
    )
    member = MemberMetadata("m-1", "i1", "c", "/h", 300_000, 45_000, b"\x09", b"")
    assert decode_record(GROUP_KEY_BYTES, value)[1] == GroupMetadataValue(
        "consumer", 5, "range", None, TS_MS, (member,)
    )


def test_reads_what_kafka_writes_of_classic_member_metadata_and_partition_racks() -> None:
    """ClassicMemberMetadata (tagged, a nullable struct: its marker byte, then the struct) as
    Kafka 4.3.1's generated ConsumerGroupMemberMetadataValue writes it, and the deprecated
    PartitionMetadata: read, and left out of the records."""
    kafka_bytes = bytes.fromhex(
        "0000" "01" "01" "0263" "032f68" "01" "01" "000493e0" "01"  # empty strings, no topics
        "01" "00" "10"  # one tagged field: tag 0, 16 bytes
        "01" "0000afc8" "02" "0672616e6765" "0200" "00" "00")  # present; 45000; [range]
    assert decode_record(MEMBER_KEY_BYTES, kafka_bytes)[1] == ConsumerGroupMemberMetadataValue(
        instance_id="", rack_id="", client_id="c", client_host="/h", subscribed_topic_names=(),
        subscribed_topic_regex="", server_assignor="", rebalance_timeout_ms=300_000)
    partition_metadata = (
        b"\x00\x00"  # version 0
        b"\x02"  # topics: 1
        + TOPIC_ID_BYTES  # . topicId
        + b"\x02t"  # . topicName
        b"\x00\x00\x00\x02"  # . numPartitions
        b"\x02" b"\x00\x00\x00\x00" b"\x02\x03r1" b"\x00"  # . partitionMetadata: [(0, ["r1"])]
        b"\x00"  # . tagged fields
        b"\x00"  # tagged fields
    )
    assert decode_record(b"\x00\x04\x00\x01g", partition_metadata) == (
        ConsumerGroupPartitionMetadataKey("g"),
        ConsumerGroupPartitionMetadataValue((TopicMetadata(TOPIC_ID, "t", 2),)),
    )


# Round trips.



def signed(bits: int) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


int8, int32, int64 = signed(8), signed(32), signed(64)
names = st.text(max_size=12)
optional_names = st.none() | names
topic_ids = st.uuids().map(str)
partitions = st.lists(int32, max_size=4).map(tuple)
topic_partitions = st.lists(st.builds(TopicPartitions, topic_ids, partitions), max_size=3).map(
    tuple
)
group_and_member = (names, names)

offset_values = st.builds(OffsetCommitValue, int64, int32, names, int64, st.just(-1)) | st.builds(
    OffsetCommitValue, int64, st.just(-1), names, int64, int64.filter(lambda t: t != -1)
)
members = st.builds(
    MemberMetadata, names, optional_names, names, names, int32, int32, st.binary(max_size=6),
    st.binary(max_size=6),
)

RECORD_TYPES = {
    "offset_commit": (st.builds(OffsetCommitKey, names, names, int32), offset_values),
    "group_metadata": (
        st.builds(GroupMetadataKey, names),
        st.builds(
            GroupMetadataValue, names, int32, optional_names, optional_names, int64,
            st.lists(members, max_size=3).map(tuple),
        ),
    ),
    "consumer_group_metadata": (
        st.builds(ConsumerGroupMetadataKey, names),
        st.builds(ConsumerGroupMetadataValue, int32),
    ),
    "consumer_group_partition_metadata": (
        st.builds(ConsumerGroupPartitionMetadataKey, names),
        st.builds(
            ConsumerGroupPartitionMetadataValue,
            st.lists(st.builds(TopicMetadata, topic_ids, names, int32), max_size=3).map(tuple),
        ),
    ),
    "consumer_group_member_metadata": (
        st.builds(ConsumerGroupMemberMetadataKey, *group_and_member),
        st.builds(
            ConsumerGroupMemberMetadataValue, optional_names, optional_names, names, names,
            st.lists(names, max_size=3).map(tuple), optional_names, optional_names, int32,
        ),
    ),
    "consumer_group_target_assignment_member": (
        st.builds(ConsumerGroupTargetAssignmentMemberKey, *group_and_member),
        st.builds(ConsumerGroupTargetAssignmentMemberValue, topic_partitions),
    ),
    "consumer_group_target_assignment_metadata": (
        st.builds(ConsumerGroupTargetAssignmentMetadataKey, names),
        st.builds(ConsumerGroupTargetAssignmentMetadataValue, int32),
    ),
    "consumer_group_current_member_assignment": (
        st.builds(ConsumerGroupCurrentMemberAssignmentKey, *group_and_member),
        st.builds(
            ConsumerGroupCurrentMemberAssignmentValue, int32, int32, int8, topic_partitions,
            topic_partitions,
        ),
    ),
    "consumer_group_regular_expression": (
        st.builds(ConsumerGroupRegularExpressionKey, *group_and_member),
        st.builds(
            ConsumerGroupRegularExpressionValue, st.lists(names, max_size=3).map(tuple), int64,
            int64,
        ),
    ),
    "share_group_metadata": (
        st.builds(ShareGroupMetadataKey, names), st.builds(ShareGroupMetadataValue, int32, int64),
    ),
    "share_group_member_metadata": (
        st.builds(ShareGroupMemberMetadataKey, *group_and_member),
        st.builds(ShareGroupMemberMetadataValue, optional_names, names, names,
                  st.lists(names, max_size=3).map(tuple)),
    ),
    "share_group_target_assignment_metadata": (
        st.builds(ShareGroupTargetAssignmentMetadataKey, names),
        st.builds(ShareGroupTargetAssignmentMetadataValue, int32, int64),
    ),
    "share_group_target_assignment_member": (
        st.builds(ShareGroupTargetAssignmentMemberKey, *group_and_member),
        st.builds(ShareGroupTargetAssignmentMemberValue, topic_partitions),
    ),
    "share_group_current_member_assignment": (
        st.builds(ShareGroupCurrentMemberAssignmentKey, *group_and_member),
        st.builds(ShareGroupCurrentMemberAssignmentValue, int32, int32, int8, topic_partitions),
    ),
    "share_group_state_partition_metadata": (
        st.builds(ShareGroupStatePartitionMetadataKey, names),
        st.builds(
            ShareGroupStatePartitionMetadataValue,
            st.lists(st.builds(TopicPartitionsInfo, topic_ids, names, partitions),
                     max_size=2).map(tuple),
            st.lists(st.builds(TopicPartitionsInfo, topic_ids, names, partitions),
                     max_size=2).map(tuple),
            st.lists(st.builds(ShareTopicInfo, topic_ids, names), max_size=2).map(tuple),
        ),
    ),
}
ANY_RECORD = st.one_of(
    *(st.tuples(keys, st.none() | values) for keys, values in RECORD_TYPES.values())
)


# Share groups: the bytes Kafka 4.3.1's generated classes (kafka-group-coordinator, e.g.
# ShareGroupMetadataValue.write at version 0) write for the same values, behind the int16
# record type (key) and version (value) that CoordinatorRecordSerde puts in front.
SHARE_TOPIC_ID = "00000000-0000-0000-0000-000000000001"
KAFKA_SHARE_RECORDS = [
    (ShareGroupMemberMetadataKey("g", "m"), "000a00016700016d",
     ShareGroupMemberMetadataValue(None, "c", "/h", ("t",)), "0000" "000263032f6802027400"),
    (ShareGroupMetadataKey("g"), "000b000167",
     ShareGroupMetadataValue(3, 77), "0000" "00000003000000000000004d00"),
    (ShareGroupTargetAssignmentMetadataKey("g"), "000c000167",
     ShareGroupTargetAssignmentMetadataValue(4, 1234), "0000" "0000000401000800000000000004d2"),
    (ShareGroupTargetAssignmentMemberKey("g", "m"), "000d00016700016d",
     ShareGroupTargetAssignmentMemberValue((TopicPartitions(SHARE_TOPIC_ID, (1,)),)),
     "0000" "020000000000000000000000000000000102000000010000"),
    (ShareGroupCurrentMemberAssignmentKey("g", "m"), "000e00016700016d",
     ShareGroupCurrentMemberAssignmentValue(2, 1, 0, (TopicPartitions(SHARE_TOPIC_ID, (0, 2)),)),
     "0000" "00000002000000010002000000000000000000000000000000010300000000000000020000"),
    (ShareGroupStatePartitionMetadataKey("g"), "000f000167",
     ShareGroupStatePartitionMetadataValue(
         (TopicPartitionsInfo(SHARE_TOPIC_ID, "t", (0,)),), (),
         (ShareTopicInfo(SHARE_TOPIC_ID, "d"),)),
     "0000" "0200000000000000000000000000000001027402000000000001020000000000000000000000"
     "000000000102640000"),
]


@pytest.mark.parametrize(("key", "key_hex", "value", "value_hex"), KAFKA_SHARE_RECORDS)
def test_share_records_are_kafkas_bytes(key, key_hex, value, value_hex) -> None:
    assert encode_record(key, value) == (bytes.fromhex(key_hex), bytes.fromhex(value_hex))
    assert decode_record(bytes.fromhex(key_hex), bytes.fromhex(value_hex)) == (key, value)


def test_share_assignment_timestamp_is_tagged_and_left_out_at_its_default() -> None:
    _, value = encode_record(ShareGroupTargetAssignmentMetadataKey("g"),
                             ShareGroupTargetAssignmentMetadataValue(4))
    assert value == bytes.fromhex("0000" "0000000400")


@pytest.mark.parametrize("record_type", sorted(RECORD_TYPES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip(record_type: str, data: st.DataObject) -> None:
    keys, values = RECORD_TYPES[record_type]
    record = (data.draw(keys), data.draw(st.none() | values))
    assert decode_record(*encode_record(*record)) == record


# Malformed input.


@settings(max_examples=150, deadline=None)
@given(ANY_RECORD)
def test_every_truncation_and_any_trailing_byte_is_a_format_error(record) -> None:
    key, value = encode_record(*record)
    for end in range(len(key)):
        with pytest.raises(RecordFormatError):
            decode_record(key[:end], value)
    with pytest.raises(RecordFormatError):
        decode_record(key + b"\x00", value)
    if value is not None:
        for end in range(len(value)):
            with pytest.raises(RecordFormatError):
                decode_record(key, value[:end])
        with pytest.raises(RecordFormatError):
            decode_record(key, value + b"\x00")


@pytest.mark.parametrize("record_type", [9, 17, 19, 22, 23, 0x7FFF, -1])
@pytest.mark.parametrize("value", [None, b"\x00\x00\x00"])
def test_unknown_record_types(record_type: int, value: bytes | None) -> None:
    key = record_type.to_bytes(2, "big", signed=True) + b"\x00\x01g"
    with pytest.raises(UnknownRecordType) as caught:
        decode_record(key, value)
    assert caught.value.record_type == record_type
    assert isinstance(caught.value, RecordFormatError)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (OFFSET_KEY_BYTES, b"\x00\x05" + OFFSET_VALUE_BYTES[2:]),  # OffsetCommitValue v5
        (OFFSET_KEY_BYTES, b"\xff\xff" + OFFSET_VALUE_BYTES[2:]),  # negative version
        (GROUP_KEY_BYTES, b"\x00\x05" + GROUP_VALUE_BYTES[2:]),  # GroupMetadataValue v5
        (b"\x00\x03\x00\x01g", b"\x00\x01\x00\x00\x00\x03\x00"),  # ConsumerGroupMetadata v1
        (GROUP_KEY_BYTES, b"\x00\x03\xff\xff" + GROUP_VALUE_BYTES[12:]),  # null protocolType
        (b"\x00\x02\x00\x02\xc3\x28", None),  # group id not UTF-8
        (b"\x00\x02\xff\xff", None),  # null group id
        (b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff\xff\x01"),  # varint
        (MEMBER_KEY_BYTES, MEMBER_VALUE_BYTES[:-4] + b"\x01\x00\x05\x00"),  # short tag
        (GROUP_KEY_BYTES, GROUP_VALUE_BYTES[:-4] + b"\xff\xff\xff\xff"),  # null assignment
        (b"", None),
    ],
)
def test_malformed_records(key: bytes, value: bytes | None) -> None:
    with pytest.raises(RecordFormatError):
        decode_record(key, value)


def test_encode_rejects_mismatched_and_out_of_range_records() -> None:
    with pytest.raises(TypeError):
        encode_record(GROUP_KEY, OFFSET_VALUE)
    with pytest.raises(ValueError):
        encode_record(OFFSET_KEY, OffsetCommitValue(2**63, -1, "", 0))
    with pytest.raises(ValueError):
        encode_record(
            ConsumerGroupTargetAssignmentMemberKey("g", "m"),
            ConsumerGroupTargetAssignmentMemberValue((TopicPartitions("not-a-uuid", ()),)),
        )


def test_topic_ids_are_canonical_uuid_strings() -> None:
    _, value = decode_record(*encode_record(ASSIGNMENT_KEY, ASSIGNMENT_VALUE))
    assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
    assert value.assigned_partitions[0].topic_id == str(uuid.UUID(bytes=TOPIC_ID_BYTES))
