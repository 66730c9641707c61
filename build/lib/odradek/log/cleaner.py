"""One cleaning pass over one partition log: the file side of Kafka's `Cleaner.clean`.

It runs in a cleaner worker process (see `odradek.broker.log_cleaner`), away from the
broker's event loop, and touches only its own file descriptors: it opens the segments by
path, builds the offset map over the dirty section, and writes the cleaned segments, log and
index files, into the staging dir. The broker then swaps them in (`PartitionLog.install_cleaned`).
The retention rule itself is `odradek.log.compaction`'s.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.protocol.records import BATCH_OVERHEAD, parse_batch_header

from .cleaning_plan import group_segments_by_size
from .compaction import CleanerStats, Cleaning, OffsetMap, build_offset_map
from .partition import PartitionLog
from .segment import LOG_SUFFIX, IndexLimits, LogSegment, segment_path
from .segment_swap import SWAP_MANIFEST, StagedGroup, staging_dir
from .txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """A sealed segment as the cleaner sees it."""

    base_offset: int
    next_offset: int
    size: int
    offset_index_bytes: int
    time_index_bytes: int


@dataclass(frozen=True, slots=True)
class CleanJob:
    """Everything a worker needs to clean one log (picklable)."""

    directory: Path
    segments: tuple[SegmentRef, ...]
    """Every sealed segment from the log start, in order."""
    first_dirty_offset: int
    first_uncleanable_offset: int
    aborted: tuple[AbortedTxn, ...]
    producer_tails: dict[int, tuple[int | None, int]]
    """Producer id -> (last data offset or None, epoch) of the producers still active."""
    now_ms: int
    delete_retention_ms: int
    map_bytes: int
    load_factor: float
    io_buffer_bytes: int
    max_io_bytes_per_second: float
    segment_bytes: int
    max_index_bytes: int
    index_interval_bytes: int


@dataclass(frozen=True, slots=True)
class CleanerSettings:
    """The broker's cleaner configs, per worker."""

    map_bytes: int
    """log.cleaner.dedupe.buffer.size over log.cleaner.threads."""
    load_factor: float
    io_buffer_bytes: int
    max_io_bytes_per_second: float


def job_for(log: PartitionLog, segments: Sequence[LogSegment], first_dirty_offset: int,
            first_uncleanable_offset: int, now_ms: int, settings: CleanerSettings) -> CleanJob:
    """The job cleaning `segments` (the log's sealed ones, as they are now)."""
    config = log.config
    return CleanJob(
        directory=log.directory,
        segments=tuple(SegmentRef(s.base_offset, s.next_offset, s.size,
                                  s.index.entry_size * len(s.index),
                                  s.time_index.entry_size * len(s.time_index))
                       for s in segments),
        first_dirty_offset=first_dirty_offset,
        first_uncleanable_offset=first_uncleanable_offset,
        aborted=tuple(entry for s in log.segments for entry in s.txn_index.entries()),
        producer_tails={pid: (entry.last_offset if entry.batches else None, entry.epoch)
                        for pid, entry in log.producers.producers.items()},
        now_ms=now_ms,
        delete_retention_ms=config.delete_retention_ms,
        map_bytes=settings.map_bytes,
        load_factor=settings.load_factor,
        io_buffer_bytes=settings.io_buffer_bytes,
        max_io_bytes_per_second=settings.max_io_bytes_per_second,
        segment_bytes=config.segment_bytes,
        max_index_bytes=config.segment_index_bytes,
        index_interval_bytes=config.index_interval_bytes,
    )


@dataclass(slots=True)
class CleanResult:
    end_offset: int
    """The new cleaner checkpoint: everything below it is clean."""
    groups: list[StagedGroup] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)
    elapsed_s: float = 0.0


