"""The comparator: walks Kafka's and Odradek's plain responses side by side and yields every
field whose values differ, by path ("metadata.topics.orders.error_code": the API's name,
then field names, list indexes, or a list element's key where `allowed.KEYED` matches
elements by a field instead of by position)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from tests.integration.jvm.conformance import allowed

MISSING = "<absent>"


@dataclass(frozen=True)
class Difference:
    path: str
    kafka: Any
    odradek: Any

    def __str__(self) -> str:
        return f"{self.path}: Kafka {self.kafka!r}, Odradek {self.odradek!r}"


@dataclass
class Comparison:
    fields: int = 0
    differences: tuple[Difference, ...] = ()


def compare(api: str, version: int, kafka: Any, odradek: Any) -> Comparison:
    comparison = Comparison()
    found = tuple(_walk(api, kafka, odradek, comparison, version))
    comparison.differences = found
    return comparison


def _keyed(path: str, items: list[Any], version: int) -> dict[str, Any] | None:
    key = allowed.list_key(path, version)
    if key is None or not all(isinstance(item, dict) for item in items):
        return None
    return {str(key(item)): item for item in items}


def _walk(path: str, kafka: Any, odradek: Any, comparison: Comparison,
          version: int) -> Iterator[Difference]:
    if isinstance(kafka, dict) and isinstance(odradek, dict):
        for name in dict.fromkeys([*kafka, *odradek]):
            yield from _walk(f"{path}.{name}", kafka.get(name, MISSING),
                             odradek.get(name, MISSING), comparison, version)
        return
    if isinstance(kafka, list) and isinstance(odradek, list):
        by_key_kafka, by_key_odradek = _keyed(path, kafka, version), _keyed(path, odradek, version)
        if by_key_kafka is not None and by_key_odradek is not None:
            for key in dict.fromkeys([*by_key_kafka, *by_key_odradek]):
                yield from _walk(f"{path}.{key}", by_key_kafka.get(key, MISSING),
                                 by_key_odradek.get(key, MISSING), comparison, version)
            return
        for index in range(max(len(kafka), len(odradek))):
            yield from _walk(f"{path}.{index}",
                             kafka[index] if index < len(kafka) else MISSING,
                             odradek[index] if index < len(odradek) else MISSING,
                             comparison, version)
        return
    comparison.fields += 1
    if kafka != odradek:
        yield Difference(path, _short(kafka), _short(odradek))


def _short(value: Any) -> Any:
    """Whole subtrees (one side absent) shortened for reports."""
    if isinstance(value, dict | list):
        encoded = json.dumps(value, sort_keys=True, default=str)
        return encoded if len(encoded) < 300 else encoded[:300] + "..."
    return value


def matches(pattern: str, path: str) -> bool:
    return fnmatchcase(path, pattern)
