"""Broker metrics under the names Kafka's Prometheus JMX exporter gives them, so that
existing Kafka dashboards and alerts work. One place defines every name."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from odradek.broker.cleaner_figures import CleanerFigures
from odradek.group.classic_state import ClassicState

LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)

PartitionSizes = Callable[[], Iterable[tuple[str, int, int]]]
GroupStates = Callable[[], Iterable[tuple[str, str, str, int]]]
"""(group id, group type `classic`/`consumer`, state, member count) of every group."""
PartitionStates = Callable[[], Iterable[tuple[str, int, bool, int, int, int]]]
"""(topic, partition, led here, replication factor, ISR size, min.insync.replicas) of every
partition with a replica on this broker."""

DirtyRatios = Callable[[], Iterable[tuple[str, int, float]]]
"""(topic, partition, dirty ratio) of every compacted log."""


@dataclass(frozen=True, slots=True)
class PartitionFigures:
    """Kafka's per-partition gauges (kafka.cluster:type=Partition): a leader reports them,
    a follower reports 0s."""

    under_replicated: int
    in_sync_replicas: int
    under_min_isr: int
    at_min_isr: int
    replicas: int


def partition_figures(leader: bool, replication_factor: int, isr: int,
                      min_isr: int) -> PartitionFigures:
    """Kafka's Partition gauges; `min_isr` is the effective one (replication/leader.py,
    effective_min_isr)."""
    if not leader:
        return PartitionFigures(0, 0, 0, 0, 0)
    return PartitionFigures(int(isr < replication_factor), isr, int(isr < min_isr),
                            int(isr == min_isr), replication_factor)


@dataclass(frozen=True, slots=True)
class TopicMetrics:
    """One topic's BrokerTopicMetrics counters, bound once so that the produce and fetch
    paths pay a dict lookup, not a label lookup, per partition."""

    messages_in: Counter
    bytes_in: Counter
    bytes_out: Counter
    total_produce: Counter
    failed_produce: Counter
    total_fetch: Counter
    failed_fetch: Counter


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry, partition_sizes: PartitionSizes) -> None:
        self.registry = registry
        self._topics: dict[str, TopicMetrics] = {}
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
            "Record bytes fetched by consumers.", ["topic"], registry=registry,
        )
        self.replication_bytes_in = Counter(
            "kafka_server_brokertopicmetrics_replicationbytesin",
            "Record bytes this broker's followers fetched from leaders.", registry=registry,
        )
        self.replication_bytes_out = Counter(
            "kafka_server_brokertopicmetrics_replicationbytesout",
            "Record bytes leaders here sent to followers.", registry=registry,
        )
        prefix = "kafka_server_brokertopicmetrics_"
        self.total_produce, self.failed_produce, self.total_fetch, self.failed_fetch = (
            Counter(prefix + name, doc, ["topic"], registry=registry) for name, doc in (
                ("totalproducerequests", "Partitions of Produce requests for this topic."),
                ("failedproducerequests", "Partitions of Produce requests refused."),
                ("totalfetchrequests", "Partitions of Fetch requests (consumers' and "
                 "followers') for this topic."),
                ("failedfetchrequests", "Partitions of Fetch requests that failed with an "
                 "unexpected error (Kafka leaves out not-leader, unknown-partition, "
                 "fenced-epoch and offset-out-of-range answers)."),
            ))
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
        self.rebalances = Counter(
            "kafka_server_group_coordinator_metrics_group_rebalance",
            "Rebalances completed (classic: a generation synced; consumer: a new group epoch).",
            ["protocol"], registry=registry,
        )
        self.rebalance_time_ms = Histogram(
            "kafka_server_group_coordinator_metrics_rebalance_time_ms",
            "Time from a rebalance's start to its completion, in milliseconds.", ["protocol"],
            buckets=LATENCY_BUCKETS_MS, registry=registry,
        )

        self.isr_shrinks = Counter(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks this broker asked for as a partition leader.", registry=registry,
        )
        self.isr_expands = Counter(
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions this broker asked for as a partition leader.", registry=registry,
        )

    def topic(self, name: str) -> TopicMetrics:
        """The counters of topic `name`, every one of its series made at first sight."""
        stats = self._topics.get(name)
        if stats is None:
            stats = self._topics[name] = TopicMetrics(*(
                counter.labels(name) for counter in (
                    self.messages_in, self.bytes_in, self.bytes_out, self.total_produce,
                    self.failed_produce, self.total_fetch, self.failed_fetch)))
        return stats

    def register_host(self, log_dirs: list[Path],
                      connections: Mapping[str, Callable[[], float]]) -> None:
        """Kafka's process-level broker gauges: connections per listener (SocketServer's
        connection-count), /proc/self/io (KafkaServer's linux-disk-*-bytes) and log
        directories it cannot use (LogManager's OfflineLogDirectoryCount)."""
        connection_count = Gauge(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections, per listener and network processor (Odradek has one "
            "per listener: its event loop).", ["listener", "networkProcessor"],
            registry=self.registry)
        for listener, count in connections.items():
            connection_count.labels(listener, "0").set_function(count)
        Gauge("kafka_log_logmanager_offlinelogdirectorycount", "Log directories that are "
              "not writable directories (Odradek does not take a directory offline; it "
              "counts the ones it could not use).", registry=self.registry
              ).set_function(lambda: offline_log_dirs(log_dirs))
        self.registry.register(_LinuxIoCollector())

    def register_replicas(self, under_replicated: Callable[[], float],
                          under_min_isr: Callable[[], float], leaders: Callable[[], float],
                          partitions: Callable[[], float], max_lag: Callable[[], float],
                          states: PartitionStates) -> None:
        self.registry.register(_PartitionCollector(states))
        prefix = "kafka_server_replicamanager_"
        for name, doc, read in (
            ("underreplicatedpartitions", "Led partitions whose ISR lacks a replica.",
             under_replicated),
            ("underminisrpartitioncount", "Led partitions whose ISR is below "
             "min.insync.replicas.", under_min_isr),
            ("leadercount", "Partitions this broker leads.", leaders),
            ("partitioncount", "Partitions with a replica on this broker.", partitions),
        ):
            Gauge(prefix + name, doc, registry=self.registry).set_function(read)
        Gauge("kafka_server_replicafetchermanager_maxlag", "Messages the most lagging "
              "partition this broker follows is behind its leader's high watermark.",
              registry=self.registry).set_function(max_lag)

    def register_transactions(self, ongoing: Callable[[], float],
                              producer_ids: Callable[[], float]) -> None:
        """Transaction coordinator and producer state figures (KIP-854's ProducerIdCount)."""
        prefix = "kafka_server_transaction_coordinator_metrics_"
        Gauge(prefix + "ongoing_transactions", "Transactions this coordinator has open.",
              registry=self.registry).set_function(ongoing)
        Gauge("kafka_server_replicamanager_produceridcount", "Producer ids whose state the "
              "partitions on this broker keep.", registry=self.registry
              ).set_function(producer_ids)
        self.timed_out_aborts = Counter(
            prefix + "timed_out_aborts", "Transactions aborted for exceeding their timeout.",
            registry=self.registry)
        self.producer_ids_allocated = Counter(
            prefix + "producer_ids_allocated", "Producer ids this broker handed out "
            "(InitProducerId).", registry=self.registry)

    def register_cleaner(self, figures: CleanerFigures, dirty_ratios: DirtyRatios) -> None:
        """Kafka's LogCleaner and LogCleanerManager gauges, plus byte counts and each
        compacted log's dirty ratio."""
        for name, doc, read in (
            ("kafka_log_logcleaner_max_clean_time_secs", "Longest of the cleaners' last "
             "cleanings, in seconds.", lambda: figures.max_clean_time_s),
            ("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes written as a percentage "
             "of bytes read, averaged over the cleaners' last cleanings.",
             lambda: figures.recopy_percent),
            ("kafka_log_logcleaner_max_buffer_utilization_percent", "How full the offset map "
             "got, the most over the cleaners' last cleanings.",
             lambda: figures.max_buffer_utilization_percent),
            ("kafka_log_logcleanermanager_max_dirty_percent", "Dirty ratio of the filthiest "
             "compacted log, in percent.", lambda: figures.max_dirty_percent),
        ):
            Gauge(name, doc, registry=self.registry).set_function(read)
        for name, doc, total in (
            ("kafka_log_logcleaner_bytes_read", "Bytes the cleaners read.",
             lambda: figures.bytes_read),
            ("kafka_log_logcleaner_bytes_written", "Bytes the cleaners wrote.",
             lambda: figures.bytes_written),
            ("kafka_log_logcleaner_cleanings", "Cleanings completed.",
             lambda: figures.cleanings),
        ):
            self.registry.register(_CounterFunction(name, doc, total))
        self.registry.register(_DirtyRatioCollector(dirty_ratios))

    def count_isr_change(self, grown: bool) -> None:
        (self.isr_expands if grown else self.isr_shrinks).inc()

    def register_metadata(self, applied_offset: Callable[[], float]) -> None:
        Gauge(  # type=broker-metadata-metrics, as Strimzi's JMX exporter rules name it
            "kafka_server_brokermetadatametrics_last_applied_record_offset",
            "The last metadata log offset this broker applied.", registry=self.registry,
        ).set_function(applied_offset)

    def register_groups(self, states: GroupStates, offset_count: Callable[[], int]) -> None:
        self.registry.register(_GroupCollector(states, offset_count))

    def count_rebalance(self, protocol: str, duration_ms: int) -> None:
        self.rebalances.labels(protocol).inc()
        self.rebalance_time_ms.labels(protocol).observe(duration_ms)

    def count_error(self, request: str, code: int) -> None:
        """Kafka's ErrorsPerSec: every error code a response carries, at any level."""
        self.errors.labels(request, ErrorCode(code).name.upper()).inc()


class _CounterFunction(Collector):
    """A counter whose total lives elsewhere (exposed as `<name>_total`)."""

    def __init__(self, name: str, doc: str, total: Callable[[], float]) -> None:
        self._name, self._doc, self._total = name, doc, total

    def collect(self) -> Iterable[CounterMetricFamily]:
        yield CounterMetricFamily(self._name, self._doc, value=self._total())


class _DirtyRatioCollector(Collector):
    def __init__(self, dirty_ratios: DirtyRatios) -> None:
        self._dirty_ratios = dirty_ratios

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "kafka_log_logcleanermanager_dirty_ratio", "Dirty bytes over cleanable bytes of "
            "a compacted log, as of the cleaner's last look.", labels=["topic", "partition"])
        for topic, partition, ratio in self._dirty_ratios():
            family.add_metric([topic, str(partition)], ratio)
        yield family


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


class _GroupCollector(Collector):
    """Group counts under Kafka's names (GroupMetadataManager's NumGroups* and KIP-848's
    group-coordinator-metrics). Lag and members are Kafka Exporter's series: the active
    controller exports those, for every group (controller/cluster_exporter.py)."""

    def __init__(self, states: GroupStates, offset_count: Callable[[], int]) -> None:
        self._states = states
        self._offset_count = offset_count

    def collect(self) -> Iterable[GaugeMetricFamily]:
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        by_state: dict[str, int] = {state: 0 for state in ClassicState}
        by_protocol = {"classic": 0, "consumer": 0}
        consumer_states: dict[str, int] = {}
        share_states: dict[str, int] = {}
        total = 0
        for _, group_type, state, _ in self._states():
            total += 1
            by_protocol[group_type] = by_protocol.get(group_type, 0) + 1
            if group_type == "classic":
                by_state[state] = by_state.get(state, 0) + 1
            else:
                states = share_states if group_type == "share" else consumer_states
                states[state.lower()] = states.get(state.lower(), 0) + 1
        yield GaugeMetricFamily(prefix + "numgroups", "Groups on this coordinator.", total)
        for state in ClassicState:
            yield GaugeMetricFamily(prefix + "numgroups" + state.lower(),
                                    f"Classic groups in state {state}.", by_state[state])
        counts = GaugeMetricFamily("kafka_server_group_coordinator_metrics_group_count",
                                   "Groups per protocol.", labels=["protocol"])
        for protocol, count in sorted(by_protocol.items()):
            counts.add_metric([protocol], count)
        yield counts
        consumer = GaugeMetricFamily(
            "kafka_server_group_coordinator_metrics_consumer_group_count",
            "Consumer-protocol (KIP-848) groups per state.", labels=["state"])
        for state, count in sorted(consumer_states.items()):
            consumer.add_metric([state], count)
        yield consumer
        share = GaugeMetricFamily(
            "kafka_server_group_coordinator_metrics_share_group_count",
            "Share groups (KIP-932) per state.", labels=["state"])
        for state, count in sorted(share_states.items()):
            share.add_metric([state], count)
        yield share
        yield GaugeMetricFamily(prefix + "numoffsets",
                                "Committed offsets held by this coordinator.",
                                self._offset_count())


class _PartitionCollector(Collector):
    def __init__(self, states: PartitionStates) -> None:
        self._states = states

    def collect(self) -> Iterable[GaugeMetricFamily]:
        labels = ["topic", "partition"]
        families = [GaugeMetricFamily("kafka_cluster_partition_" + name, doc, labels=labels)
                    for name, doc in (
            ("underreplicated", "1 if this broker leads the partition and its ISR lacks a "
             "replica."),
            ("insyncreplicascount", "The partition's ISR size, on its leader (else 0)."),
            ("underminisr", "1 if this broker leads the partition and its ISR is below the "
             "effective min.insync.replicas."),
            ("atminisr", "1 if this broker leads the partition and its ISR is exactly the "
             "effective min.insync.replicas."),
            ("replicascount", "The partition's replication factor, on its leader (else 0)."),
        )]
        for topic, partition, leader, replication, isr, min_isr in self._states():
            figures = partition_figures(leader, replication, isr, min_isr)
            values = (figures.under_replicated, figures.in_sync_replicas,
                      figures.under_min_isr, figures.at_min_isr, figures.replicas)
            for family, value in zip(families, values, strict=True):
                family.add_metric([topic, str(partition)], value)
        yield from families


def offline_log_dirs(log_dirs: list[Path]) -> int:
    """How many of `log_dirs` are not directories this process may write in."""
    return sum(not (d.is_dir() and os.access(d, os.W_OK | os.X_OK)) for d in log_dirs)


def read_proc_io(text: str) -> tuple[int, int]:
    """(read_bytes, write_bytes) of a /proc/<pid>/io text: bytes that reached the storage
    layer, which is what Kafka's LinuxIoMetricsCollector reports."""
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return int(fields.get("read_bytes", 0)), int(fields.get("write_bytes", 0))


class _LinuxIoCollector(Collector):
    """kafka.server:type=KafkaServer linux-disk-read-bytes and -write-bytes: running totals
    typed as gauges, as Kafka's are (none where /proc/self/io cannot be read)."""

    def collect(self) -> Iterable[GaugeMetricFamily]:
        try:
            read, written = read_proc_io(Path("/proc/self/io").read_text())
        except OSError:
            return
        prefix = "kafka_server_kafkaserver_linux_disk_"
        yield GaugeMetricFamily(prefix + "read_bytes", "Bytes this process has read from "
                                "storage (/proc/self/io read_bytes).", value=read)
        yield GaugeMetricFamily(prefix + "write_bytes", "Bytes this process has written "
                                "to storage (/proc/self/io write_bytes).", value=written)
