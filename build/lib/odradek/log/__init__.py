"""Partition logs in Kafka's on-disk layout: segments, sparse indexes, checkpoints, recovery."""

from .config import LogConfig
from .manager import LogManager
from .partition import (
    AppendResult,
    OffsetOutOfRangeError,
    PartitionLog,
    ReadResult,
    RecordBatchTooLargeError,
)
from .segment import LogSegment

__all__ = [
    "AppendResult",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "ReadResult",
    "RecordBatchTooLargeError",
]
