"""The mirroring audit's rules, without IO (Uber's Chaperone: each tier counts its messages
in fixed event-time buckets and the counts are compared): flag values, topic naming under
MM2's replication policies, and the classification and summary of the per-bucket counts the
Spark job computes on each cluster. A compacted topic's buckets are also judged by what
compaction preserves, the latest record of each key."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from odradek.mirror.policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from odradek.spark.audit_contract import PASSED, STATUSES

CHECKSUM_MODULUS = 1 << 64
UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
KEY_FIELDS = ("source_keys", "target_keys", "differing_keys")


def parse_duration(text: str) -> int:
    """`10m`, `90s`, `1h`, `500ms`, `2d`, or plain milliseconds, as milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h|d)?\s*", text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (e.g. 10m, 30s, 1h, 500ms)")
    return int(match[1]) * UNITS_MS[match[2] or "ms"]


def parse_time(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC when it names no zone), as epoch ms."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO-8601 time or epoch milliseconds: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def target_topic(topic: str, source_alias: str, policy: str, separator: str = ".") -> str:
    """MM2's name for a source topic on the target, by the mirror's own policies:
    DefaultReplicationPolicy prefixes the source cluster's alias (`east.orders`),
    IdentityReplicationPolicy keeps the name."""
    if policy == "identity":
        chosen: DefaultReplicationPolicy = IdentityReplicationPolicy(source_alias, separator)
    elif policy == "default":
        chosen = DefaultReplicationPolicy(separator)
    else:
        raise ValueError(f"unknown replication policy {policy!r}: default or identity")
    return chosen.format_remote_topic(source_alias, topic)


def compacts(cleanup_policy: str) -> bool:
    """Whether a topic's `cleanup.policy` (a list: `compact`, `delete`, `compact,delete`)
    has its cleaner compact it."""
    return "compact" in (policy.strip() for policy in cleanup_policy.split(","))


@dataclass(frozen=True)
class Counts:
    """One cluster's records of one topic partition in one bucket. `checksum` is the sum of
    the records' 64-bit hashes of (key, value, timestamp, headers): order does not matter,
    and a lost, added or changed record changes it."""

    topic: str
    """The source topic's name, on both clusters."""
    partition: int
    bucket_start_ms: int
    count: int
    bytes: int
    checksum: int
    max_timestamp_ms: int


@dataclass(frozen=True)
class KeyCounts:
    """The keys of a compacted topic that belong to one bucket, counted on both clusters
    (a key is one within its partition, as compaction keeps it). A key belongs to the
    bucket of its latest record on the source, or on the target when the source holds no
    record of it (compaction may have removed a tombstone and everything before it). A key
    is live on a side whose latest record of it has a value: a tombstone and no record are
    alike. It differs when it is live on one side only, or on both with different latest
    records (key, value, timestamp, headers)."""

    topic: str
    """The source topic's name."""
    bucket_start_ms: int
    source_keys: int
    """Keys live on the source."""
    target_keys: int
    """Keys live on the target."""
    differing_keys: int


@dataclass
class Bucket:
    topic: str
    target_topic: str
    bucket_start_ms: int
    bucket_end_ms: int
    source_count: int = 0
    target_count: int = 0
    source_bytes: int = 0
    target_bytes: int = 0
    source_checksum: int = 0
    target_checksum: int = 0
    status: str = "complete"
    in_grace: bool = False
    source_keys: int | None = None
    """Of a compacted topic: the keys live on the source (`KeyCounts`); None otherwise."""
    target_keys: int | None = None
    differing_keys: int | None = None


def classify(bucket: Bucket) -> str:
    """complete: same count, bytes and checksum; missing: fewer records on the target;
    extra: more (duplicates included); mismatch: as many records, different content.

    A compacted topic's bucket is judged by its keys when any differs (missing: fewer live
    on the target, extra: more, mismatch: as many); when none does, a bucket whose records
    differ is compacted: the cleaner of one side removed records the other still holds, and
    the latest value of every key agrees."""
    if bucket.differing_keys:
        assert bucket.source_keys is not None and bucket.target_keys is not None
        return _by_count(bucket.source_keys, bucket.target_keys, "mismatch")
    records = _by_count(bucket.source_count, bucket.target_count, "complete" if (
        bucket.source_bytes, bucket.source_checksum) == (bucket.target_bytes,
                                                         bucket.target_checksum) else "mismatch")
    return "compacted" if records != "complete" and bucket.differing_keys == 0 else records


