"""Broker metrics under the names Kafka's Prometheus JMX exporter gives them, so that
existing Kafka dashboards and alerts work. One place defines every name."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)

PartitionSizes = Callable[[], Iterable[tuple[str, int, int]]]


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry, partition_sizes: PartitionSizes) -> None:
        self.registry = registry
        self.messages_in = Counter(
            "kafka_server_brokertopicmetrics_messagesin",
            "Messages appended to the log.", ["topic"], registry=registry,
        )
        self.bytes_in = Counter(
            "kafka_server_brokertopicmetrics_bytesin",
            "Record bytes produced.", ["topic"], registry=registry,
        )
        self.bytes_out = Counter(
            "kafka_server_brokertopicmetrics_bytesout",
            "Record bytes fetched.", ["topic"], registry=registry,
        )
        self.failed_produce = Counter(
            "kafka_server_brokertopicmetrics_failedproducerequests",
            "Produce partition requests that failed.", ["topic"], registry=registry,
        )
        self.requests = Counter(
            "kafka_network_requestmetrics_requests",
            "Requests received, per API and version.", ["request", "version"], registry=registry,
        )
        self.errors = Counter(
            "kafka_network_requestmetrics_errors",
            "Error codes returned, per API.", ["request", "error"], registry=registry,
        )
        self.total_time_ms = Histogram(
            "kafka_network_requestmetrics_totaltimems",
            "Time from request received to response ready, in milliseconds.", ["request"],
            buckets=LATENCY_BUCKETS_MS, registry=registry,
        )
        registry.register(_LogSizeCollector(partition_sizes))

    def count_error(self, request: str, code: int) -> None:
        """Kafka's ErrorsPerSec: every error code a response carries, at any level."""
        self.errors.labels(request, ErrorCode(code).name.upper()).inc()


class _LogSizeCollector(Collector):
    def __init__(self, partition_sizes: PartitionSizes) -> None:
        self._partition_sizes = partition_sizes

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "kafka_log_log_size", "Bytes of a partition's log on disk.",
            labels=["topic", "partition"],
        )
        for topic, partition, size in self._partition_sizes():
            family.add_metric([topic, str(partition)], size)
        yield family
