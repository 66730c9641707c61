"""The pure parts of the share metrics: records counted per acknowledgement type as Kafka's
SharePartitionManager counts them, and the windowed average and maximum of
share-coordinator-metrics' write latency."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry

from odradek.broker.share_metrics import (
    ShareGroupMetrics,
    WindowedStats,
    acknowledged_records,
)
from odradek.share.partition import AcknowledgementBatch, AcknowledgeType


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
