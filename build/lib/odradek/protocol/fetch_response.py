"""A Fetch response encoder for the hot path: record bytes are handed on as they are.

The generic codec builds dataclasses and copies every records blob into one buffer; this
writes the fixed fields with struct and returns a list of buffers for `writelines`. It
covers Fetch v4-v17; of the tagged fields it writes a follower's diverging epoch (v12) and
the leader hints of KIP-951 (a partition's current leader from v12, the leaders' endpoints
from v16). Tests check it byte
for byte against kio's encoding of the same response.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

FIRST_FLEXIBLE_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
FIRST_NODE_ENDPOINTS_VERSION = 16
_DIVERGING_EPOCH_TAG = 0
_CURRENT_LEADER_TAG = 1
_NODE_ENDPOINTS_TAG = 0
_UNKNOWN_LEADER = (-1, -1)
"""The tagged field's default, which is not written."""

_PARTITION = struct.Struct(">ihqqq")
_PARTITION_V4 = struct.Struct(">ihqq")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ABORTED = struct.Struct(">qq")
_TOP_V7 = struct.Struct(">ihi")
_LEADER = struct.Struct(">ii")
_EPOCH_END = struct.Struct(">iq")

Buffer = bytes | bytearray | memoryview


@dataclass(slots=True)
class FetchedPartition:
    partition_index: int
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Buffer = b""
    """Never null: librdkafka cannot parse a null records field (it reads the error code
    only after it), so a partition with an error carries empty records, as in Kafka."""
    current_leader: tuple[int, int] | None = None
    """(leader id, leader epoch) for a client that asked the wrong broker (KIP-951)."""
    aborted_transactions: list[tuple[int, int]] | None = None
    """(producer id, first offset) of the aborted transactions the records overlap; None
    (null) for read_uncommitted."""
    preferred_read_replica: int = -1
    """The replica a consumer should fetch from instead (KIP-392, v11+); -1: this one."""
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) of the leader's log where a follower's diverges from it (v12+):
    the follower truncates before it fetches again."""


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(slots=True)
class FetchedTopic:
    name: str
    topic_id: uuid.UUID | None
    partitions: list[FetchedPartition]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _array_length(count: int, flexible: bool) -> bytes:
    return _uvarint(count + 1) if flexible else _INT32.pack(count)


def _string(text: str, flexible: bool) -> bytes:
    data = text.encode()
    return (_uvarint(len(data) + 1) if flexible else _INT16.pack(len(data))) + data


def _tagged(tag: int, data: bytes) -> bytes:
    """One tagged field, in a section that holds only it."""
    return _tag_section([(tag, data)])


def _tag_section(fields: Sequence[tuple[int, bytes]]) -> bytes:
    """A tagged-field section holding `fields`, in increasing tag order."""
    section = bytearray(_uvarint(len(fields)))
    for tag, data in fields:
        section += _uvarint(tag) + _uvarint(len(data)) + data
    return bytes(section)


def _partition_tags(partition: FetchedPartition) -> bytes:
    fields = []
    if partition.diverging_epoch is not None:
        fields.append((_DIVERGING_EPOCH_TAG, _EPOCH_END.pack(*partition.diverging_epoch)
                       + b"\x00"))
    leader = partition.current_leader
    if leader is not None and leader != _UNKNOWN_LEADER:
        fields.append((_CURRENT_LEADER_TAG, _LEADER.pack(*leader) + b"\x00"))
    return _tag_section(fields)


def _endpoints(nodes: Sequence[NodeEndpoint]) -> bytes:
    out = bytearray(_uvarint(len(nodes) + 1))
    for node in nodes:
        out += _INT32.pack(node.node_id) + _string(node.host, True) + _INT32.pack(node.port)
        out += _string(node.rack, True) if node.rack is not None else b"\x00"
        out += b"\x00"
    return bytes(out)


def encode_fetch_body(
    version: int,
    topics: Sequence[FetchedTopic],
    error_code: int = 0,
    session_id: int = 0,
    throttle_time_ms: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> list[Buffer]:
    """The response body as buffers; records blobs appear in it unchanged."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    parts: list[Buffer] = []
    head = (
        _TOP_V7.pack(throttle_time_ms, error_code, session_id)
        if version >= 7
        else _INT32.pack(throttle_time_ms)
    )
    pending = bytearray(head)
    pending += _array_length(len(topics), flexible)
    null_array = b"\x00" if flexible else b"\xff\xff\xff\xff"
    for topic in topics:
        if version >= FIRST_TOPIC_ID_VERSION:
            pending += (topic.topic_id or uuid.UUID(int=0)).bytes
        else:
            pending += _string(topic.name, flexible)
        pending += _array_length(len(topic.partitions), flexible)
        for partition in topic.partitions:
            if version >= 5:
                pending += _PARTITION.pack(
                    partition.partition_index, partition.error_code, partition.high_watermark,
                    partition.last_stable_offset, partition.log_start_offset,
                )
            else:
                pending += _PARTITION_V4.pack(
                    partition.partition_index, partition.error_code, partition.high_watermark,
                    partition.last_stable_offset,
                )
            aborted = partition.aborted_transactions
            if aborted is None:
                pending += null_array
            else:
                pending += _array_length(len(aborted), flexible)
                for producer_id, first_offset in aborted:
                    pending += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        pending += b"\x00"
            if version >= 11:
                pending += _INT32.pack(partition.preferred_read_replica)
            records = partition.records
            size = len(records)
            pending += _uvarint(size + 1) if flexible else _INT32.pack(size)
            if size:
                parts.append(bytes(pending))
                parts.append(records)
                pending = bytearray()
            if flexible:
                pending += _partition_tags(partition)
        if flexible:
            pending += b"\x00"
    if flexible:
        pending += (_tagged(_NODE_ENDPOINTS_TAG, _endpoints(node_endpoints))
                    if node_endpoints and version >= FIRST_NODE_ENDPOINTS_VERSION else b"\x00")
    parts.append(bytes(pending))
    return parts
