"""Kafka's sparse segment indexes, kept in memory as arrays and appended to their files.

`.index` entries are (relative offset int32, file position int32); `.timeindex` entries are
(timestamp int64, relative offset int32), big-endian, as in Kafka's `OffsetIndex` and
`TimeIndex`. Offsets are stored relative to the segment's base offset. Unlike Kafka the files
are not preallocated: they hold exactly the entries, so a file whose size is not a multiple of
the entry size, or whose entries are out of order, is corrupt and gets rebuilt.
"""

from __future__ import annotations

import bisect
import operator
import os
import struct
import sys
from array import array
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
_REWRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _strictly_increasing(values: array) -> bool:
    return all(map(operator.lt, values, values[1:]))


def _non_decreasing(values: array) -> bool:
    return all(map(operator.le, values, values[1:]))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def read_offset_entries(data: bytes) -> tuple[array, array]:
    """The relative offsets and positions of the whole entries in `.index` file bytes."""
    flat = array("i")
    flat.frombytes(data[: len(data) - len(data) % _OFFSET_ENTRY.size])
    if sys.byteorder == "little":
        flat.byteswap()
    return flat[0::2], flat[1::2]


def read_time_entries(data: bytes) -> tuple[array, array]:
    """The timestamps and relative offsets of the whole entries in `.timeindex` file bytes."""
    count = len(data) // _TIME_ENTRY.size
    flat = struct.unpack_from(">" + "qi" * count, data)
    return array("q", flat[0::2]), array("i", flat[1::2])


class _IndexFile:
    """Pending entry bytes and the append descriptor shared by both index kinds."""

    __slots__ = ("path", "base_offset", "_pending", "_fd")

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._pending = bytearray()
        self._fd: int | None = None

    def write_pending(self) -> None:
        """Append the entries added since the last call: one write."""
        if not self._pending:
            return
        if self._fd is None:
            self._fd = os.open(self.path, _APPEND_FLAGS, 0o644)
        os.write(self._fd, self._pending)
        self._pending.clear()

    def _rewrite(self, content: bytes) -> None:
        self.close()
        self._pending.clear()
        fd = os.open(self.path, _REWRITE_FLAGS, 0o644)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class OffsetIndex(_IndexFile):
    """Maps an offset to the file position of a batch at or before the one holding it."""

    __slots__ = ("_offsets", "_positions")
    entry_size = _OFFSET_ENTRY.size

    def __init__(
        self,
        path: Path,
        base_offset: int,
        offsets: array | None = None,
        positions: array | None = None,
    ) -> None:
        super().__init__(path, base_offset)
        self._offsets = offsets if offsets is not None else array("i")
        self._positions = positions if positions is not None else array("i")

    @classmethod
    def load(cls, path: Path, base_offset: int, log_size: int) -> OffsetIndex | None:
        """Read the file; None when it is missing or corrupt."""
        data = _read(path)
        if data is None or len(data) % _OFFSET_ENTRY.size:
            return None
        offsets, positions = read_offset_entries(data)
        if offsets and (
            offsets[0] < 0
            or positions[0] < 0
            or positions[-1] >= log_size
            or not _strictly_increasing(offsets)
            or not _strictly_increasing(positions)
        ):
            return None
        return cls(path, base_offset, offsets, positions)

    def __len__(self) -> int:
        return len(self._offsets)

    def is_full(self, max_index_bytes: int) -> bool:
        return len(self._offsets) >= max_index_bytes // self.entry_size

    @property
    def last_offset(self) -> int | None:
        """The offset of the last entry, None when there is none."""
        return self.base_offset + self._offsets[-1] if self._offsets else None

    @property
    def last_position(self) -> int:
        """Position of the last indexed batch, 0 when there is no entry."""
        return self._positions[-1] if self._positions else 0

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch whose last offset is <= `offset` (else 0)."""
        i = bisect.bisect_right(self._offsets, offset - self.base_offset) - 1
        return self._positions[i] if i >= 0 else 0

    def add(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        self._offsets.append(relative)
        self._positions.append(position)
        self._pending += _OFFSET_ENTRY.pack(relative, position)

    def truncate_to_position(self, position: int) -> None:
        """Drop entries at or past `position` and rewrite the file."""
        keep = bisect.bisect_left(self._positions, position)
        del self._offsets[keep:]
        del self._positions[keep:]
        self.rewrite()

    def rewrite(self) -> None:
        """Write the whole file from memory (after a rebuild or truncation)."""
        flat = array("i", bytes(8 * len(self._offsets)))
        flat[0::2] = self._offsets
        flat[1::2] = self._positions
        if sys.byteorder == "little":
            flat.byteswap()
        self._rewrite(flat.tobytes())

    def clear(self) -> None:
        del self._offsets[:]
        del self._positions[:]
        self._pending.clear()


class TimeIndex(_IndexFile):
    """Maps a timestamp to the offset from which to search for it; timestamps only grow."""

    __slots__ = ("_timestamps", "_offsets")
    entry_size = _TIME_ENTRY.size

    def __init__(
        self,
        path: Path,
        base_offset: int,
        timestamps: array | None = None,
        offsets: array | None = None,
    ) -> None:
        super().__init__(path, base_offset)
        self._timestamps = timestamps if timestamps is not None else array("q")
        self._offsets = offsets if offsets is not None else array("i")

    @classmethod
    def load(cls, path: Path, base_offset: int) -> TimeIndex | None:
        """Read the file; None when it is missing or corrupt."""
        data = _read(path)
        if data is None or len(data) % _TIME_ENTRY.size:
            return None
        timestamps, offsets = read_time_entries(data)
        if offsets and (
            offsets[0] < 0 or not _strictly_increasing(timestamps) or not _non_decreasing(offsets)
        ):
            return None
        return cls(path, base_offset, timestamps, offsets)

    def __len__(self) -> int:
        return len(self._timestamps)

    def is_full(self, max_index_bytes: int) -> bool:
        return len(self._timestamps) >= max_index_bytes // self.entry_size

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (-1, base offset) when empty."""
        if not self._timestamps:
            return -1, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The last entry whose timestamp is <= `timestamp`; (-1, base offset) if none."""
        i = bisect.bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def maybe_add(self, timestamp: int, offset: int) -> None:
        """Add an entry only when `timestamp` is larger than the last one (Kafka's maybeAppend)."""
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        relative = offset - self.base_offset
        self._timestamps.append(timestamp)
        self._offsets.append(relative)
        self._pending += _TIME_ENTRY.pack(timestamp, relative)

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries pointing at or past `offset` and rewrite the file."""
        keep = bisect.bisect_left(self._offsets, offset - self.base_offset)
        del self._timestamps[keep:]
        del self._offsets[keep:]
        self.rewrite()

    def rewrite(self) -> None:
        """Write the whole file from memory (after a rebuild or truncation)."""
        content = b"".join(map(_TIME_ENTRY.pack, self._timestamps, self._offsets))
        self._rewrite(content)

    def clear(self) -> None:
        del self._timestamps[:]
        del self._offsets[:]
        self._pending.clear()
