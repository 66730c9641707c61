"""The mirror audit's latest results as Prometheus series (odradek.exporter.audit_series),
from records in the audit job's own format (odradek.spark.audit.audit_records)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from odradek.exporter.audit_series import SERIES, AuditResults, audit_families
from odradek.spark.audit import audit_records
from odradek.spark.audit_rules import Audit
from tests.audit_runs import audit_run


def apply(results: AuditResults, run: Audit) -> None:
    for key, value in audit_records(run):
        results.apply(key, value)


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
    apply(results, audit_run(5000, ("orders", 0, 10, 10), ("orders", 600_000, 10, 7),
                             ("orders", 1_200_000, 4, 6), ("orders", 1_800_000, 5, 1, True)))
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
    apply(results, audit_run(1000, ("orders", 0, 10, 7), ("orders", 600_000, 3, 1)))
    apply(results, audit_run(2000, ("orders", 0, 10, 10)))
    apply(results, audit_run(500, ("payments", 0, 2, 1)))
    got = samples(results)
    # orders' newest run (2000) re-audited bucket 0, now complete; bucket 600000 was not in it
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "complete"),
                                          ("topic", "orders")))] == 1
    assert got[("odradek_audit_missing_records", (("topic", "orders"),))] == 0
    assert got[("odradek_audit_missing_records", (("topic", "payments"),))] == 1
    assert got[("odradek_audit_last_run_timestamp_seconds", ())] == 2.0


def test_tombstones_remove_and_foreign_records_are_skipped() -> None:
    results = AuditResults()
    [(key, value)] = audit_records(audit_run(1000, ("orders", 0, 10, 7)))
    results.apply(key, value)
    results.apply(b"other", b"not json")
    results.apply(None, value)
    results.apply(b"partial", b'{"topic": "orders"}')
    assert len(results.latest()) == 1
    results.apply(key, None)
    assert results.latest() == []
    assert samples(results) == {}


def test_compacted_buckets_pass() -> None:
    results = AuditResults()
    run = audit_run(1000, ("customers", 0, 4, 10), ("customers", 600_000, 10, 9))
    run.buckets[0].status = "compacted"  # as the job finds a cleaned source's bucket
    apply(results, run)
    got = samples(results)
    assert got[("odradek_audit_buckets", (("in_grace", "false"), ("status", "compacted"),
                                          ("topic", "customers")))] == 1
    assert got[("odradek_audit_extra_records", (("topic", "customers"),))] == 0
    assert got[("odradek_audit_missing_records", (("topic", "customers"),))] == 1
