"""Kafka's choice of coordinator partition for a key, shared by the group, transaction and
share coordinators (a module of its own, so that routing does not load their cores)."""

from __future__ import annotations


def partition_for(key: str, partitions: int) -> int:
    """Utils.abs(key.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code
    units."""
    data = key.encode("utf-16-be")
    value = 0
    for i in range(0, len(data), 2):
        value = (31 * value + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    return (0 if value == -(1 << 31) else abs(value)) % partitions
