"""MirrorMaker 2's record formats for its internal topics, byte for byte, so that tools that
read MM2's topics read ours: offset syncs (`mm2-offset-syncs.<target>.internal`), checkpoints
(`<source>.checkpoints.internal`) and heartbeats (`heartbeats`).

Keys and values are Kafka protocol structs: STRING is an INT16 length and UTF-8 bytes, and
integers are big-endian. Checkpoint and heartbeat values start with an INT16 version (0);
offset sync values have none.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class FormatError(ValueError):
    """Bytes that are not a record of the expected MM2 format."""


@dataclass(frozen=True)
class OffsetSync:
    """Upstream offset `upstream` of `topic`-`partition` (the source topic's name) is
    downstream offset `downstream` of the mirrored partition."""
    topic: str
    partition: int
    upstream: int
    downstream: int

    def key(self) -> bytes:
        return _string(self.topic) + _INT32.pack(self.partition)

    def value(self) -> bytes:
        return _INT64.pack(self.upstream) + _INT64.pack(self.downstream)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        reader = _Reader(key)
        topic, partition = reader.string(), reader.int32()
        reader.end()
        reader = _Reader(value)
        upstream, downstream = reader.int64(), reader.int64()
        reader.end()
        return cls(topic, partition, upstream, downstream)


@dataclass(frozen=True)
class Checkpoint:
    """Group `group` committed `upstream` on the source's `topic`-`partition`; on the target
    the same position is `downstream`. `topic` is the target's (renamed) topic, as in MM2."""
    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _INT32.pack(self.partition)

    def value(self) -> bytes:
        return (_INT16.pack(VERSION) + _INT64.pack(self.upstream)
                + _INT64.pack(self.downstream) + _string(self.metadata))

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        reader = _Reader(key)
        group, topic, partition = reader.string(), reader.string(), reader.int32()
        reader.end()
        reader = _Reader(value)
        reader.version()
        upstream, downstream, metadata = reader.int64(), reader.int64(), reader.string()
        reader.end()
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True)
class Heartbeat:
    """A heartbeat emitted on `source` at `timestamp_ms`, mirrored towards `target`."""
    source: str
    target: str
    timestamp_ms: int

    def key(self) -> bytes:
        return _string(self.source) + _string(self.target)

    def value(self) -> bytes:
        return _INT16.pack(VERSION) + _INT64.pack(self.timestamp_ms)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        reader = _Reader(key)
        source, target = reader.string(), reader.string()
        reader.end()
        reader = _Reader(value)
        reader.version()
        timestamp_ms = reader.int64()
        reader.end()
        return cls(source, target, timestamp_ms)


def _string(text: str) -> bytes:
    data = text.encode()
    return _INT16.pack(len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def _take(self, size: int) -> bytes:
        if self._at + size > len(self._data):
            raise FormatError(f"record ends after {len(self._data)} bytes, "
                              f"{self._at + size} needed")
        chunk = self._data[self._at:self._at + size]
        self._at += size
        return chunk

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack(self._take(8))[0]
        return value

    def string(self) -> str:
        size: int = _INT16.unpack(self._take(2))[0]
        if size < 0:
            raise FormatError("null string where MM2 writes a string")
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as error:
            raise FormatError(f"string is not UTF-8: {error}") from None

    def version(self) -> None:
        version: int = _INT16.unpack(self._take(2))[0]
        if version != VERSION:
            raise FormatError(f"version {version}; MM2 writes version {VERSION}")

    def end(self) -> None:
        if self._at != len(self._data):
            raise FormatError(f"{len(self._data) - self._at} bytes after the record")