class Throttler:
    """Keeps a cleaner's IO at `log.cleaner.io.max.bytes.per.second` (Kafka's Throttler).
    `clock` is monotonic seconds."""

    def __init__(self, bytes_per_second: float, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self.rate = bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._start = clock()
        self._bytes = 0

    def account(self, nbytes: int) -> None:
        """Count `nbytes` of IO, sleeping until the average rate is back within bounds."""
        self._bytes += nbytes
        ahead = self._bytes / self.rate - (self._clock() - self._start)
        if ahead > 0:
            self._sleep(ahead)


def clean_log(job: CleanJob, clock: Callable[[], float],
              sleep: Callable[[float], None]) -> CleanResult:
    """Build the offset map over the dirty section, then write cleaned copies of every
    segment below the offset it reached into the staging dir. `clock` (monotonic seconds)
    times the pass and, with `sleep`, throttles its IO."""
    started = clock()
    throttler = Throttler(job.max_io_bytes_per_second, clock, sleep)
    offset_map = OffsetMap(job.map_bytes, job.load_factor)
    dirty = [s for s in job.segments
             if s.next_offset > job.first_dirty_offset
             and s.base_offset < job.first_uncleanable_offset]
    build_offset_map(
        (batch for segment in dirty
         for batch in _batches(job.directory, segment, job.io_buffer_bytes, throttler)),
        offset_map, job.first_dirty_offset, job.first_uncleanable_offset, job.aborted)
    if offset_map.latest_offset < job.first_dirty_offset - 1:
        offset_map.update_latest_offset(job.first_dirty_offset - 1)
    end_offset = offset_map.latest_offset + 1
    cleaning = Cleaning(offset_map, now_ms=job.now_ms, delete_retention_ms=job.delete_retention_ms,
                        aborted=job.aborted, producer_tails=job.producer_tails,
                        upper_bound_offset=job.first_uncleanable_offset)
    if (job.directory / SWAP_MANIFEST).exists():
        raise RuntimeError(f"{job.directory.name}: a committed segment swap is unfinished")
    staging = staging_dir(job.directory)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    result = CleanResult(end_offset, stats=cleaning.stats)
    to_clean = [s for s in job.segments if s.base_offset < end_offset]
    limits = IndexLimits(job.index_interval_bytes, job.max_index_bytes)
    for group in group_segments_by_size(to_clean, job.segment_bytes, job.max_index_bytes,
                                        job.first_uncleanable_offset):
        result.groups.append(_clean_group(job, group, cleaning, staging, limits, throttler))
    result.elapsed_s = clock() - started
    return result


def _clean_group(job: CleanJob, group: Sequence[SegmentRef], cleaning: Cleaning,
                 staging: Path, limits: IndexLimits, throttler: Throttler) -> StagedGroup:
    base = group[0].base_offset
    segment = LogSegment.create(staging, base, job.now_ms)
    try:
        pending = bytearray()
        for old in group:
            for batch in _batches(job.directory, old, job.io_buffer_bytes, throttler):
                kept = cleaning.filter_batch(batch)
                if kept is None:
                    continue
                pending += kept
                if len(pending) >= job.io_buffer_bytes:
                    _write(segment, pending, limits, throttler)
                    pending = bytearray()
        if pending:
            _write(segment, pending, limits, throttler)
        for aborted in cleaning.take_retained_aborted():
            segment.txn_index.append(aborted)
        segment.seal()
        segment.fsync()
    finally:
        segment.close()
    files = tuple(path.name for path in segment.paths() if path.exists())
    return StagedGroup(tuple(s.base_offset for s in group), base, files)


def _write(segment: LogSegment, data: bytearray, limits: IndexLimits,
           throttler: Throttler) -> None:
    infos = []
    position = 0
    while position < len(data):
        info = parse_batch_header(data, position)
        infos.append(info)
        position = info.end
    segment.append(data, infos, limits)
    throttler.account(len(data))


def _batches(directory: Path, segment: SegmentRef, chunk_bytes: int,
             throttler: Throttler) -> Iterator[memoryview]:
    """Each whole batch of the segment file, read in chunks through the cleaner's own fd."""
    fd = os.open(segment_path(directory, segment.base_offset, LOG_SUFFIX),
                 os.O_RDONLY | os.O_CLOEXEC)
    try:
        position = 0
        while position + BATCH_OVERHEAD <= segment.size:
            chunk = os.pread(fd, max(chunk_bytes, BATCH_OVERHEAD), position)
            throttler.account(len(chunk))
            if len(chunk) < BATCH_OVERHEAD:
                return
            view = memoryview(chunk)
            relative = 0
            while len(chunk) - relative >= BATCH_OVERHEAD:
                info = parse_batch_header(chunk, relative)
                if info.size < BATCH_OVERHEAD:
                    return
                if relative + info.size > len(chunk):
                    if relative == 0:
                        whole = os.pread(fd, info.size, position)
                        if len(whole) < info.size:
                            return
                        yield memoryview(whole)
                        relative = info.size
                    break
                yield view[relative:relative + info.size]
                relative += info.size
            position += relative
    finally:
        os.close(fd)
