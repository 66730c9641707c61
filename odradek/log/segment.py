"""One log segment: `<base offset>.log` with its `.index` and `.timeindex` (Kafka's LogSegment).

Appends and reads work on batch headers only; `recover` is the one place that checks CRCs.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from odradek.protocol.records import (
    BATCH_OVERHEAD,
    LOG_OVERHEAD,
    BatchInfo,
    iter_batches,
    parse_batch_header,
    scan_valid_prefix,
)

from .index import OffsetIndex, TimeIndex
from .txn_index import TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

INT32_MAX = 2**31 - 1
RECOVERY_CHUNK_BYTES = 8 * 1024 * 1024
WALK_WINDOW_BYTES = 64 * 1024

_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_OFFSET = 8


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """`00000000000000000042.log`: the base offset in 20 digits, as Kafka names files."""
    return directory / f"{base_offset:020d}{suffix}"


def _whole_batches_end(buf: bytes, start: int, end: int) -> int:
    """Where the whole batches in buf[start:end] end, hopping by batchLength alone."""
    unpack = _BATCH_LENGTH.unpack_from
    position = start
    while end - position >= BATCH_OVERHEAD:
        size = unpack(buf, position + _BATCH_LENGTH_OFFSET)[0] + LOG_OVERHEAD
        if size < BATCH_OVERHEAD or position + size > end:
            break
        position += size
    return position


class IndexLimits:
    """How densely to index and when an index counts as full (from LogConfig)."""

    __slots__ = ("interval_bytes", "max_index_bytes")

    def __init__(self, interval_bytes: int, max_index_bytes: int) -> None:
        self.interval_bytes = interval_bytes
        self.max_index_bytes = max_index_bytes


class LogSegment:
    """The batches from `base_offset` on, up to the next segment's base offset."""

    __slots__ = (
        "base_offset",
        "log_path",
        "index",
        "time_index",
        "txn_index",
        "size",
        "next_offset",
        "max_timestamp",
        "offset_of_max_timestamp",
        "rolling_base_timestamp",
        "created_ms",
        "_bytes_since_index_entry",
        "_fd",
    )

    def __init__(
        self,
        log_path: Path,
        base_offset: int,
        fd: int,
        index: OffsetIndex,
        time_index: TimeIndex,
        created_ms: int,
    ) -> None:
        self.base_offset = base_offset
        self.log_path = log_path
        self.index = index
        self.time_index = time_index
        self.txn_index = TransactionIndex(
            segment_path(log_path.parent, base_offset, TXN_INDEX_SUFFIX))
        """Aborted transactions whose markers lie in this segment (file created on demand)."""
        self.size = os.fstat(fd).st_size
        self.next_offset = base_offset
        """One past the last offset of the last batch; the base offset when empty."""
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        """Last offset of the first batch holding `max_timestamp`."""
        self.rolling_base_timestamp: int | None = None
        """maxTimestamp of the first batch: segment.ms counts from it (Kafka)."""
        self.created_ms = created_ms
        self._bytes_since_index_entry = 0
        self._fd: int | None = fd

    @classmethod
    def create(cls, directory: Path, base_offset: int, now_ms: int) -> LogSegment:
        """A new empty segment; files left over at that base offset are replaced."""
        log_path = segment_path(directory, base_offset, LOG_SUFFIX)
        fd = os.open(log_path, _OPEN_FLAGS | os.O_CREAT | os.O_TRUNC, 0o644)
        index = OffsetIndex(segment_path(directory, base_offset, INDEX_SUFFIX), base_offset)
        time_index = TimeIndex(segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset)
        index.rewrite()
        time_index.rewrite()
        segment_path(directory, base_offset, TXN_INDEX_SUFFIX).unlink(missing_ok=True)
        return cls(log_path, base_offset, fd, index, time_index, now_ms)

    @classmethod
    def open(cls, directory: Path, base_offset: int, now_ms: int) -> tuple[LogSegment, bool]:
        """Open existing files; the flag says whether both index files loaded intact."""
        log_path = segment_path(directory, base_offset, LOG_SUFFIX)
        fd = os.open(log_path, _OPEN_FLAGS)
        size = os.fstat(fd).st_size
        index = OffsetIndex.load(
            segment_path(directory, base_offset, INDEX_SUFFIX), base_offset, size
        )
        time_index = TimeIndex.load(
            segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset
        )
        intact = index is not None and time_index is not None
        segment = cls(
            log_path,
            base_offset,
            fd,
            index or OffsetIndex(segment_path(directory, base_offset, INDEX_SUFFIX), base_offset),
            time_index
            or TimeIndex(segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset),
            now_ms,
        )
        return segment, intact

    # -- reading ---------------------------------------------------------------------------

    def pread(self, position: int, size: int) -> bytes:
        assert self._fd is not None, "segment is closed"
        return os.pread(self._fd, size, position)

    def batches_from(
        self, position: int, window: int = WALK_WINDOW_BYTES
    ) -> Iterator[tuple[int, BatchInfo]]:
        """(file position, header) of each whole batch from `position`; stops at a bad tail."""
        end = self.size
        buf = b""
        buf_start = position
        while end - position >= BATCH_OVERHEAD:
            relative = position - buf_start
            if len(buf) - relative < BATCH_OVERHEAD:
                buf = self.pread(position, min(window, end - position))
                buf_start, relative = position, 0
                if len(buf) < BATCH_OVERHEAD:
                    return
            info = parse_batch_header(buf, relative)
            if info.size < BATCH_OVERHEAD or position + info.size > end:
                return
            yield position, info
            position += info.size

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_batch: bool,
        scan_bytes: int,
    ) -> bytes | memoryview | None:
        """Whole batches from the one holding `offset`, within max_bytes and below max_offset.

        None when no batch here reaches `offset` (the caller tries the next segment). One
        pread of the index entry's neighbourhood usually serves both the scan and the data.
        """
        end = self.size
        position = self.index.lookup(offset)
        window = max(max_bytes, 0) + scan_bytes + BATCH_OVERHEAD
        buf = b""
        buf_start = position
        while True:
            if end - position < BATCH_OVERHEAD:
                return None
            relative = position - buf_start
            if len(buf) - relative < BATCH_OVERHEAD:
                buf = self.pread(position, min(window, end - position))
                buf_start, relative = position, 0
                if len(buf) < BATCH_OVERHEAD:
                    return None
            first = parse_batch_header(buf, relative)
            if first.size < BATCH_OVERHEAD or position + first.size > end:
                return None
            if first.last_offset >= offset:
                break
            position += first.size
        if max_offset is not None and first.last_offset >= max_offset:
            return b""
        if first.size > max_bytes:
            if not min_one_batch:
                return b""
            if relative + first.size <= len(buf):
                return memoryview(buf)[relative : relative + first.size]
            return self.pread(position, first.size)
        limit = min(max_bytes, end - position)
        if relative + limit > len(buf):
            buf = self.pread(position, limit)
            relative = 0
        if max_offset is None or max_offset >= self.next_offset:
            stop = _whole_batches_end(buf, relative, relative + limit)
        else:
            stop = relative
            for info in iter_batches(buf, relative, relative + limit):
                if info.last_offset >= max_offset:
                    break
                stop = info.end
        if relative == 0 and stop == len(buf):
            return buf
        return memoryview(buf)[relative:stop]

    def largest_timestamp(self) -> int:
        """Retention's clock: the max record timestamp, else the file's mtime (Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    # -- writing ---------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[BatchInfo],
               limits: IndexLimits) -> None:
        """Write `data` (the batches, offsets assigned) with one write; index as Kafka does."""
        assert self._fd is not None, "segment is closed"
        start = self.size
        written = 0
        try:
            with memoryview(data) as view:
                while written < len(view):
                    written += os.write(self._fd, view[written:])
        except OSError:
            os.ftruncate(self._fd, start)
            raise
        for info in batches:
            self._track(start + info.position, info, limits)
        self.index.write_pending()
        self.time_index.write_pending()
        self.size = start + len(data)
        self.next_offset = batches[-1].next_offset

    def _track(self, position: int, info: BatchInfo, limits: IndexLimits) -> None:
        """Per-batch bookkeeping shared by append and recovery (LogSegment.append in Kafka)."""
        if position == 0:
            self.rolling_base_timestamp = info.max_timestamp
        if info.max_timestamp > self.max_timestamp:
            self.max_timestamp = info.max_timestamp
            self.offset_of_max_timestamp = info.last_offset
        if (
            self._bytes_since_index_entry > limits.interval_bytes
            and not self.index.is_full(limits.max_index_bytes)
            and not self.time_index.is_full(limits.max_index_bytes)
        ):
            self.index.add(info.last_offset, position)
            self.time_index.maybe_add(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += info.size

    def indexes_full(self, max_index_bytes: int) -> bool:
        return self.index.is_full(max_index_bytes) or self.time_index.is_full(max_index_bytes)

    def seal(self) -> None:
        """The segment stops being active: final time index entry, index files closed."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_add(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.write_pending()
        self.time_index.write_pending()
        self.index.close()
        self.time_index.close()

    # -- loading, recovery, truncation ---------------------------------------------------

    def load_tail(self) -> bool:
        """Derive the in-memory state from intact indexes and a header walk of the tail.

        False when the indexes and the data disagree or the walk does not end exactly at the
        end of the file: the segment then needs `recover`.
        """
        # Time index entries are added with offset index entries (and on sealing), so the
        # last time entry covers every batch before the last indexed one.
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        end = self.index.last_position
        self.next_offset = self.base_offset
        for position, info in self.batches_from(end):
            if info.max_timestamp > self.max_timestamp:
                self.max_timestamp = info.max_timestamp
                self.offset_of_max_timestamp = info.last_offset
            self.next_offset = info.next_offset
            end = position + info.size
        last_indexed = self.index.last_offset
        if (
            end != self.size
            or (self.size and self.next_offset <= self.offset_of_max_timestamp)
            or (last_indexed is not None and last_indexed >= self.next_offset)
        ):
            return False
        self._bytes_since_index_entry = self.size - self.index.last_position
        self.rolling_base_timestamp = None
        if self.size:
            first = parse_batch_header(self.pread(0, BATCH_OVERHEAD))
            self.rolling_base_timestamp = first.max_timestamp
        return True

    def recover(self, limits: IndexLimits,
                on_batch: Callable[[BatchInfo], None] | None = None) -> int:
        """Rescan with CRC checks, truncate any torn or corrupt tail, rebuild both indexes;
        `on_batch` sees each batch kept.

        Returns the number of bytes truncated. Reads in chunks, so memory stays bounded.
        """
        self.index.clear()
        self.time_index.clear()
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_base_timestamp = None
        self.next_offset = self.base_offset
        self._bytes_since_index_entry = 0
        file_size = self.size
        position = 0
        need = 0
        while position < file_size:
            length = min(max(RECOVERY_CHUNK_BYTES, need), file_size - position)
            chunk = self.pread(position, length)
            batches, valid = scan_valid_prefix(chunk)
            accepted = valid
            for info in batches:
                if (
                    info.base_offset < self.next_offset
                    or info.last_offset - self.base_offset > INT32_MAX
                ):
                    accepted = info.position
                    break
                self._track(position + info.position, info, limits)
                self.next_offset = info.next_offset
                if on_batch is not None:
                    on_batch(info)
            if accepted < valid:
                position += accepted
                break
            need = self._straddling_batch_size(chunk, valid, position, file_size)
            position += valid
            if valid < len(chunk) and not need:
                break
        truncated = file_size - position
        if truncated:
            assert self._fd is not None
            os.ftruncate(self._fd, position)
            self.size = position
        self.index.rewrite()
        self.time_index.rewrite()
        return truncated

    @staticmethod
    def _straddling_batch_size(chunk: bytes, valid: int, position: int, file_size: int) -> int:
        """Size of a batch cut by the chunk's end (to re-read it whole), else 0."""
        if valid == len(chunk) or position + len(chunk) >= file_size:
            return 0
        remaining = len(chunk) - valid
        if remaining < BATCH_OVERHEAD:
            return BATCH_OVERHEAD
        size = parse_batch_header(chunk, valid).size
        if remaining < size <= file_size - position - valid:
            return size
        return 0

    def truncate_to(self, offset: int, limits: IndexLimits) -> int | None:
        """Remove every batch whose last offset is >= `offset`.

        Returns the base offset of the first batch removed, None when nothing was.
        """
        cut = None
        for position, info in self.batches_from(self.index.lookup(offset)):
            if info.last_offset >= offset:
                cut = position, info.base_offset
                break
        if cut is None:
            return None
        position, first_removed = cut
        assert self._fd is not None, "segment is closed"
        os.ftruncate(self._fd, position)
        self.size = position
        self.index.truncate_to_position(position)
        self.time_index.truncate_to_offset(first_removed)
        if not self.load_tail():
            self.recover(limits)
        return first_removed

    # -- files -----------------------------------------------------------------------------

    def paths(self) -> tuple[Path, Path, Path, Path]:
        return self.log_path, self.index.path, self.time_index.path, self.txn_index.path

    def fsync(self) -> None:
        """fsync the files by path; one renamed away for deletion (or never created, as a
        transaction index without aborts) is skipped."""
        for path in self.paths():
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        self.seal()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename_for_deletion(self) -> list[Path]:
        """Close and rename the files to `*.deleted`; returns the new paths."""
        self.close()
        renamed: list[Path] = []
        for path in self.paths():
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                os.replace(path, target)
            except FileNotFoundError:
                continue
            renamed.append(target)
        return renamed

    def __repr__(self) -> str:
        return (
            f"LogSegment(base_offset={self.base_offset}, size={self.size}, "
            f"next_offset={self.next_offset})"
        )
