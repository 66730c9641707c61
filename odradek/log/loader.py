"""Loading a partition's log from its directory, with recovery (Kafka's LogLoader).

Blocking file IO: callers run it in a worker thread. `PartitionLog.open` builds the log on
what it loads, then aligns the leader epochs and the producer state with it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.records import BatchInfo

from .config import LogConfig
from .leader_epochs import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache
from .segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    IndexLimits,
    LogSegment,
    segment_path,
)
from .segment_swap import finish_swap

logger = logging.getLogger("odradek.log")
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap", ".tmp")
_BASE_DIGITS = 20


@dataclass(frozen=True, slots=True)
class LoadedSegments:
    segments: list[LogSegment]
    """In offset order, at least one; every one but the last sealed."""
    leader_epochs: LeaderEpochCache
    """As checkpointed, with the newer epochs of the batches recovery rescanned, or rebuilt
    from the batch headers; not yet truncated to the log."""


def load_segments(
    directory: Path, config: LogConfig, now_ms: int, *, recovery_point: int,
    log_start_offset: int,
) -> LoadedSegments:
    """Load (or create) the segments in `directory`, recovering what lies past
    `recovery_point`.

    A cleaner swap a crash interrupted is completed first, and leftovers are deleted. A
    segment holding data at or past the recovery point, or whose index files are missing or
    corrupt, is rescanned with CRC checks: a torn or corrupt tail is truncated and every
    later segment deleted, the indexes are rebuilt, and a batch of an epoch newer than the
    checkpoint's latest starts that epoch. An empty directory gets one empty segment at
    `log_start_offset`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if finish_swap(directory):
        logger.info("%s: completed a cleaner swap interrupted by a crash", directory.name)
    bases = _clean_directory(directory)
    limits = IndexLimits(config.index_interval_bytes, config.segment_index_bytes)
    checkpointed = (directory / LEADER_EPOCH_CHECKPOINT).exists()
    epochs = LeaderEpochCache.load(directory) if checkpointed else None
    segments: list[LogSegment] = []
    truncated = False
    for i, base in enumerate(bases):
        if truncated:
            for suffix in SUFFIXES:
                segment_path(directory, base, suffix).unlink(missing_ok=True)
            continue
        segment, intact = LogSegment.open(directory, base, now_ms)
        is_last = i == len(bases) - 1
        recover = not intact or (not is_last and bases[i + 1] > recovery_point)
        if not recover:
            recover = not segment.load_tail() or (
                is_last and segment.next_offset > recovery_point
            )
        removed = segment.recover(limits, _newer_epochs_into(epochs)) if recover else 0
        if removed:
            logger.warning(
                "%s: truncated a torn or corrupt tail of %d bytes from segment %d; "
                "log end offset now %d", directory.name, removed, base, segment.next_offset,
            )
            truncated = True
        if not is_last and not truncated:
            segment.seal()
        segments.append(segment)
    if not segments:
        segments.append(LogSegment.create(directory, log_start_offset, now_ms))
    return LoadedSegments(segments, epochs if epochs is not None
                          else _rebuild_leader_epochs(directory, segments))


def _clean_directory(directory: Path) -> list[int]:
    """Delete leftovers and orphan index files; return the segments' base offsets, sorted."""
    bases: set[int] = set()
    index_files: list[tuple[int, Path]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if name.endswith(LEFTOVER_SUFFIXES):
                os.unlink(entry.path)
                continue
            stem, suffix = name[:_BASE_DIGITS], name[_BASE_DIGITS:]
            if len(stem) != _BASE_DIGITS or not stem.isdigit():
                continue
            if suffix == LOG_SUFFIX:
                bases.add(int(stem))
            elif suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                index_files.append((int(stem), Path(entry.path)))
    for base, path in index_files:
        if base not in bases:
            path.unlink()
    return sorted(bases)


def _newer_epochs_into(epochs: LeaderEpochCache | None) -> Callable[[BatchInfo], None] | None:
    """What recovery does with each batch it keeps, as Kafka's LogSegment.recover: a batch of
    an epoch newer than the checkpoint's latest starts that epoch there. The checkpoint may
    lag the log (its write failed, or a file system lost it), and a leader whose cache lacks
    an epoch its log holds answers its followers' OffsetForLeaderEpoch wrongly for ever."""
    if epochs is None:
        return None

    def assign(info: BatchInfo) -> None:
        if info.partition_leader_epoch > epochs.latest_epoch:
            epochs.assign(info.partition_leader_epoch, info.base_offset)

    return assign


def _rebuild_leader_epochs(directory: Path, segments: list[LogSegment]) -> LeaderEpochCache:
    """For a log written without a checkpoint, the cache rebuilt from the batch headers (as
    Kafka does when the file is missing)."""
    rebuilt = LeaderEpochCache(None)
    for segment in segments:
        for _, info in segment.batches_from(0):
            rebuilt.assign(info.partition_leader_epoch, info.base_offset)
    cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT, list(rebuilt.entries))
    cache.save()
    return cache
