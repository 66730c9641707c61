"""MM2's internal records decoded for the tests, written from Kafka's published schemas
(connect/mirror-client Checkpoint, Heartbeat and connect/mirror OffsetSync), apart from
odradek/mirror/formats.py so that a bug there cannot hide here.

Kafka protocol types: STRING = INT16 length + UTF-8, INT32/INT64 big-endian. Checkpoint and
Heartbeat values start with a header struct {version: INT16} (version 0)."""

from __future__ import annotations

import struct
from typing import NamedTuple


def _string(data: bytes, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">h", data, at)
    return data[at + 2:at + 2 + size].decode(), at + 2 + size


class Heartbeat(NamedTuple):
    source: str
    target: str
    timestamp: int


class Checkpoint(NamedTuple):
    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str


class OffsetSync(NamedTuple):
    topic: str
    partition: int
    upstream: int
    downstream: int


def heartbeat(key: bytes, value: bytes) -> Heartbeat:
    source, at = _string(key, 0)
    target, at = _string(key, at)
    assert at == len(key)
    version, timestamp = struct.unpack(">hq", value)
    assert version == 0
    return Heartbeat(source, target, timestamp)


def checkpoint(key: bytes, value: bytes) -> Checkpoint:
    group, at = _string(key, 0)
    topic, at = _string(key, at)
    (partition,) = struct.unpack_from(">i", key, at)
    assert at + 4 == len(key)
    version, upstream, downstream = struct.unpack_from(">hqq", value)
    assert version == 0
    metadata, at = _string(value, 18)
    assert at == len(value)
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


def offset_sync(key: bytes, value: bytes) -> OffsetSync:
    topic, at = _string(key, 0)
    (partition,) = struct.unpack_from(">i", key, at)
    assert at + 4 == len(key)
    upstream, downstream = struct.unpack(">qq", value)
    return OffsetSync(topic, partition, upstream, downstream)


def encode_offset_sync(sync: OffsetSync) -> tuple[bytes, bytes]:
    topic = sync.topic.encode()
    return (struct.pack(">h", len(topic)) + topic + struct.pack(">i", sync.partition),
            struct.pack(">qq", sync.upstream, sync.downstream))
