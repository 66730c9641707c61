"""Share-group metrics under the names Kafka's Prometheus JMX exporter gives Kafka 4.3's:
kafka.server:type=ShareGroupMetrics (the share-partition leader: records acknowledged per
type, share-partition load time, and per group the share of a ShareFetch's partitions it
could acquire from and how long it took), kafka.server:type=SharePartitionMetrics (each
share-partition's records and batches in flight, the records of each batch put in flight,
its fetch lock's hold time and ratio, and acquisition locks that ran out),
kafka.server:type=ShareSessionCache (share sessions and
their partitions) and kafka.server:type=share-coordinator-metrics (state writes and their
latency)."""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from odradek.broker.metrics import LATENCY_BUCKETS_MS
from odradek.runtime.windowed_rate import WINDOW_S
from odradek.share.partition import AcknowledgementBatch, AcknowledgeType, SharePartition

ACK_TYPES = {AcknowledgeType.ACCEPT: "Accept", AcknowledgeType.RELEASE: "Release",
             AcknowledgeType.REJECT: "Reject", AcknowledgeType.RENEW: "Renew"}
"""ShareGroupMetrics' ackType tag: AcknowledgeType's name, capitalized (gaps are left out)."""
RATIO_BUCKETS = (0, 10, 25, 50, 75, 90, 100)
"""Percentages."""
BATCH_RECORD_BUCKETS = (1, 2, 5, 10, 50, 100, 500, 1000, 5000)
"""Records per batch."""


def acknowledged_records(batches: Iterable[AcknowledgementBatch]) -> Tally[int]:
    """Records per acknowledgement type, as SharePartitionManager counts them: a batch's one
    type for its whole range, or one type per offset."""
    counts: Tally[int] = Tally()
    for batch in batches:
        if len(batch.acknowledge_types) == 1:
            counts[batch.acknowledge_types[0]] += batch.last_offset - batch.first_offset + 1
        else:
            counts.update(batch.acknowledge_types)
    return counts


