"""Broker metrics under the names Kafka's Prometheus JMX exporter gives them, so that
existing Kafka dashboards and alerts work. One place defines every name."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
GroupOffsets = Callable[[], Iterable[tuple[str, str, int, int, int]]]
"""(group id, topic, partition, committed offset, log end offset) of every commit."""

DirtyRatios = Callable[[], Iterable[tuple[str, int, float]]]
"""(topic, partition, dirty ratio) of every compacted log."""


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

    def register_replicas(self, under_replicated: Callable[[], float],
                          under_min_isr: Callable[[], float], leaders: Callable[[], float],
                          partitions: Callable[[], float], max_lag: Callable[[], float]) -> None:
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
        Gauge(
            "kafka_server_broker_metadata_metrics_last_applied_record_offset",
            "The last metadata log offset this broker applied.", registry=self.registry,
        ).set_function(applied_offset)

    def register_groups(self, states: GroupStates, offsets: GroupOffsets) -> None:
        self.registry.register(_GroupCollector(states, offsets))

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
    group-coordinator-metrics), and lag under kafka_exporter's, which dashboards chart."""

    def __init__(self, states: GroupStates, offsets: GroupOffsets) -> None:
        self._states = states
        self._offsets = offsets

    def collect(self) -> Iterable[GaugeMetricFamily]:
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        by_state: dict[str, int] = {state: 0 for state in ClassicState}
        by_protocol = {"classic": 0, "consumer": 0}
        consumer_states: dict[str, int] = {}
        members = GaugeMetricFamily("kafka_consumergroup_members",
                                    "Members of a consumer group.", labels=["consumergroup"])
        total = 0
        for group_id, group_type, state, member_count in self._states():
            total += 1
            by_protocol[group_type] = by_protocol.get(group_type, 0) + 1
            if group_type == "classic":
                by_state[state] = by_state.get(state, 0) + 1
            else:
                consumer_states[state.lower()] = consumer_states.get(state.lower(), 0) + 1
            members.add_metric([group_id], member_count)
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
        yield members
        yield from self._lag()

    def _lag(self) -> Iterable[GaugeMetricFamily]:
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Committed offset of a group on a partition.", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "Log end offset minus the group's committed offset.",
                                labels=labels)
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum",
                                    "Lag of a group summed over a topic's partitions.",
                                    labels=["consumergroup", "topic"])
        sums: dict[tuple[str, str], int] = {}
        offsets = 0
        for group_id, topic, partition, committed, end in self._offsets():
            offsets += 1
            behind = max(end - committed, 0)
            current.add_metric([group_id, topic, str(partition)], committed)
            lag.add_metric([group_id, topic, str(partition)], behind)
            sums[(group_id, topic)] = sums.get((group_id, topic), 0) + behind
        for (group_id, topic), total in sorted(sums.items()):
            lag_sum.add_metric([group_id, topic], total)
        yield GaugeMetricFamily("kafka_coordinator_group_groupmetadatamanager_numoffsets",
                                "Committed offsets held by this coordinator.", offsets)
        yield current
        yield lag
        yield lag_sum
