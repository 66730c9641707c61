"""The response shape shared by per-partition APIs (ListOffsets, DeleteRecords)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext
from odradek.security.acls import AclOperation, ResourceType

Answer = Callable[[str, Any], dict[str, Any]]


def answer_each_partition(context: RequestContext, operation: AclOperation,
                          topics: Sequence[Any], answer: Answer) -> list[dict[str, Any]]:
    """[{name, partitions: [{partition_index, **answer(topic name, partition)}]}] in request
    order, for requests whose topics carry `name` and partitions carry `partition_index`;
    the partitions of a topic the principal may not do `operation` on are answered
    TOPIC_AUTHORIZATION_FAILED."""
    allowed = context.allowed_names(operation, ResourceType.TOPIC, (t.name for t in topics))
    refused = {"error_code": ErrorCode.topic_authorization_failed}
    return [
        {
            "name": topic.name,
            "partitions": [
                {"partition_index": partition.partition_index,
                 **(answer(topic.name, partition) if topic.name in allowed else refused)}
                for partition in topic.partitions
            ],
        }
        for topic in topics
    ]
