"""The pure parts of the share metrics: records counted per acknowledgement type as Kafka's
SharePartitionManager counts them, a ShareFetch's fetch ratio as a percentage per group, each
share-partition's records and batches in flight, lock timeouts, the records of each batch put
in flight and its fetch lock's hold time and ratio (Kafka's arithmetic), and the windowed
average and maximum of share-coordinator-metrics' write latency."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from odradek.broker.share_metrics import (
    ShareGroupMetrics,
    SharePartitionMetrics,
    WindowedStats,
    acknowledged_records,
    fetch_lock_ratio,
)
from odradek.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    SharePartition,
    SharePartitionConfig,
)
from odradek.share.records import StateBatch


def test_a_batch_type_counts_its_range_and_per_offset_types_count_one_each() -> None:
    counts = acknowledged_records([
        AcknowledgementBatch(0, 4, (AcknowledgeType.ACCEPT,)),
        AcknowledgementBatch(5, 8, (AcknowledgeType.RELEASE, AcknowledgeType.GAP,
                                    AcknowledgeType.REJECT, AcknowledgeType.ACCEPT)),
    ])
    assert counts == {AcknowledgeType.ACCEPT: 6, AcknowledgeType.RELEASE: 1,
                      AcknowledgeType.GAP: 1, AcknowledgeType.REJECT: 1}


def test_gaps_are_not_acknowledgements() -> None:
    registry = CollectorRegistry()
    metrics = ShareGroupMetrics(registry, lambda: 2, lambda: 5)
    metrics.record_acknowledgements([AcknowledgementBatch(
        0, 2, (AcknowledgeType.GAP, AcknowledgeType.RENEW, AcknowledgeType.ACCEPT))])
    name = "kafka_server_sharegroupmetrics_recordacknowledgements_total"
    assert {t: registry.get_sample_value(name, {"acktype": t})
            for t in ("Accept", "Release", "Reject", "Renew")} == {
        "Accept": 1, "Release": 0, "Reject": 0, "Renew": 1}
    assert registry.get_sample_value("kafka_server_sharesessioncache_sharesessionscount") == 2
    assert registry.get_sample_value("kafka_server_sharesessioncache_sharepartitionscount") == 5


def test_latency_average_and_maximum_over_the_window() -> None:
    stats = WindowedStats(window_s=60)
    assert all(math.isnan(v) for v in stats.measure(0))
    stats.record(0, 10)
    stats.record(30, 2)
    assert stats.measure(30) == (6, 10)
    assert stats.measure(61) == (2, 2)  # the first sample left the window
    assert all(math.isnan(v) for v in stats.measure(100))


def test_fetch_ratio_is_a_whole_percentage_per_group() -> None:
    registry = CollectorRegistry()
    metrics = ShareGroupMetrics(registry, lambda: 0, lambda: 0)
    metrics.record_fetch_ratio("g1", 3, 2)
    metrics.record_fetch_ratio("g1", 3, 0)
    metrics.record_acquire_time("g2", 12.5)
    ratio = "kafka_server_sharegroupmetrics_requesttopicpartitionsfetchratio"
    assert registry.get_sample_value(f"{ratio}_sum", {"group": "g1"}) == 66
    assert registry.get_sample_value(f"{ratio}_count", {"group": "g1"}) == 2
    assert registry.get_sample_value(f"{ratio}_bucket", {"group": "g1", "le": "0.0"}) == 1
    acquire = "kafka_server_sharegroupmetrics_topicpartitionsacquiretimems"
    assert registry.get_sample_value(f"{acquire}_sum", {"group": "g2"}) == 12.5
    assert registry.get_sample_value(f"{acquire}_count", {"group": "g1"}) is None


def test_share_partition_metrics_count_in_flight_records_batches_and_lock_timeouts() -> None:
    share = SharePartition(SharePartitionConfig(record_lock_duration_ms=100), 0, 0, 0)
    share.acquire("m1", 0, [(0, 4), (5, 9)], 0, 100, batch_size=5)
    share.acknowledge("m1", [AcknowledgementBatch(0, 4, (AcknowledgeType.ACCEPT,))], 0)
    share.acquire("m1", 10, [(10, 12)], 50, 100)
    share.expire_locks(100)  # 5-9's lock ran out; 10-12's not yet
    registry = CollectorRegistry()
    SharePartitionMetrics(registry, lambda: [("g", "orders", 3, share)])
    labels = {"group": "g", "topic": "orders", "partition": "3"}
    prefix = "kafka_server_sharepartitionmetrics_"
    assert {name: registry.get_sample_value(prefix + name, labels) for name in (
        "inflightmessagecount", "inflightbatchcount", "acquisitionlocktimeout_total")} == {
        "inflightmessagecount": 8, "inflightbatchcount": 2, "acquisitionlocktimeout_total": 5}


def test_each_batch_put_in_flight_is_counted_once_by_its_records() -> None:
    """Kafka records InFlightBatchMessageCount for each batch added to the in-flight cache:
    acquired anew (split at batch_size along the fetched batches), or read from the persisted
    state (not the read gap AVAILABLE fills); a batch acquired again is not new."""
    config = SharePartitionConfig(record_lock_duration_ms=100)
    share = SharePartition(config, 0, 0, 0)
    share.acquire("m1", 0, [(0, 4), (5, 9), (10, 11)], 0, 100, batch_size=5)
    assert share.take_new_batch_sizes() == [5, 5, 2]
    assert share.take_new_batch_sizes() == []
    share.expire_locks(100)
    share.acquire("m2", 0, [(0, 4), (5, 9), (10, 11)], 200, 100, batch_size=5)
    assert share.take_new_batch_sizes() == []  # re-acquired, not new
    loaded = SharePartition.from_persisted(config, 1, 1, 10, [
        StateBatch(12, 14, 0, 1), StateBatch(15, 15, 4, 2)])  # 10-11: a read gap
    assert loaded.take_new_batch_sizes() == [3, 1]


def test_the_fetch_lock_ratio_is_kafkas_arithmetic() -> None:
    assert fetch_lock_ratio(0, 0) == 100  # the first fetch: no idle time
    assert fetch_lock_ratio(5, 0) == 100
    assert fetch_lock_ratio(1, 3) == 25
    assert fetch_lock_ratio(0, 50) == 2  # Kafka's 1 / idle when nothing was held
    assert fetch_lock_ratio(2, -1) is None


def test_share_partition_histograms_are_recorded_and_forgotten_per_partition() -> None:
    registry = CollectorRegistry()
    metrics = SharePartitionMetrics(registry, lambda: [])
    metrics.record_batches("g", "orders", 3, [5, 7])
    metrics.record_fetch_lock("g", "orders", 3, 1.0, 3.0)
    metrics.record_fetch_lock("g", "orders", 3, 2.0, -1.0)  # no ratio sample
    labels = {"group": "g", "topic": "orders", "partition": "3"}
    prefix = "kafka_server_sharepartitionmetrics_"

    def value(name: str) -> float | None:
        return registry.get_sample_value(prefix + name, labels)

    assert (value("inflightbatchmessagecount_count"), value("inflightbatchmessagecount_sum")
            ) == (2, 12)
    assert (value("fetchlocktimems_count"), value("fetchlocktimems_sum")) == (2, 3.0)
    assert (value("fetchlockratio_count"), value("fetchlockratio_sum")) == (1, 25)
    metrics.forget("g", "orders", 3)
    metrics.forget("g", "orders", 3)  # twice: nothing left to remove
    assert value("fetchlocktimems_count") is None
    assert value("inflightbatchmessagecount_count") is None
