"""The mirroring audit's latest results as Prometheus series, from the records the audit job
(`odradek.spark.audit`) writes to its compacted topic: one record per (topic, bucket), the
newest per key winning, as compaction keeps them. A topic's latest results are the buckets
of its newest run (the highest `audited_at_ms`), so a bucket an older run failed and a newer
run no longer covers stops counting. Pure: `audit_reader.py` feeds it the records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily

from odradek.spark.audit_contract import FAILED, STATUSES

BUCKETS = "odradek_audit_buckets"
MISSING_RECORDS = "odradek_audit_missing_records"
EXTRA_RECORDS = "odradek_audit_extra_records"
LAST_RUN = "odradek_audit_last_run_timestamp_seconds"
SERIES = (BUCKETS, MISSING_RECORDS, EXTRA_RECORDS, LAST_RUN)
"""Every series name this module exports: the rules, dashboards and tests use these."""


@dataclass(frozen=True, slots=True)
class BucketResult:
    topic: str
    status: str
    in_grace: bool
    source_count: int
    target_count: int
    audited_at_ms: int


class AuditResults:
    """The latest audit record of every key of the audit topic."""

    def __init__(self) -> None:
        self.by_key: dict[bytes, BucketResult] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """One record of the audit topic, in offset order; a tombstone removes its key,
        and a record that is not the audit's JSON is skipped."""
        if key is None:
            return
        if value is None:
            self.by_key.pop(key, None)
            return
        try:
            fields = json.loads(value)
            result = BucketResult(str(fields["topic"]), str(fields["status"]),
                                  bool(fields["in_grace"]), int(fields["source_count"]),
                                  int(fields["target_count"]),
                                  int(fields.get("audited_at_ms") or 0))
        except (ValueError, TypeError, KeyError):
            return
        self.by_key[key] = result

    def clear(self) -> None:
        self.by_key.clear()

    def latest(self) -> list[BucketResult]:
        """Each topic's buckets from its newest run."""
        newest: dict[str, int] = {}
        for result in self.by_key.values():
            newest[result.topic] = max(newest.get(result.topic, 0), result.audited_at_ms)
        return [r for r in self.by_key.values() if r.audited_at_ms == newest[r.topic]]


def audit_families(results: list[BucketResult]) -> Iterator[GaugeMetricFamily]:
    """Bucket counts by topic, status and grace; the records missing and extra on the target
    in failed buckets outside the grace period; the newest run's time. Nothing before a
    first run."""
    if not results:
        return
    buckets = GaugeMetricFamily(BUCKETS, "Buckets of the latest mirror audit by topic, "
                                "status and whether they were still in the grace period.",
                                labels=["topic", "status", "in_grace"])
    missing = GaugeMetricFamily(MISSING_RECORDS, "Records on the source missing on the "
                                "target in the latest audit's failed buckets outside the "
                                "grace period.", labels=["topic"])
    extra = GaugeMetricFamily(EXTRA_RECORDS, "Records on the target beyond the source's "
                              "(duplicates included) in the latest audit's failed buckets "
                              "outside the grace period.", labels=["topic"])
    counts: dict[tuple[str, str, bool], int] = {}
    shortfall: dict[str, int] = {}
    surplus: dict[str, int] = {}
    for r in results:
        for grace in (False, True):
            for status in STATUSES:
                counts.setdefault((r.topic, status, grace), 0)
        counts[(r.topic, r.status, r.in_grace)] = counts.get((r.topic, r.status,
                                                              r.in_grace), 0) + 1
        difference = r.target_count - r.source_count
        counted = difference if r.status in FAILED and not r.in_grace else 0
        shortfall[r.topic] = shortfall.get(r.topic, 0) + max(0, -counted)
        surplus[r.topic] = surplus.get(r.topic, 0) + max(0, counted)
    for (topic, status, grace), count in sorted(counts.items()):
        buckets.add_metric([topic, status, str(grace).lower()], count)
    for topic in sorted(shortfall):
        missing.add_metric([topic], shortfall[topic])
        extra.add_metric([topic], surplus[topic])
    yield from (buckets, missing, extra)
    yield GaugeMetricFamily(LAST_RUN, "When the newest mirror audit run whose results are "
                            "on the audit topic started (Unix time).",
                            max(r.audited_at_ms for r in results) / 1000)
