"""What the mirroring audit job publishes and the controllers' exporter reads: the audit
topic and the statuses of a bucket. Constants only, so that a controller reads the audit's
results without importing its rules."""

AUDIT_TOPIC = "odradek-audit"
"""Where each audit run publishes its summary (the controllers' exporter reads it)."""
STATUSES = ("complete", "compacted", "missing", "extra", "mismatch")
PASSED = ("complete", "compacted")
"""The statuses of a bucket that does not fail the audit: compaction is not data loss."""
FAILED = tuple(status for status in STATUSES if status not in PASSED)
"""The statuses that fail a bucket outside the grace period."""