def _by_count(source: int, target: int, otherwise: str) -> str:
    if target < source:
        return "missing"
    return "extra" if target > source else otherwise


@dataclass
class Lag:
    """How far the target trails in one partition: records the source has and the target
    lacks, and the event-time gap between the newest record on each side."""

    topic: str
    partition: int
    records: int
    ms: int


@dataclass
class Audit:
    complete: bool
    buckets: list[Bucket]
    totals: dict[str, int]
    worst_lag: Lag | None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"complete": self.complete, **self.settings,
                "buckets": [asdict(b) for b in self.buckets], "totals": self.totals,
                "worst_lag": None if self.worst_lag is None else asdict(self.worst_lag)}

    @property
    def failed(self) -> list[Bucket]:
        return [b for b in self.buckets if b.status not in PASSED and not b.in_grace]


def audit(source: Iterable[Counts], target: Iterable[Counts], names: dict[str, str], *,
          bucket_ms: int, grace_start_ms: int, from_ms: int,
          compacted: Collection[str] = (), keys: Iterable[KeyCounts] = ()) -> Audit:
    """Buckets (every topic and bucket either side has records in) classified; a bucket
    ending after `grace_start_ms` is still in flight, and does not make the audit fail.
    The buckets of the `compacted` topics are also judged by their `keys`."""
    buckets: dict[tuple[str, int], Bucket] = {}

    def bucket_of(topic: str, start_ms: int) -> Bucket:
        if (topic, start_ms) not in buckets:
            new = buckets[(topic, start_ms)] = Bucket(topic, names[topic], start_ms,
                                                      start_ms + bucket_ms)
            if topic in compacted:
                new.source_keys = new.target_keys = new.differing_keys = 0
        return buckets[(topic, start_ms)]

    newest: dict[tuple[str, int], list[int]] = {}
    for side, rows in (("source", source), ("target", target)):
        for row in rows:
            bucket = bucket_of(row.topic, row.bucket_start_ms)
            setattr(bucket, f"{side}_count", getattr(bucket, f"{side}_count") + row.count)
            setattr(bucket, f"{side}_bytes", getattr(bucket, f"{side}_bytes") + row.bytes)
            checksum = (getattr(bucket, f"{side}_checksum") + row.checksum) % CHECKSUM_MODULUS
            setattr(bucket, f"{side}_checksum", checksum)
            partition = newest.setdefault((row.topic, row.partition), [0, 0, from_ms, from_ms])
            index = 0 if side == "source" else 1
            partition[index] += row.count
            partition[2 + index] = max(partition[2 + index], row.max_timestamp_ms)
    for counted in keys:
        bucket = bucket_of(counted.topic, counted.bucket_start_ms)
        for name in KEY_FIELDS:
            setattr(bucket, name, (getattr(bucket, name) or 0) + getattr(counted, name))
    ordered = [buckets[key] for key in sorted(buckets)]
    for bucket in ordered:
        bucket.status = classify(bucket)
        bucket.in_grace = bucket.bucket_end_ms > grace_start_ms
    lags = [Lag(topic, partition, s_count - t_count, max(0, s_newest - t_newest))
            for (topic, partition), (s_count, t_count, s_newest, t_newest) in newest.items()]
    worst = max(lags, key=lambda lag: (lag.ms, lag.records, lag.topic, -lag.partition),
                default=None)
    totals = {status: sum(b.status == status for b in ordered) for status in STATUSES}
    totals.update(buckets=len(ordered), in_grace=sum(b.in_grace for b in ordered),
                  source_records=sum(b.source_count for b in ordered),
                  target_records=sum(b.target_count for b in ordered),
                  source_bytes=sum(b.source_bytes for b in ordered),
                  target_bytes=sum(b.target_bytes for b in ordered))
    result = Audit(True, ordered, totals, worst)
    result.complete = not result.failed
    return result
