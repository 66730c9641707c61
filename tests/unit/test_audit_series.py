"""The mirror audit's latest results as Prometheus series (odradek.controller.audit_series),
from records in the audit job's own format (odradek.spark.audit._publish)."""

from __future__ import annotations

import json
from dataclasses import asdict

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from odradek.controller.audit_series import SERIES, AuditResults, audit_families
from odradek.spark.audit_rules import Bucket, classify


def record(topic: str, start: int, source: int, target: int, audited_at_ms: int,
           in_grace: bool = False) -> tuple[bytes, bytes]:
    """Key and value as the audit job writes them."""
    bucket = Bucket(topic, "east." + topic, start, start + 600_000, source_count=source,
                    target_count=target, in_grace=in_grace)
    bucket.status = classify(bucket)
    key = {"topic": topic, "bucket_start_ms": start}
    value = {**asdict(bucket), "audited_at_ms": audited_at_ms}
    return (json.dumps(key, sort_keys=True).encode(),
            json.dumps(value, sort_keys=True).encode())


def samples(results: AuditResults) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    class Latest(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            return audit_families(results.latest())

    registry = CollectorRegistry()
    registry.register(Latest())
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_counts_buckets_by_status_and_grace_and_the_records_outside_grace() -> None:
    results = AuditResults()
    for key, value in (record("orders", 0, 10, 10, 5000), record("orders", 600_000, 10, 7, 5000),
                       record("orders", 1_200_000, 4, 6, 5000),
                       record("orders", 1_800_000, 5, 1, 5000, in_grace=True)):
        results.apply(key, value)
    got = samples(results)
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "complete"),
                                          ("topic", "orders")))] == 1
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "missing"),
                                          ("topic", "orders")))] == 1
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "mismatch"),
                                          ("topic", "orders")))] == 0
    assert got[("odradek_audit_buckets", (("in_grace", "true"), ("status", "missing"),
                                          ("topic", "orders")))] == 1
    assert got[("odradek_audit_missing_records", (("topic", "orders"),))] == 3
    assert got[("odradek_audit_extra_records", (("topic", "orders"),))] == 2
    assert got[("odradek_audit_last_run_timestamp_seconds", ())] == 5.0
    assert {name for name, _ in got} == set(SERIES)


def test_the_newest_record_of_a_key_and_the_newest_run_of_a_topic_win() -> None:
    results = AuditResults()
    for key, value in (record("orders", 0, 10, 7, 1000), record("orders", 600_000, 3, 1, 1000),
                       record("orders", 0, 10, 10, 2000), record("payments", 0, 2, 1, 500)):
        results.apply(key, value)
    got = samples(results)
    # orders' newest run (2000) re-audited bucket 0, now complete; bucket 600000 was not in it
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "complete"),
                                          ("topic", "orders")))] == 1
    assert got[("odradek_audit_missing_records", (("topic", "orders"),))] == 0
    assert got[("odradek_audit_missing_records", (("topic", "payments"),))] == 1
    assert got[("odradek_audit_last_run_timestamp_seconds", ())] == 2.0


def test_tombstones_remove_and_foreign_records_are_skipped() -> None:
    results = AuditResults()
    key, value = record("orders", 0, 10, 7, 1000)
    results.apply(key, value)
    results.apply(b"other", b"not json")
    results.apply(None, value)
    results.apply(b"partial", b'{"topic": "orders"}')
    assert len(results.latest()) == 1
    results.apply(key, None)
    assert results.latest() == []
    assert samples(results) == {}
