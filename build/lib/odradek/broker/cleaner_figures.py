"""What the log cleaner reports, for its metrics: a leaf both the cleaner and the metrics
import."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class LastCleaning:
    elapsed_s: float
    recopy_percent: float
    buffer_utilization_percent: float


@dataclass(slots=True)
class CleanerFigures:
    """What the cleaner metrics show (Kafka's LogCleaner and LogCleanerManager gauges). As in
    Kafka, the per-cleaning gauges aggregate each cleaner's last cleaning: the maximum time
    and buffer utilization, the mean recopy percent."""

    last: dict[int, LastCleaning] = field(default_factory=dict)
    """Each cleaner's (worker task's) last cleaning."""
    max_dirty_percent: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    cleanings: int = 0

    @property
    def max_clean_time_s(self) -> float:
        return max((c.elapsed_s for c in self.last.values()), default=0.0)

    @property
    def recopy_percent(self) -> float:
        last = self.last.values()
        return sum(c.recopy_percent for c in last) / len(last) if last else 0.0

    @property
    def max_buffer_utilization_percent(self) -> float:
        return max((c.buffer_utilization_percent for c in self.last.values()), default=0.0)
