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


def _str(values: Mapping[str, object], name: str) -> str:
    value = values[name]
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if not isinstance(value, str):
        raise TypeError(f"topic config {name} must be a string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class LogConfig:
    """One partition's log settings; defaults live in `odradek.config`, not here."""

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
    max_message_bytes: int
    cleanup_policy: str
    """Comma-separated: `delete`, `compact` or both."""

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
            max_message_bytes=_int(values, "max.message.bytes"),
            cleanup_policy=_str(values, "cleanup.policy"),
        )

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def delete_enabled(self) -> bool:
        """Whether retention by time and size applies (`delete` in cleanup.policy)."""
        return "delete" in (item.strip() for item in self.cleanup_policy.split(","))
