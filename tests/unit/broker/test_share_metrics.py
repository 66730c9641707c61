"""The pure parts of the share metrics: records counted per acknowledgement type as Kafka's
SharePartitionManager counts them, a ShareFetch's fetch ratio as a percentage per group, each
share-partition's records and batches in flight and lock timeouts, and the windowed average
and maximum of share-coordinator-metrics' write latency."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from odradek.broker.share_metrics import (
    ShareGroupMetrics,
    SharePartitionMetrics,
    WindowedStats,
    acknowledged_records,
)
from odradek.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    SharePartition,
    SharePartitionConfig,
)


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
