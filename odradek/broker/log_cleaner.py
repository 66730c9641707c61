"""The log cleaner's shell (Kafka's LogCleaner and LogCleanerManager): picks the filthiest
compacted log, has a cleaner worker clean it, swaps the result in, and moves the log's
cleaner checkpoint (`cleaner-offset-checkpoint`, kept by the log manager) past it.

Cleaners are processes, `log.cleaner.threads` of them: cleaning decodes and re-encodes every
record, and in a thread of the broker's process that work would hold the GIL the event loop
needs, so produce and fetch latency would suffer while it runs. A worker reads the segments
through its own file descriptors and writes the cleaned ones into a staging dir; only the
swap, a few renames, runs on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from odradek.broker.broker import Broker
from odradek.broker.cleaner_figures import CleanerFigures, LastCleaning
from odradek.config.kafka_configs import BrokerConfig
from odradek.log.cleaner import CleanerSettings, CleanJob, CleanResult, clean_log, job_for
from odradek.log.cleaning_plan import LogToClean, SegmentSummary, filthiest, log_to_clean
from odradek.log.partition import PartitionLog
from odradek.log.segment import LogSegment
from odradek.log.segment_swap import SwapHook, finish_swap
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.broker.log_cleaner")

TopicPartition = tuple[str, int]


class LogCleaner:
    def __init__(self, broker: Broker, at_swap_point: SwapHook | None = None) -> None:
        """`at_swap_point` is a crash test's hook into the swaps
        (tests/integration/paused_cleaner.py)."""
        self.broker = broker
        self.at_swap_point = at_swap_point
        config = broker.config
        self.threads = config.integer("log.cleaner.threads")
        self.backoff_s = config.integer("log.cleaner.backoff.ms") / 1000
        self.figures = CleanerFigures()
        self.dirty_ratios: dict[TopicPartition, float] = {}
        self._in_progress: set[TopicPartition] = set()
        self._delete_horizons: dict[TopicPartition, int] = {}
        """The latest delete horizon each log's last cleaning left behind."""
        self._pool: ProcessPoolExecutor | None = None
        """Made at the first cleaning: its semaphores and resource tracker process took
        tens of milliseconds of every start, and most brokers clean nothing for a while."""

    @staticmethod
    def enabled(config: BrokerConfig) -> bool:
        return bool(config["log.cleaner.enable"]) and config.integer("log.cleaner.threads") > 0

    def start(self) -> list[asyncio.Task[None]]:
        """Start the cleaners; returns the tasks to cancel at shutdown."""
        return [asyncio.create_task(self._run(cleaner)) for cleaner in range(self.threads)]

    def stop(self) -> None:
        """Kill the workers: a cleaning cut short leaves only its staging dir, which the next
        load deletes."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            for worker in multiprocessing.active_children():
                worker.kill()

    async def _run(self, cleaner: int) -> None:
        while True:
            cleaned = False
            try:
                cleaned = await self.clean_filthiest(cleaner)
            except Exception:
                log.exception("log cleaning failed")
            if not cleaned:
                await asyncio.sleep(self.backoff_s)

    async def clean_filthiest(self, cleaner: int) -> bool:
        """Clean the log most in need of it, as cleaner number `cleaner`; False when none
        is."""
        chosen = self._grab_filthiest(now_ms())
        if chosen is None:
            return False
        key, partition_log, job, expected = chosen
        truncations = partition_log.truncations
        self._in_progress.add(key)
        try:
            loop = asyncio.get_running_loop()
            result = await self._in_worker(job)
            if self.broker.logs.get(*key) is not partition_log:
                await loop.run_in_executor(None, finish_swap, partition_log.directory)
                return True
            if result.groups and not partition_log.install_cleaned(
                    expected, truncations, result.groups, now_ms(), self.at_swap_point):
                log.info("%s-%d changed while it was cleaned; cleaning it again later", *key)
                return True
            if truncations == partition_log.truncations:
                partition_log.cleaner_checkpoint = result.end_offset
            horizon = result.stats.latest_delete_horizon_ms
            if horizon > now_ms():
                self._delete_horizons[key] = horizon
            else:
                self._delete_horizons.pop(key, None)
            await loop.run_in_executor(None, self.broker.logs.checkpoint_cleaning)
            self._record(cleaner, key, result)
        finally:
            self._in_progress.discard(key)
        return True

    async def _in_worker(self, job: CleanJob) -> CleanResult:
        """Run the job in a worker; a worker that dies (killed, out of memory) breaks the
        pool, which is replaced."""
        if self._pool is None:
            self._pool = self._new_pool()
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._pool, clean_log, job, time.monotonic, time.sleep)
        except BrokenProcessPool:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            raise

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.threads, mp_context=multiprocessing.get_context("spawn"))

    def _grab_filthiest(self, now: int
                        ) -> tuple[TopicPartition, PartitionLog, CleanJob, list[LogSegment]] | None:
        logs = {key: partition_log for key, partition_log in self.broker.logs.logs()
                if partition_log.config.compact_enabled and key not in self._in_progress}
        candidates = {key: self._to_clean(partition_log, now)
                      for key, partition_log in logs.items()}
        self.dirty_ratios = {key: c.dirty_ratio for key, c in candidates.items()}
        self.figures.max_dirty_percent = 100 * max(self.dirty_ratios.values(), default=0.0)
        key = filthiest(candidates)
        if key is None:
            key = self._horizon_passed(now, logs)
        if key is None:
            return None
        partition_log, candidate = logs[key], candidates[key]
        expected = list(partition_log.segments[:-1])
        return key, partition_log, self._job(partition_log, candidate, expected, now), expected

    def _horizon_passed(self, now: int, logs: dict[TopicPartition, PartitionLog]
                        ) -> TopicPartition | None:
        """With no log dirty enough, one whose tombstones or markers have reached their
        delete horizon gets a round to remove them (KIP-534)."""
        for key, horizon in list(self._delete_horizons.items()):
            log_ = self.broker.logs.get(*key)
            if log_ is None or not log_.config.compact_enabled:
                del self._delete_horizons[key]
            elif horizon <= now and key in logs:
                return key
        return None

    @staticmethod
    def _to_clean(partition_log: PartitionLog, now: int) -> LogToClean:
        config = partition_log.config
        segments = [SegmentSummary(s.base_offset, s.size, s.largest_timestamp(),
                                   s.rolling_base_timestamp) for s in partition_log.segments]
        return log_to_clean(
            segments, checkpoint=partition_log.cleaner_checkpoint,
            log_start_offset=partition_log.log_start_offset,
            log_end_offset=partition_log.log_end_offset,
            last_stable_offset=partition_log.last_stable_offset, now_ms=now,
            min_compaction_lag_ms=config.min_compaction_lag_ms,
            max_compaction_lag_ms=config.max_compaction_lag_ms,
            min_cleanable_ratio=config.min_cleanable_dirty_ratio)

    def _job(self, partition_log: PartitionLog, candidate: LogToClean,
             expected: list[LogSegment], now: int) -> CleanJob:
        config = self.broker.config
        settings = CleanerSettings(
            map_bytes=config.integer("log.cleaner.dedupe.buffer.size") // self.threads,
            load_factor=float(config["log.cleaner.io.buffer.load.factor"]),  # type: ignore[arg-type]
            io_buffer_bytes=config.integer("log.cleaner.io.buffer.size"),
            max_io_bytes_per_second=float(
                config["log.cleaner.io.max.bytes.per.second"]),  # type: ignore[arg-type]
        )
        return job_for(partition_log, expected, candidate.first_dirty_offset,
                       candidate.first_uncleanable_offset, now, settings)

    def _record(self, cleaner: int, key: TopicPartition, result: CleanResult) -> None:
        stats = result.stats
        figures = self.figures
        figures.cleanings += 1
        figures.bytes_read += stats.bytes_read
        figures.bytes_written += stats.bytes_written
        figures.last[cleaner] = LastCleaning(result.elapsed_s, stats.recopy_percent,
                                             100 * stats.map_utilization)
        log.info("cleaned %s-%d up to offset %d in %.2f s: %d bytes read, %d written "
                 "(%d of %d records kept)", *key, result.end_offset, result.elapsed_s,
                 stats.bytes_read, stats.bytes_written, stats.records_retained,
                 stats.records_read)

    def dirty_ratio_samples(self) -> Iterable[tuple[str, int, float]]:
        return ((topic, partition, ratio)
                for (topic, partition), ratio in self.dirty_ratios.items())
