"""MirrorSourceConnector's metrics (MirrorSourceMetrics) under the names the Prometheus JMX
exporter gives them in Strimzi's MM2 metrics config, so that MM2 dashboards work:
`kafka_connect_mirror_mirrorsourceconnector_<record-count ...>`, gauges labelled source,
target, topic (the target's topic, as in MM2) and partition. As Kafka's metrics compute
them, rates, min, max and avg cover the last two 30-second samples; record-count and
byte-count are cumulative; record-age-ms and replication-latency-ms are the last value.

The mirror copies batches without decoding records, so ages and latencies are taken per
batch, from its maxTimestamp, and counted once per record.

Besides MM2's: the copy's lag per partition, `odradek_mirror_lag_records` and
`odradek_mirror_lag_seconds`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

PREFIX = "kafka_connect_mirror_mirrorsourceconnector_"
LABELS = ("source", "target", "topic", "partition")
SAMPLE_MS = 30_000
"""Kafka's metrics.sample.window.ms; two samples are kept (metrics.num.samples)."""


@dataclass(slots=True)
class _Sample:
    start_ms: int
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")


@dataclass(slots=True)
class Windowed:
    """A Kafka sensor's sampled stats over two 30-second samples."""

    samples: list[_Sample] = field(default_factory=list)
    last: float = float("nan")
    cumulative: float = 0.0

    def record(self, value: float, now_ms: int, weight: int = 1) -> None:
        if not self.samples or now_ms - self.samples[-1].start_ms >= SAMPLE_MS:
            self.samples = [*self.samples[-1:], _Sample(now_ms)]
        sample = self.samples[-1]
        sample.count += weight
        sample.total += value * weight
        sample.low = min(sample.low, value)
        sample.high = max(sample.high, value)
        self.last = value
        self.cumulative += value * weight

    def _live(self, now_ms: int) -> list[_Sample]:
        return [s for s in self.samples if now_ms - s.start_ms < 2 * SAMPLE_MS]

    def rate(self, now_ms: int) -> float:
        """Sum per second over the live samples, as Kafka's Rate (at least one window)."""
        live = self._live(now_ms)
        if not live:
            return 0.0
        elapsed = max(now_ms - live[0].start_ms, SAMPLE_MS)
        return sum(s.total for s in live) * 1000 / elapsed

    def stats(self, now_ms: int) -> tuple[float, float, float]:
        """(min, max, avg); NaN with no recent sample, as Kafka reports."""
        live = [s for s in self._live(now_ms) if s.count]
        if not live:
            return float("nan"), float("nan"), float("nan")
        count = sum(s.count for s in live)
        return (min(s.low for s in live), max(s.high for s in live),
                sum(s.total for s in live) / count)


@dataclass(slots=True)
class PartitionMetrics:
    records: Windowed = field(default_factory=Windowed)
    bytes: Windowed = field(default_factory=Windowed)
    record_age: Windowed = field(default_factory=Windowed)
    replication_latency: Windowed = field(default_factory=Windowed)
    lag_records: int = 0
    lag_seconds: float = 0.0


class MirrorSourceMetrics(Collector):
    """One flow's partition metrics, computed when Prometheus scrapes."""

    def __init__(self, source: str, target: str, registry: CollectorRegistry,
                 clock: Callable[[], int]) -> None:
        self.source = source
        self.target = target
        self._clock = clock
        self._partitions: dict[tuple[str, int], PartitionMetrics] = {}
        registry.register(self)

    def partition(self, target_topic: str, partition: int) -> PartitionMetrics:
        key = (target_topic, partition)
        metrics = self._partitions.get(key)
        if metrics is None:
            metrics = self._partitions[key] = PartitionMetrics()
        return metrics

    def drop(self, target_topic: str, partition: int) -> None:
        """A partition this process no longer copies: its series go (MM2's task stops)."""
        self._partitions.pop((target_topic, partition), None)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self._clock()
        families = {name: GaugeMetricFamily(name, help_text, labels=LABELS) for name, help_text in (
            (PREFIX + "record_count", "Number of source records replicated to the target "
             "cluster."),
            (PREFIX + "record_rate", "Average number of source records replicated to the "
             "target cluster per second."),
            (PREFIX + "byte_count", "Number of bytes replicated to the target cluster."),
            (PREFIX + "byte_rate", "Average number of bytes replicated per second."),
            (PREFIX + "record_age_ms", "The age of incoming source records when replicated "
             "to the target cluster."),
            (PREFIX + "record_age_ms_min", "The min age of incoming source records."),
            (PREFIX + "record_age_ms_max", "The max age of incoming source records."),
            (PREFIX + "record_age_ms_avg", "The average age of incoming source records."),
            (PREFIX + "replication_latency_ms", "Time it takes records to replicate from "
             "source to target cluster."),
            (PREFIX + "replication_latency_ms_min", "Min time it takes records to replicate."),
            (PREFIX + "replication_latency_ms_max", "Max time it takes records to replicate."),
            (PREFIX + "replication_latency_ms_avg", "Average time it takes records to "
             "replicate."),
            ("odradek_mirror_lag_records", "Committed source records not yet copied."),
            ("odradek_mirror_lag_seconds", "How long the copy has been behind the source "
             "(0 when caught up)."),
        )}
        for (topic, partition), metrics in list(self._partitions.items()):
            labels = [self.source, self.target, topic, str(partition)]

            def add(name: str, value: float, labels: list[str] = labels) -> None:
                families[name].add_metric(labels, value)

            add(PREFIX + "record_count", metrics.records.cumulative)
            add(PREFIX + "record_rate", metrics.records.rate(now))
            add(PREFIX + "byte_count", metrics.bytes.cumulative)
            add(PREFIX + "byte_rate", metrics.bytes.rate(now))
            for stem, stat in (("record_age_ms", metrics.record_age),
                               ("replication_latency_ms", metrics.replication_latency)):
                low, high, avg = stat.stats(now)
                add(PREFIX + stem, stat.last)
                add(PREFIX + stem + "_min", low)
                add(PREFIX + stem + "_max", high)
                add(PREFIX + stem + "_avg", avg)
            add("odradek_mirror_lag_records", metrics.lag_records)
            add("odradek_mirror_lag_seconds", metrics.lag_seconds)
        return iter(families.values())
