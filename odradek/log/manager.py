"""Every partition log under one log dir, with Kafka's dir-level files (Kafka's LogManager).

    <log.dir>/recovery-point-offset-checkpoint
    <log.dir>/log-start-offset-checkpoint
    <log.dir>/replication-offset-checkpoint  high watermarks
    <log.dir>/cleaner-offset-checkpoint      where each compacted log's dirty section starts
    <log.dir>/.kafka_cleanshutdown          present only between a clean shutdown and the next load
    <log.dir>/<topic>-<partition>/...

`load`, `checkpoint` and `shutdown` block on disk: run them in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from .checkpoint import (
    CLEANER_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    TopicPartition,
    fsync_directory,
    read_checkpoint,
    write_checkpoint,
)
from .config import LogConfig
from .partition import PartitionLog
from .storage_failure import StorageFailureHandler, storage_errors

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
METADATA_TOPIC = "__cluster_metadata"
"""The metadata log's dir lives beside the partition logs but is not one (as in Kafka)."""
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
"""A partition dir the metadata does not know: kept aside, never loaded (Kafka 3.7+)."""
_NO_RECOVERY = 2**63 - 1


def parse_log_dir_name(name: str) -> TopicPartition | None:
    """`my.topic-name-3` -> ("my.topic-name", 3); None for anything else."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class LogManager:
    def __init__(self, log_dir: Path, config_for: Callable[[str], LogConfig],
                 on_storage_error: StorageFailureHandler | None = None) -> None:
        """`on_storage_error` is given to every log (`PartitionLog.on_storage_error`)."""
        self.log_dir = log_dir
        self._config_for = config_for
        self._on_storage_error = on_storage_error
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._checkpoint_lock = threading.Lock()

    def load(self, now_ms: int) -> None:
        """Open every partition dir; recover from the checkpoints unless shut down cleanly."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery_points = read_checkpoint(self.log_dir / RECOVERY_POINT_CHECKPOINT)
        log_starts = read_checkpoint(self.log_dir / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = read_checkpoint(self.log_dir / REPLICATION_OFFSET_CHECKPOINT)
        cleaned_to = read_checkpoint(self.log_dir / CLEANER_CHECKPOINT)
        for entry in sorted(os.scandir(self.log_dir), key=lambda item: item.name):
            if not entry.is_dir():
                continue
            if entry.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(entry.path)
                continue
            key = parse_log_dir_name(entry.name)
            if key is None or key[0] == METADATA_TOPIC:
                continue
            log = self._logs[key] = PartitionLog.open(
                Path(entry.path),
                self._config_for(key[0]),
                now_ms,
                recovery_point=_NO_RECOVERY if clean else recovery_points.get(key, 0),
                log_start_offset=log_starts.get(key, 0),
            )
            log.high_watermark = high_watermarks.get(key, 0)
            log.on_storage_error = self._on_storage_error
            log.cleaner_checkpoint = cleaned_to.get(key)
        if clean:
            marker.unlink()
            fsync_directory(self.log_dir)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def create(self, topic: str, partition: int, now_ms: int) -> PartitionLog:
        """The log of topic-partition, created (empty) if there is none yet."""
        key = (topic, partition)
        log = self._logs.get(key)
        if log is None:
            directory = self.log_dir / f"{topic}-{partition}"
            with storage_errors(directory, self._on_storage_error):
                log = PartitionLog.open(directory, self._config_for(topic), now_ms)
                log.on_storage_error = self._on_storage_error
                fsync_directory(self.log_dir)
            self._logs[key] = log
        return log

    def delete(self, topic: str, partition: int) -> Path:
        """Detach and retire the log; returns the renamed dir for the caller to remove."""
        return self.retire(self.detach(topic, partition))

    def detach(self, topic: str, partition: int) -> PartitionLog:
        """Forget and close the log (cheap: safe on the event loop)."""
        log = self._logs.pop((topic, partition))
        log.close()
        return log

    def retire(self, log: PartitionLog, suffix: str = DELETE_DIR_SUFFIX) -> Path:
        """Rename a detached log's dir `<topic>-<partition>.<uuid hex>-delete` and fsync the
        log dir (blocking: run in a worker thread). Returns the renamed dir, for the caller to
        remove (shutil.rmtree) in a worker thread."""
        target = self.log_dir / f"{log.directory.name}.{uuid.uuid4().hex}{suffix}"
        os.replace(log.directory, target)
        fsync_directory(self.log_dir)
        return target

    def logs(self) -> Iterable[tuple[TopicPartition, PartitionLog]]:
        """A snapshot of (topic, partition) and log pairs."""
        return list(self._logs.items())

    def checkpoint(self) -> None:
        """Write the three checkpoint files, each atomically.

        As in Kafka, a log start offset is recorded only when it lies past the log's first
        segment base offset (otherwise loading derives it).
        """
        with self._checkpoint_lock, storage_errors(self.log_dir, self._on_storage_error):
            self._write_checkpoints()

    def _write_checkpoints(self) -> None:
        logs = self.logs()
        write_checkpoint(
            self.log_dir / RECOVERY_POINT_CHECKPOINT,
            {key: log.recovery_point for key, log in logs},
        )
        write_checkpoint(
            self.log_dir / LOG_START_OFFSET_CHECKPOINT,
            {
                key: log.log_start_offset
                for key, log in logs
                if log.log_start_offset > log.segments[0].base_offset
            },
        )
        self._write_high_watermarks(logs)

    def checkpoint_high_watermarks(self) -> None:
        """Write replication-offset-checkpoint (Kafka does it every
        replica.high.watermark.checkpoint.interval.ms)."""
        with self._checkpoint_lock, storage_errors(self.log_dir, self._on_storage_error):
            self._write_high_watermarks(self.logs())

    def checkpoint_cleaning(self) -> None:
        """Write cleaner-offset-checkpoint (the cleaner does, after each cleaning)."""
        with self._checkpoint_lock, storage_errors(self.log_dir, self._on_storage_error):
            write_checkpoint(self.log_dir / CLEANER_CHECKPOINT,
                             {key: log.cleaner_checkpoint for key, log in self.logs()
                              if log.cleaner_checkpoint is not None})

    def _write_high_watermarks(self, logs: Iterable[tuple[TopicPartition, PartitionLog]]) -> None:
        write_checkpoint(self.log_dir / REPLICATION_OFFSET_CHECKPOINT,
                         {key: log.high_watermark for key, log in logs})

    def shutdown(self) -> None:
        """Flush every log, checkpoint, close, then leave the clean shutdown marker."""
        logs = self.logs()
        for key, log in logs:
            if self._logs.get(key) is log:  # not deleted meanwhile
                log.flush()
                log.write_producer_snapshot()
        self.checkpoint()
        for _, log in logs:
            log.close()
        marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        with open(marker, "wb") as out:
            os.fsync(out.fileno())
        fsync_directory(self.log_dir)
