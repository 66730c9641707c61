"""The topic configs a partition log obeys, under Kafka's names (`LogConfig` in Kafka)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

LOG_APPEND_TIME = "LogAppendTime"
CREATE_TIME = "CreateTime"


def _int(values: Mapping[str, object], name: str) -> int:
    value = values[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"topic config {name} must be an int, got {value!r}")
    return value


def _float(values: Mapping[str, object], name: str) -> float:
    value = values[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"topic config {name} must be a number, got {value!r}")
    return float(value)


def _str(values: Mapping[str, object], name: str) -> str:
    value = values[name]
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if not isinstance(value, str):
        raise TypeError(f"topic config {name} must be a string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class LogConfig:
    """One partition's log settings; defaults live in `odradek.config.kafka_configs`, not here."""

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    flush_messages: int
    flush_ms: int
    file_delete_delay_ms: int
    message_timestamp_type: str
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    max_message_bytes: int
    cleanup_policy: str
    """Comma-separated: `delete`, `compact` or both."""
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float

    @classmethod
    def from_topic_config(cls, values: Mapping[str, object]) -> LogConfig:
        """Build from parsed topic config values keyed by Kafka's names (all required)."""
        return cls(
            segment_bytes=_int(values, "segment.bytes"),
            segment_ms=_int(values, "segment.ms"),
            segment_jitter_ms=_int(values, "segment.jitter.ms"),
            segment_index_bytes=_int(values, "segment.index.bytes"),
            index_interval_bytes=_int(values, "index.interval.bytes"),
            retention_ms=_int(values, "retention.ms"),
            retention_bytes=_int(values, "retention.bytes"),
            flush_messages=_int(values, "flush.messages"),
            flush_ms=_int(values, "flush.ms"),
            file_delete_delay_ms=_int(values, "file.delete.delay.ms"),
            message_timestamp_type=_str(values, "message.timestamp.type"),
            message_timestamp_before_max_ms=_int(values, "message.timestamp.before.max.ms"),
            message_timestamp_after_max_ms=_int(values, "message.timestamp.after.max.ms"),
            max_message_bytes=_int(values, "max.message.bytes"),
            cleanup_policy=_str(values, "cleanup.policy"),
            delete_retention_ms=_int(values, "delete.retention.ms"),
            min_compaction_lag_ms=_int(values, "min.compaction.lag.ms"),
            max_compaction_lag_ms=_int(values, "max.compaction.lag.ms"),
            min_cleanable_dirty_ratio=_float(values, "min.cleanable.dirty.ratio"),
        )

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def delete_enabled(self) -> bool:
        """Whether retention by time and size applies (`delete` in cleanup.policy)."""
        return "delete" in self._policies()

    @property
    def compact_enabled(self) -> bool:
        """Whether the log cleaner compacts this log (`compact` in cleanup.policy)."""
        return "compact" in self._policies()

    def _policies(self) -> list[str]:
        return [item.strip() for item in self.cleanup_policy.split(",")]