class ShareGroupMetrics:
    """The share-partition leader's and the share session cache's metrics."""

    def __init__(self, registry: CollectorRegistry, sessions: Callable[[], int],
                 session_partitions: Callable[[], int]) -> None:
        self.acknowledgements = Counter(
            "kafka_server_sharegroupmetrics_recordacknowledgements",
            "Records acknowledged, per acknowledgement type (RecordAcknowledgementsPerSec).",
            ["acktype"], registry=registry)
        for name in ACK_TYPES.values():
            self.acknowledgements.labels(name)
        self.partition_load_time_ms = Histogram(
            "kafka_server_sharegroupmetrics_partitionloadtimems",
            "Time to load a share-partition's state from the share coordinator, in "
            "milliseconds.", buckets=LATENCY_BUCKETS_MS, registry=registry)
        self.fetch_ratio = Histogram(
            "kafka_server_sharegroupmetrics_requesttopicpartitionsfetchratio",
            "Percentage of a ShareFetch's partitions it could acquire from, per group "
            "(RequestTopicPartitionsFetchRatio).", ["group"], buckets=RATIO_BUCKETS,
            registry=registry)
        self.acquire_time_ms = Histogram(
            "kafka_server_sharegroupmetrics_topicpartitionsacquiretimems",
            "Milliseconds from a ShareFetch's arrival (or its last acquisition) until it could "
            "acquire from its partitions, or ended without, per group "
            "(TopicPartitionsAcquireTimeMs).",
            ["group"], buckets=LATENCY_BUCKETS_MS, registry=registry)
        prefix = "kafka_server_sharesessioncache_"
        Gauge(prefix + "sharesessionscount", "Share sessions this broker holds.",
              registry=registry).set_function(sessions)
        Gauge(prefix + "sharepartitionscount", "Partitions in this broker's share sessions.",
              registry=registry).set_function(session_partitions)

    def record_acquire_time(self, group: str, elapsed_ms: float) -> None:
        """A ShareFetch could acquire from its partitions `elapsed_ms` after it arrived (or
        after its last acquisition, when it waited on for records), or ended without."""
        self.acquire_time_ms.labels(group).observe(elapsed_ms)

    def record_fetch_ratio(self, group: str, partitions: int, acquirable: int) -> None:
        """A ShareFetch answered: of its `partitions`, `acquirable` could be acquired from."""
        self.fetch_ratio.labels(group).observe(100 * acquirable // partitions)

    def record_acknowledgements(self, batches: Iterable[AcknowledgementBatch]) -> None:
        for ack_type, count in acknowledged_records(batches).items():
            name = ACK_TYPES.get(AcknowledgeType(ack_type)) if ack_type in ACK_TYPES else None
            if name is not None:  # gaps are no records
                self.acknowledgements.labels(name).inc(count)


class WindowedStats:
    """Kafka's Avg and Max stats over the recent window; NaN with no sample in it."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, float]] = deque()

    def record(self, now_s: float, value: float) -> None:
        self._samples.append((now_s, value))

    def measure(self, now_s: float) -> tuple[float, float]:
        """(average, maximum) of the values recorded within the window."""
        while self._samples and self._samples[0][0] <= now_s - self.window_s:
            self._samples.popleft()
        values = [v for _, v in self._samples]
        if not values:
            return math.nan, math.nan
        return sum(values) / len(values), max(values)


SharePartitions = Callable[[], Iterable[tuple[str, str, int, SharePartition]]]
"""The share-partitions this broker leads, as (group, topic, partition, state)."""


def fetch_lock_ratio(held_ms: float, idle_ms: float) -> int | None:
    """Kafka's FetchLockRatio sample, in percent: the time a fetch held a share-partition's
    fetch lock over that time plus the time the lock was idle before it (SharePartition's
    recordFetchLockRatioMetric, its edge cases included); None for a negative idle time."""
    if idle_ms < 0:
        return None
    if held_ms + idle_ms == 0:
        ratio = 1.0
    elif held_ms == 0:
        ratio = 1.0 / idle_ms
    else:
        ratio = held_ms / (held_ms + idle_ms)
    return int(ratio * 100)


class SharePartitionMetrics(Collector):
    """SharePartitionMetrics per group, topic and partition: InFlightMessageCount,
    InFlightBatchCount and AcquisitionLockTimeoutPerSec read from the share-partitions at
    each scrape; InFlightBatchMessageCount, FetchLockTimeMs and FetchLockRatio recorded as
    they happen."""

    PREFIX = "kafka_server_sharepartitionmetrics_"
    LABELS = ("group", "topic", "partition")

    def __init__(self, registry: CollectorRegistry, partitions: SharePartitions) -> None:
        self.partitions = partitions
        self.batch_records = Histogram(
            self.PREFIX + "inflightbatchmessagecount", "Records of each batch put in flight "
            "(InFlightBatchMessageCount).", self.LABELS, buckets=BATCH_RECORD_BUCKETS,
            registry=registry)
        self.fetch_lock_time_ms = Histogram(
            self.PREFIX + "fetchlocktimems", "Milliseconds a fetch held the share-partition's "
            "fetch lock (FetchLockTimeMs).", self.LABELS, buckets=LATENCY_BUCKETS_MS,
            registry=registry)
        self.fetch_lock_ratio = Histogram(
            self.PREFIX + "fetchlockratio", "Percentage of the time since the previous fetch "
            "released the fetch lock that this fetch held it (FetchLockRatio).", self.LABELS,
            buckets=RATIO_BUCKETS, registry=registry)
        registry.register(self)

    def record_batches(self, group: str, topic: str, partition: int,
                       sizes: Iterable[int]) -> None:
        for size in sizes:
            self.batch_records.labels(group, topic, str(partition)).observe(size)

    def record_fetch_lock(self, group: str, topic: str, partition: int, held_ms: float,
                          idle_ms: float) -> None:
        """A fetch released the fetch lock it held `held_ms`, `idle_ms` after the previous
        fetch had released it (0 for the first)."""
        labels = (group, topic, str(partition))
        self.fetch_lock_time_ms.labels(*labels).observe(held_ms)
        ratio = fetch_lock_ratio(held_ms, idle_ms)
        if ratio is not None:
            self.fetch_lock_ratio.labels(*labels).observe(ratio)

    def forget(self, group: str, topic: str, partition: int) -> None:
        """A share-partition no longer held here: its recorded metrics go, as in Kafka."""
        labels = (group, topic, str(partition))
        for histogram in (self.batch_records, self.fetch_lock_time_ms, self.fetch_lock_ratio):
            with contextlib.suppress(KeyError):
                histogram.remove(*labels)

    def collect(self) -> Iterable[GaugeMetricFamily | CounterMetricFamily]:
        messages = GaugeMetricFamily(self.PREFIX + "inflightmessagecount", "Records in flight "
                                     "(start offset to end offset).", labels=self.LABELS)
        batches = GaugeMetricFamily(self.PREFIX + "inflightbatchcount", "Batches in flight.",
                                    labels=self.LABELS)
        timeouts = CounterMetricFamily(self.PREFIX + "acquisitionlocktimeout", "Records whose "
                                       "acquisition lock ran out (AcquisitionLockTimeoutPerSec).",
                                       labels=self.LABELS)
        for group, topic, partition, share in self.partitions():
            labels = [group, topic, str(partition)]
            messages.add_metric(labels, share.in_flight_count())
            batches.add_metric(labels, share.in_flight_batch_count())
            timeouts.add_metric(labels, share.lock_timeouts)
        yield from (messages, batches, timeouts)


class ShareCoordinatorMetrics(Collector):
    """share-coordinator-metrics: write-total (a share-partition's state written, or its
    leader epoch recorded by a read) and write-latency-avg/-max (a WriteShareGroupState
    request, records committed) and last-pruned-offset (per `__share_group_state`
    partition)."""

    PREFIX = "kafka_server_share_coordinator_metrics_"

    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = Counter(self.PREFIX + "write", "Share-group state writes.",
                              registry=registry)
        self.last_pruned_offset = Gauge(
            self.PREFIX + "last_pruned_offset", "The offset at which the share-group state "
            "topic was last pruned.", ["topic", "partition"], registry=registry)
        self.latency = WindowedStats()
        registry.register(self)

    def record_latency(self, latency_ms: float) -> None:
        self.latency.record(time.monotonic(), latency_ms)

    def collect(self) -> Iterable[GaugeMetricFamily]:
        average, maximum = self.latency.measure(time.monotonic())
        yield GaugeMetricFamily(self.PREFIX + "write_latency_avg", "Average time of a "
                                "share-group state write call, in milliseconds.", value=average)
        yield GaugeMetricFamily(self.PREFIX + "write_latency_max", "Longest share-group state "
                                "write call, in milliseconds.", value=maximum)
