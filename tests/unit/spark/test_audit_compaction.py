"""The audit's rule for compacted topics (odradek.spark.audit_rules): a bucket whose records
differ only by what a cleaner removed, on either side, is `compacted` and passes; a
difference in the latest value of a key is still missing, extra or mismatch. Checked on
hand-made buckets and, against a brute-force model (tests/audit_model.py), over random
histories compacted at random on either side."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.spark.audit_rules import PASSED, Audit, Bucket, audit, classify, compacts
from tests.audit_model import (
    TOPIC,
    Record,
    bucket_counts,
    compacted,
    key_counts,
    latest,
    written,
)

WINDOW = (0, 50, 10)
"""Event times 0 to 49 in buckets of 10; histories also write at 50 to 59, outside."""


def run(source: list[Record], target: list[Record], *, compaction: bool = True) -> Audit:
    return audit(bucket_counts(source, WINDOW), bucket_counts(target, WINDOW),
                 {TOPIC: "east." + TOPIC}, bucket_ms=10, grace_start_ms=1000, from_ms=0,
                 compacted=[TOPIC] if compaction else [],
                 keys=key_counts(source, target, WINDOW) if compaction else [])


def statuses(result: Audit) -> dict[int, str]:
    return {b.bucket_start_ms: b.status for b in result.buckets}


def failed(result: Audit) -> dict[int, str]:
    return {b.bucket_start_ms: b.status for b in result.failed}


def test_the_cleanup_policy_compacts_when_its_list_names_compact() -> None:
    assert compacts("compact") and compacts("compact,delete") and compacts("delete, compact")
    assert not compacts("delete") and not compacts("") and not compacts("compacted")


def bucket(source: int, target: int, keys: tuple[int, int, int] | None,
           same_records: bool = True) -> Bucket:
    checksums = (1, 1) if same_records else (1, 2)
    found = Bucket("o", "east.o", 0, 10, source, target, 5, 5, *checksums)
    if keys is not None:
        found.source_keys, found.target_keys, found.differing_keys = keys
    return found


def test_records_that_differ_with_every_latest_value_equal_are_compacted() -> None:
    assert classify(bucket(3, 9, (3, 3, 0))) == "compacted"  # the source was cleaned
    assert classify(bucket(9, 3, (3, 3, 0))) == "compacted"  # the target was
    assert classify(bucket(3, 3, (3, 3, 0), same_records=False)) == "compacted"
    assert classify(bucket(0, 7, (0, 0, 0))) == "compacted"  # only older values here
    assert classify(bucket(3, 3, (3, 3, 0))) == "complete"
    assert classify(bucket(3, 9, None)) == "extra"  # not a compacted topic: records only


def test_a_differing_latest_value_decides_by_the_keys() -> None:
    assert classify(bucket(3, 4, (3, 3, 1))) == "mismatch"  # one more record: a new value
    assert classify(bucket(3, 3, (3, 3, 1))) == "mismatch"  # records agree, keys don't
    assert classify(bucket(3, 9, (3, 2, 1))) == "missing"  # a key deleted on the target
    assert classify(bucket(9, 3, (2, 3, 1))) == "extra"  # a key the source never had


def test_compacted_passes_and_is_counted_in_the_totals() -> None:
    history = written([(0, b"a", b"1", 5), (0, b"a", b"2", 15), (0, b"b", b"3", 25)])
    cleaned = [r for r in history if r.offset != 0]
    result = run(cleaned, history)
    assert statuses(result) == {0: "compacted", 10: "complete", 20: "complete"}
    assert result.complete and not result.failed
    assert result.totals["compacted"] == 1 and result.totals["extra"] == 0
    first = result.buckets[0]
    assert (first.source_count, first.target_count) == (0, 1)
    assert (first.source_keys, first.target_keys, first.differing_keys) == (0, 0, 0)
    assert statuses(run(cleaned, history, compaction=False))[0] == "extra"


def test_a_tombstone_and_no_record_are_alike() -> None:
    history = written([(0, b"a", b"1", 5), (0, b"a", None, 15), (1, b"b", b"2", 25)])
    cleaned = [r for r in history if r.key != b"a"]  # tombstone and value removed
    assert failed(run(cleaned, history)) == {}
    assert failed(run(history, cleaned)) == {}


def test_a_value_newer_on_the_source_is_judged_where_it_lies() -> None:
    """The mirror has not copied a key's newest value yet and the source's cleaner removed
    the older one: the target is behind in the new value's bucket, not extra in the old."""
    history = written([(0, b"a", b"1", 5), (0, b"b", b"1", 6), (0, b"a", b"2", 45)])
    source = [r for r in history if r.offset != 0]
    target = history[:2]
    result = run(source, target)
    assert statuses(result) == {0: "compacted", 40: "mismatch"}


histories = st.lists(st.tuples(st.integers(0, 1),
                               st.one_of(st.none(), st.sampled_from([b"a", b"b", b"c", b"d"])),
                               st.one_of(st.none(), st.binary(max_size=3)),
                               st.integers(0, 59)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(histories, st.integers(0, 2**32), st.sampled_from(["source", "target", "both"]))
def test_compaction_on_either_side_never_fails_the_audit(
        items: list[tuple[int, bytes | None, bytes | None, int]], seed: int,
        cleaned: str) -> None:
    rng = random.Random(seed)
    history = written(items)
    source = compacted(history, rng) if cleaned in ("source", "both") else history
    target = compacted(history, rng) if cleaned in ("target", "both") else history
    result = run(source, target)
    assert {b.status for b in result.buckets} <= set(PASSED)
    assert result.complete
    by_records = statuses(run(source, target, compaction=False))
    for start, status in statuses(result).items():
        assert status == ("complete" if by_records[start] == "complete" else "compacted")


@settings(max_examples=300, deadline=None)
@given(histories, st.integers(0, 2**32), st.integers(0, 49), st.sampled_from(
    [(b"changed", "mismatch"), (None, "missing")]))
def test_a_latest_value_changed_on_the_target_fails_its_bucket(
        items: list[tuple[int, bytes | None, bytes | None, int]], seed: int, stamp: int,
        change: tuple[bytes | None, str]) -> None:
    """Whatever either cleaner removed, a new value (or a tombstone) written on the target
    for a key live on the source fails the bucket of the key's latest record on the
    source, and only that bucket."""
    rng = random.Random(seed)
    history = written(items)
    live = sorted((r.timestamp, key) for key, r in latest(history).items()
                  if r.value is not None and r.timestamp < WINDOW[1])
    if not live:
        return
    at, (partition, key) = rng.choice(live)
    value, status = change
    target = written([(r.partition, r.key, r.value, r.timestamp)
                      for r in compacted(history, rng)] + [(partition, key, value, stamp)])
    result = run(compacted(history, rng), target)
    assert failed(result) == {at - at % 10: status}


@settings(max_examples=100, deadline=None)
@given(histories, st.integers(0, 2**32), st.integers(0, 49))
def test_a_key_only_the_target_has_is_extra(
        items: list[tuple[int, bytes | None, bytes | None, int]], seed: int,
        stamp: int) -> None:
    rng = random.Random(seed)
    history = written(items)
    target = written([(r.partition, r.key, r.value, r.timestamp) for r in history]
                     + [(0, b"stray", b"x", stamp)])
    assert failed(run(compacted(history, rng), target)) == {stamp - stamp % 10: "extra"}
