"""DeleteRecords: advance partitions' log start offsets (Kafka's deleteRecordsOnLeader)."""

from __future__ import annotations

from typing import Any

from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.partitions import answer_each_partition
from odradek.broker.records_deletion import delete_on_leader
from odradek.security.acls import AclOperation


def handle_delete_records(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    return {
        "topics": answer_each_partition(
            context, AclOperation.DELETE, request.topics,
            lambda topic, p: delete_on_leader(broker, topic, p.partition_index, p.offset),
        )
    }
