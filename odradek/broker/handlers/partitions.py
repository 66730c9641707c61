"""The response shape shared by per-partition APIs (ListOffsets, DeleteRecords)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Answer = Callable[[str, Any], dict[str, Any]]


def answer_each_partition(topics: Iterable[Any], answer: Answer) -> list[dict[str, Any]]:
    """[{name, partitions: [{partition_index, **answer(topic name, partition)}]}] in request
    order, for requests whose topics carry `name` and partitions carry `partition_index`."""
    return [
        {
            "name": topic.name,
            "partitions": [
                {"partition_index": partition.partition_index, **answer(topic.name, partition)}
                for partition in topic.partitions
            ],
        }
        for topic in topics
    ]
