"""A brute-force model of what the audit job (odradek.spark.audit_reads) counts on each cluster,
for the tests of its rules: records in offset order, each bucket's counts and checksum, and a
compacted topic's latest record per key, compared key by key."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from odradek.spark.audit_rules import CHECKSUM_MODULUS, Counts, KeyCounts

TOPIC = "customers"


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int

    @property
    def content(self) -> tuple[bytes | None, bytes | None, int]:
        return self.key, self.value, self.timestamp


def written(items: Iterable[tuple[int, bytes | None, bytes | None, int]]) -> list[Record]:
    """(partition, key, value, timestamp) appended in order: offsets per partition."""
    ends: dict[int, int] = {}
    records = []
    for partition, key, value, timestamp in items:
        offset = ends.get(partition, 0)
        ends[partition] = offset + 1
        records.append(Record(partition, offset, key, value, timestamp))
    return records


def latest(records: Iterable[Record]) -> dict[tuple[int, bytes], Record]:
    found: dict[tuple[int, bytes], Record] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        if record.key is not None:
            found[(record.partition, record.key)] = record
    return found


def compacted(records: Sequence[Record], rng: random.Random) -> list[Record]:
    """What a cleaner may have left of `records`: the latest record of every key, any part of
    the others (a cleaner cleans up to the active segment, in rounds), keyless records
    perhaps removed, and a key whose latest record is a tombstone perhaps gone entirely (a
    round past delete.retention.ms)."""
    last = latest(records)
    gone = {key for key, record in last.items() if record.value is None and rng.random() < 0.5}
    kept = []
    for record in records:
        key = None if record.key is None else (record.partition, record.key)
        if key in gone:
            continue
        if (key is not None and last[key] is record) or rng.random() < 0.5:
            kept.append(record)
    return kept


def bucket_counts(records: Iterable[Record], window: tuple[int, int, int]) -> list[Counts]:
    from_ms, to_ms, bucket_ms = window
    rows: dict[tuple[int, int], list[int]] = {}
    for r in records:
        if from_ms <= r.timestamp < to_ms:
            row = rows.setdefault((r.partition, r.timestamp - r.timestamp % bucket_ms),
                                  [0, 0, 0, r.timestamp])
            row[0] += 1
            row[1] += len(r.key or b"") + len(r.value or b"")
            row[2] = (row[2] + _digest(r)) % CHECKSUM_MODULUS
            row[3] = max(row[3], r.timestamp)
    return [Counts(TOPIC, partition, bucket, *row)
            for (partition, bucket), row in sorted(rows.items())]


def key_counts(source: Iterable[Record], target: Iterable[Record],
               window: tuple[int, int, int]) -> list[KeyCounts]:
    """Each key in the bucket of its latest record on the source, else on the target; live
    where that side's latest record has a value; differing when live on one side only, or
    on both with different content."""
    from_ms, to_ms, bucket_ms = window
    on_source, on_target = latest(source), latest(target)
    rows: dict[int, list[int]] = {}
    for key in on_source.keys() | on_target.keys():
        at = (on_source.get(key) or on_target[key]).timestamp
        if not from_ms <= at < to_ms:
            continue
        s, t = on_source.get(key), on_target.get(key)
        s_live = s is not None and s.value is not None
        t_live = t is not None and t.value is not None
        differs = s_live != t_live or (s_live and s is not None and t is not None
                                       and s.content != t.content)
        row = rows.setdefault(at - at % bucket_ms, [0, 0, 0])
        row[0] += s_live
        row[1] += t_live
        row[2] += differs
    return [KeyCounts(TOPIC, bucket, *row) for bucket, row in sorted(rows.items())]


def _digest(record: Record) -> int:
    return int.from_bytes(hashlib.blake2b(repr(record.content).encode(), digest_size=8)
                          .digest(), "big")
