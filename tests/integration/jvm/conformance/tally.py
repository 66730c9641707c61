"""Counts for the lead's report: requests compared, fields compared, differences allowed (by
allow-list entry) and differences fixed (allowed.FIXED)."""

from __future__ import annotations

from collections import Counter

from tests.integration.jvm.conformance import allowed

requests = 0
fields = 0
allowed_by_entry: Counter[allowed.Allowed] = Counter()
unexplained = 0


def summary() -> list[str]:
    kinds: Counter[str] = Counter()
    for entry, count in allowed_by_entry.items():
        kinds[entry.kind] += count
    by_kind = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    lines = [f"conformance: {requests} requests compared on both brokers, {fields} fields, "
             f"{len(allowed.FIXED)} differences fixed, {sum(allowed_by_entry.values())} "
             f"field differences allowed ({by_kind})"
             f" by {len(allowed_by_entry)} of {len(allowed.ALLOWED)} allow-list entries, "
             f"{unexplained} unexplained"]
    for entry, count in allowed_by_entry.most_common():
        lines.append(f"  {count:5d}  {entry.kind:10s} {entry.path}")
    return lines
