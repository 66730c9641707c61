"""A partition's log in Kafka's on-disk layout (Kafka's UnifiedLog and LocalLog, local only).

Threading contract: `append`, `read` and everything else run on one thread (the broker's
event loop); `flush` may run in a worker thread at the same time. The segment list is
replaced, never mutated, so `flush` works on a consistent snapshot, and it touches files by
path, so a segment closed and renamed meanwhile is simply skipped.
"""

from __future__ import annotations

import bisect
import logging
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.control import ControlType, read_marker
from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import BatchInfo, assign_offsets
from odradek.txn.producer_state import CompletedTxn, ProducerStateManager

from .checkpoint import fsync_directory
from .config import LogConfig
from .leader_epochs import LeaderEpochCache
from .loader import load_segments
from .producer_snapshots import SNAPSHOT_SUFFIX, delete_snapshots, load_latest, write_snapshot
from .segment import INT32_MAX, IndexLimits, LogSegment, segment_path
from .segment_swap import StagedGroup, SwapHook, commit_swap, finish_swap
from .storage_failure import StorageFailureHandler, storage_write
from .txn_index import AbortedTxn, collect_aborted_transactions

logger = logging.getLogger("odradek.log")


class OffsetOutOfRangeError(ValueError):
    """An offset outside [log start offset, log end offset] (OFFSET_OUT_OF_RANGE)."""


class RecordBatchTooLargeError(ValueError):
    """An append larger than segment.bytes (RECORD_BATCH_TOO_LARGE)."""


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int
    """The broker's timestamp for LogAppendTime topics, -1 for CreateTime."""
    log_start_offset: int
    flush_due: bool
    """Unflushed messages reached flush.messages: the caller should schedule `flush`."""


@dataclass(slots=True)
class ReadResult:
    records: bytes | memoryview
    """Whole batches, possibly none."""
    log_start_offset: int
    log_end_offset: int


