"""Mirror audit runs as the audit job (odradek.spark.audit) produces them, for the tests of
what reads its results."""

from __future__ import annotations

from odradek.spark.audit_rules import Audit, Bucket, classify

BUCKET_MS = 600_000


def audit_run(audited_at_ms: int,
              *buckets: tuple[str, int, int, int] | tuple[str, int, int, int, bool]) -> Audit:
    """A run whose buckets are (topic, bucket_start_ms, source_count, target_count[,
    in_grace]), classified as the job classifies them."""
    result: list[Bucket] = []
    for topic, start, source, target, *grace in buckets:
        bucket = Bucket(topic, "east." + topic, start, start + BUCKET_MS, source_count=source,
                        target_count=target, in_grace=bool(grace and grace[0]))
        bucket.status = classify(bucket)
        result.append(bucket)
    return Audit(all(b.status == "complete" or b.in_grace for b in result), result, {}, None,
                 {"audited_at_ms": audited_at_ms})