class PartitionLog:
    """Segments `<base offset>.log/.index/.timeindex` under `<log.dir>/<topic>-<partition>`."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        leader_epochs: LeaderEpochCache,
    ) -> None:
        """Use `PartitionLog.open`."""
        self.directory = directory
        self.leader_epochs = leader_epochs
        """The first offset of each leader epoch in this log."""
        self.config = config
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._set_segments(segments)
        self._log_end_offset = segments[-1].next_offset
        self.log_start_offset = max(log_start_offset, segments[0].base_offset)
        self.recovery_point = min(recovery_point, self._log_end_offset)
        """Every offset below it is fsynced."""
        self._high_watermark = self.log_start_offset
        self._pending_deletion: list[Path] = []
        self.producers = ProducerStateManager()
        """Idempotent and transactional producers' state, as of the log end offset."""
        self.on_storage_error: StorageFailureHandler | None = None
        """Told of an IO error while writing (`storage_failure`) before the writer raises."""
        self.truncations = 0
        """How often the log's tail was cut off: a cleaning that read the log before the
        last cut is not installed."""
        self.cleaner_checkpoint: int | None = None
        """Where the dirty section starts (the cleaner's checkpoint); a cut pulls it back
        to the cut (Kafka's maybeTruncateCheckpoint), so data written again there is
        cleaned."""

    # -- loading ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        now_ms: int,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
    ) -> PartitionLog:
        """Load (or create) the log in `directory`, recovering what lies past `recovery_point`
        (`loader.load_segments`), then align the leader epochs and rebuild the producer state.
        Blocking: run it in a worker thread.
        """
        loaded = load_segments(directory, config, now_ms, recovery_point=recovery_point,
                               log_start_offset=log_start_offset)
        log = cls(directory, config, loaded.segments, log_start_offset, recovery_point,
                  loaded.leader_epochs)
        if log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(log_start_offset, now_ms)
            for path in log.take_deleted_files():
                path.unlink(missing_ok=True)
        log.leader_epochs.truncate_from_end(log.log_end_offset)
        log.leader_epochs.truncate_from_start(log.log_start_offset)
        log._rebuild_producer_state()
        return log

    # -- state ------------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return min(max(self._high_watermark, self.log_start_offset), self._log_end_offset)

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._high_watermark = min(max(value, self.log_start_offset), self._log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """Below it every transaction is decided: read_committed consumers read up to it."""
        high_watermark = self.high_watermark
        unstable = self.producers.first_unstable_offset()
        return high_watermark if unstable is None else min(unstable, high_watermark)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]

    def _limits(self) -> IndexLimits:
        return IndexLimits(self.config.index_interval_bytes, self.config.segment_index_bytes)

    # -- append -----------------------------------------------------------------------------

    @storage_write
    def start_leader_epoch(self, epoch: int) -> None:
        """This replica leads from the log end in `epoch` (Kafka's maybeAssignEpochStartOffset
        on becoming leader); its checkpoint is written now, before any batch of it."""
        self.leader_epochs.assign(epoch, self._log_end_offset)

    @storage_write
    def append(
        self,
        records: bytearray,
        batches: list[BatchInfo],
        now_ms: int,
        *,
        leader_epoch: int | None = None,
    ) -> AppendResult:
        """Assign offsets to validated `batches` (patching `records`) and write them at once;
        a `leader_epoch` is stamped on every batch and recorded in the epoch cache."""
        self._check_size(records, batches)
        append_time = now_ms if self.config.log_append_time else None
        base_offset = self._log_end_offset
        assigned = assign_offsets(records, batches, base_offset, append_time, leader_epoch)
        if leader_epoch is not None:
            self.leader_epochs.assign(leader_epoch, base_offset)
        return self._write(records, assigned, now_ms, append_time)

    @storage_write
    def append_as_follower(
        self, records: bytes | bytearray | memoryview, batches: list[BatchInfo], now_ms: int
    ) -> AppendResult:
        """Append batches fetched from the leader as they are (offsets and epochs included).

        They must not overlap this log or each other; a gap is fine, since compaction on the
        leader removes whole batches (Kafka allows it too)."""
        self._check_size(records, batches)
        expected = self._log_end_offset
        for info in batches:
            if info.base_offset < expected:
                raise OffsetOutOfRangeError(
                    f"{self.directory.name}: a replicated batch starts at offset "
                    f"{info.base_offset}, below the next offset {expected}"
                )
            expected = info.next_offset
        for info in batches:
            self.leader_epochs.assign(info.partition_leader_epoch, info.base_offset)
        return self._write(records, batches, now_ms, None)

    def _check_size(self, records: bytes | bytearray | memoryview,
                    batches: list[BatchInfo]) -> None:
        if not batches:
            raise ValueError("nothing to append")
        if len(records) > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"{len(records)} bytes of record batches exceed segment.bytes "
                f"{self.config.segment_bytes}"
            )

    def _write(self, records: bytes | bytearray | memoryview, batches: list[BatchInfo],
               now_ms: int, append_time: int | None) -> AppendResult:
        last_offset = batches[-1].last_offset
        max_timestamp = max(info.max_timestamp for info in batches)
        segment = self._maybe_roll(len(records), max_timestamp, last_offset, now_ms)
        segment.append(records, batches, self._limits())
        self._log_end_offset = last_offset + 1
        with memoryview(records) as view:
            for info in batches:
                if info.producer_id >= 0:
                    self._apply_producer_batch(segment, info, view[info.position:info.end])
        return AppendResult(
            base_offset=batches[0].base_offset,
            last_offset=last_offset,
            log_append_time_ms=-1 if append_time is None else append_time,
            log_start_offset=self.log_start_offset,
            flush_due=self._log_end_offset - self.recovery_point >= self.config.flush_messages,
        )

    def _maybe_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> LogSegment:
        """Kafka's LogSegment.shouldRoll, checked before each append."""
        segment = self._segments[-1]
        if segment.size == 0:
            return segment
        if (
            segment.size + size > self.config.segment_bytes
            or self._waited_too_long(segment, max_timestamp, now_ms)
            or segment.indexes_full(self.config.segment_index_bytes)
            or last_offset - segment.base_offset > INT32_MAX
        ):
            return self.roll(now_ms)
        return segment

    def _waited_too_long(self, segment: LogSegment, max_timestamp: int, now_ms: int) -> bool:
        """segment.ms minus jitter has passed since the segment's first batch (by timestamps).

        As in Kafka the clock is the records' maxTimestamp against the first batch's, or the
        segment's creation time when there is no timestamp.
        """
        first = segment.rolling_base_timestamp
        waited = (
            max_timestamp - first
            if first is not None and first >= 0
            else now_ms - segment.created_ms
        )
        return waited > self.config.segment_ms - self._roll_jitter(segment)

    def _roll_jitter(self, segment: LogSegment) -> int:
        """Kafka draws a random jitter per segment; a hash spreads partitions the same way."""
        bound = min(self.config.segment_jitter_ms, self.config.segment_ms)
        if bound <= 0:
            return 0
        return zlib.crc32(f"{self.directory.name}:{segment.base_offset}".encode()) % bound

    @storage_write
    def roll(self, now_ms: int) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        active = self._segments[-1]
        if active.base_offset == self._log_end_offset:
            return active
        active.seal()
        write_snapshot(self.directory, self._log_end_offset, self.producers)
        segment = LogSegment.create(self.directory, self._log_end_offset, now_ms)
        self._set_segments([*self._segments, segment])
        return segment

    # -- read -------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding `offset`, from a single segment as in Kafka.

        At most `max_bytes`, except that with `min_one_batch` a first batch larger than that
        comes whole (KIP-74); a batch whose last offset is >= `max_offset` is not returned.
        """
        end = self._log_end_offset
        start = self.log_start_offset
        if offset < start or offset > end:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{start}, {end}] of {self.directory.name}"
            )
        records: bytes | memoryview = b""
        if offset < end and (max_offset is None or offset < max_offset):
            segments = self._segments
            i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
            scan_bytes = self.config.index_interval_bytes
            while i < len(segments):
                data = segments[i].read(offset, max_bytes, max_offset, min_one_batch, scan_bytes)
                if data is not None:
                    records = data
                    break
                i += 1
        return ReadResult(records, start, end)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or past log start with ts >= `timestamp`.

        The caller bounds the answer by the high watermark, as Kafka's Partition does.
        """
        start = self.log_start_offset
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            _, entry_offset = segment.time_index.lookup(timestamp)
            position = segment.index.lookup(max(entry_offset, start))
            for batch_position, info in segment.batches_from(position):
                if info.max_timestamp < timestamp or info.last_offset < start:
                    continue
                for record in decode_records(segment.pread(batch_position, info.size)):
                    if record.timestamp >= timestamp and record.offset >= start:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp (ListOffsets -3)."""
        best: LogSegment | None = None
        for segment in self._segments:
            if segment.max_timestamp >= 0 and (
                best is None or segment.max_timestamp > best.max_timestamp
            ):
                best = segment
        if best is None:
            return None
        position = best.index.lookup(best.offset_of_max_timestamp)
        for batch_position, info in best.batches_from(position):
            if info.max_timestamp == best.max_timestamp:
                for record in decode_records(best.pread(batch_position, info.size)):
                    if record.timestamp == info.max_timestamp:
                        return record.offset, record.timestamp
                return None
        return None

    # -- log start, retention, truncation -------------------------------------------------

    @storage_write
    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset` (at most the high watermark).

        Segments wholly below the new start are detached and renamed to `*.deleted` at once;
        their paths come back from `take_deleted_files` (and `remove_segments`).
        """
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: above the high watermark "
                f"{self.high_watermark} of {self.directory.name}"
            )
        if offset > self.log_start_offset:
            self._advance_log_start(offset)
            segments = self._segments
            keep = max(bisect.bisect_right(self._bases, offset) - 1, 0)
            if keep:
                for segment in segments[:keep]:
                    self._pending_deletion += segment.rename_for_deletion()
                self._set_segments(segments[keep:])
        return self.log_start_offset

    def _advance_log_start(self, offset: int) -> None:
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.recovery_point = max(self.recovery_point, offset)
            self.leader_epochs.truncate_from_start(offset)
            self.producers.forget_before(offset)

    def retention_candidates(self, now_ms: int) -> list[LogSegment]:
        """The oldest segments past retention.ms, retention.bytes or the log start offset.

        Kafka's rules (UnifiedLog.deleteOldSegments): a prefix of the log, never reaching past
        the high watermark; by time when `now - largest timestamp > retention.ms`, by size
        while the log stays at or above retention.bytes without the segment. When the active
        segment qualifies (it holds data), a new one is rolled first so that it can go.
        """
        config = self.config
        by_retention = config.delete_enabled
        segments = self._segments
        high_watermark = self.high_watermark
        remaining = self.size_bytes()
        deletable: list[LogSegment] = []
        for i, segment in enumerate(segments):
            following = segments[i + 1] if i + 1 < len(segments) else None
            upper = following.base_offset if following is not None else self._log_end_offset
            if (following is None and segment.size == 0) or high_watermark < upper:
                break
            breached = (
                (following is not None and following.base_offset <= self.log_start_offset)
                or (
                    by_retention
                    and config.retention_bytes >= 0
                    and remaining - segment.size >= config.retention_bytes
                )
                or (
                    by_retention
                    and config.retention_ms >= 0
                    and now_ms - segment.largest_timestamp() > config.retention_ms
                )
            )
            if not breached:
                break
            deletable.append(segment)
            remaining -= segment.size
        if deletable and deletable[-1] is segments[-1]:
            self.roll(now_ms)
        return deletable

    @storage_write
    def remove_segments(self, segments: Iterable[LogSegment]) -> list[Path]:
        """Detach `segments`, advance the log start offset, rename their files to `*.deleted`.

        Returns the renamed paths (with any left by `delete_records_before`) for the caller
        to unlink later, in a worker thread.
        """
        doomed = {id(segment) for segment in segments}
        current = self._segments
        if id(current[-1]) in doomed:
            raise ValueError("the active segment cannot be removed; roll first")
        removed = [segment for segment in current if id(segment) in doomed]
        if removed:
            self._set_segments([segment for segment in current if id(segment) not in doomed])
            for segment in removed:
                self._pending_deletion += segment.rename_for_deletion()
            self._advance_log_start(self._segments[0].base_offset)
            delete_snapshots(self.directory, below=self._segments[0].base_offset)
        return self.take_deleted_files()

    def take_deleted_files(self) -> list[Path]:
        """Paths renamed to `*.deleted` and not yet handed out; the caller unlinks them."""
        paths, self._pending_deletion = self._pending_deletion, []
        return paths

    @storage_write
    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch holding offsets at or past `offset` (a follower diverged).

        Returns the new log end offset: `offset`, or the base offset of a batch cut through.
        """
        if offset >= self._log_end_offset:
            # As Kafka's UnifiedLog.truncateTo: the epoch cache may end in an epoch this
            # replica began as leader without appending to it, which the new leader's log
            # does not have; left there, the follower's fetches would diverge for ever
            self.leader_epochs.truncate_from_end(self._log_end_offset)
            return self._log_end_offset
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset, now_ms)
            return offset
        self.truncations += 1
        keep = bisect.bisect_right(self._bases, offset)
        segments = self._segments
        for segment in segments[keep:]:
            self._pending_deletion += segment.rename_for_deletion()
        self._set_segments(segments[:keep])
        active = self._segments[-1]
        removed_base = active.truncate_to(offset, self._limits())
        self._log_end_offset = offset if removed_base is None else min(offset, removed_base)
        self.recovery_point = min(self.recovery_point, self._log_end_offset)
        self.log_start_offset = min(self.log_start_offset, self._log_end_offset)
        self._high_watermark = min(self._high_watermark, self._log_end_offset)
        self.leader_epochs.truncate_from_end(self._log_end_offset)
        self._rebuild_producer_state()
        self._pull_cleaner_checkpoint_back(self._log_end_offset)
        return self._log_end_offset

    @storage_write
    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Drop every segment and start an empty log at `offset`."""
        self.truncations += 1
        self._pull_cleaner_checkpoint_back(offset)
        for segment in self._segments:
            self._pending_deletion += segment.rename_for_deletion()
        self._set_segments([LogSegment.create(self.directory, offset, now_ms)])
        self._log_end_offset = offset
        self.log_start_offset = offset
        self.recovery_point = offset
        self._high_watermark = offset
        self.leader_epochs.clear()
        delete_snapshots(self.directory, above=-1)
        self.producers = ProducerStateManager()

    def _pull_cleaner_checkpoint_back(self, cut: int) -> None:
        if self.cleaner_checkpoint is not None:
            self.cleaner_checkpoint = min(self.cleaner_checkpoint, cut)

    # -- producer state ---------------------------------------------------------------------

    def _apply_producer_batch(self, segment: LogSegment, info: BatchInfo,
                              batch: bytes | memoryview) -> None:
        """Apply a batch with a producer id; an aborted transaction goes into the segment's
        transaction index."""
        marker = None
        if info.is_control:
            control, coordinator_epoch = read_marker(batch)
            marker = control == ControlType.COMMIT, coordinator_epoch
        completed = self.producers.record(info, marker)
        if completed is not None and completed.aborted:
            segment.txn_index.append(_aborted(completed))

    def _rebuild_producer_state(self) -> None:
        """Load the newest snapshot at or below the log end offset and replay the batches
        past it, rebuilding the transaction indexes they cover (loading and truncation)."""
        end = self._log_end_offset
        delete_snapshots(self.directory, above=end)
        for segment in self._segments:
            if segment.txn_index.discard_if_corrupt():
                logger.warning("%s: rebuilding the corrupt transaction index of segment %d",
                               self.directory.name, segment.base_offset)
                end = min(end, segment.base_offset)
        loaded = load_latest(self.directory, end)
        first_base = self._segments[0].base_offset
        start, self.producers = loaded if loaded is not None else (first_base,
                                                                    ProducerStateManager())
        start = max(start, first_base)
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            segment.txn_index.truncate_to(start)
            position = segment.index.lookup(start) if start > segment.base_offset else 0
            for batch_position, info in segment.batches_from(position):
                if info.last_offset >= start and info.producer_id >= 0:
                    data = segment.pread(batch_position, info.size) if info.is_control else b""
                    self._apply_producer_batch(segment, info, data)
        self.producers.forget_before(self.log_start_offset)

    @storage_write
    def write_producer_snapshot(self) -> None:
        """Snapshot the producer state at the log end offset (clean shutdown): loading then
        replays nothing."""
        write_snapshot(self.directory, self._log_end_offset, self.producers, sync=True)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), for
        read_committed fetches."""
        i = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        return collect_aborted_transactions(
            [segment.txn_index for segment in self._segments[i:]], fetch_offset, upper_bound)

    # -- cleaning ---------------------------------------------------------------------------

    @storage_write
    def install_cleaned(self, expected: Sequence[LogSegment], truncations: int,
                        groups: Sequence[StagedGroup], now_ms: int,
                        at_swap_point: SwapHook | None = None) -> bool:
        """Swap the cleaner's staged segments in for the sealed segments they replace.

        `expected` are the segments the cleaner read and `truncations` the log's count of
        them then; when the log has been truncated since, or any of those segments removed or
        made active, the staged files are dropped and False returned. Otherwise the swap is
        committed (`segment_swap`), carried out, and the new segments take the old ones'
        place in memory. `at_swap_point` is a test's hook into the swap's points.
        """
        current = {segment.base_offset: segment for segment in self._segments[:-1]}
        old = [current.get(base) for group in groups for base in group.old_bases]
        if not groups or truncations != self.truncations or any(
            segment is None or all(segment is not e for e in expected) for segment in old
        ):
            finish_swap(self.directory)
            return False
        replaced = [segment for segment in old if segment is not None]
        moves = [name for group in groups for name in group.files]
        incoming = set(moves)
        new_bases = {group.new_base for group in groups}
        deletes = [path.name for segment in replaced
                   for path in (*segment.paths(),
                                segment_path(self.directory, segment.base_offset,
                                             SNAPSHOT_SUFFIX))
                   if path.name not in incoming and path.exists()
                   and not (path.name.endswith(SNAPSHOT_SUFFIX)
                            and segment.base_offset in new_bases)]
        if at_swap_point is not None:
            at_swap_point(self.directory, "staged")
        commit_swap(self.directory, moves, deletes, at_swap_point)
        for segment in replaced:
            segment.close()
        finish_swap(self.directory)
        limits = self._limits()
        fresh = {}
        for group in groups:
            segment, intact = LogSegment.open(self.directory, group.new_base, now_ms)
            if not intact or not segment.load_tail():
                segment.recover(limits)
            segment.seal()
            fresh[group.new_base] = segment
        doomed = {id(segment) for segment in replaced}
        segments: list[LogSegment] = []
        for segment in self._segments:
            if id(segment) not in doomed:
                segments.append(segment)
            elif segment.base_offset in fresh:
                segments.append(fresh[segment.base_offset])
        self._set_segments(segments)
        return True

    # -- durability -------------------------------------------------------------------------

    @storage_write
    def flush(self) -> None:
        """fsync everything up to the current log end offset, then move the recovery point.

        Safe in a worker thread while the loop thread appends; not while it truncates. A log
        deleted meanwhile (its directory renamed) is left as it is.
        """
        end = self._log_end_offset
        recovery_point = self.recovery_point
        segments = self._segments
        for i, segment in enumerate(segments):
            if i + 1 < len(segments) and segments[i + 1].base_offset <= recovery_point:
                continue
            segment.fsync()
        try:
            fsync_directory(self.directory)
        except FileNotFoundError:
            return
        if end > self.recovery_point:
            self.recovery_point = end

    def close(self) -> None:
        """Close the files (no fsync: `flush` first for a clean shutdown)."""
        for segment in self._segments:
            segment.close()

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory.name}, log_start_offset={self.log_start_offset}, "
            f"log_end_offset={self._log_end_offset}, segments={len(self._segments)})"
        )


def _aborted(completed: CompletedTxn) -> AbortedTxn:
    return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                      completed.last_stable_offset)
