"""DeleteRecords: advance partitions' log start offsets (Kafka's deleteRecordsOnLeader)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.file_deletion import delete_later
from odradek.broker.handlers.partitions import answer_each_partition
from odradek.log.partition import OffsetOutOfRangeError
from odradek.security.acls import AclOperation

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def handle_delete_records(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    return {
        "topics": answer_each_partition(
            context, AclOperation.DELETE, request.topics,
            lambda topic, p: _delete(broker, topic, p.partition_index, p.offset),
        )
    }


def _delete(broker: Broker, topic: str, partition: int, offset: int) -> dict[str, Any]:
    log_, code = broker.leader_log(topic, partition)
    if log_ is None:
        return _error(code)
    if not log_.config.delete_enabled:
        return _error(ErrorCode.policy_violation)
    target = log_.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return _error(ErrorCode.offset_out_of_range)
    try:
        low_watermark = log_.delete_records_before(target)
    except OffsetOutOfRangeError:
        return _error(ErrorCode.offset_out_of_range)
    delete_later(log_, log_.take_deleted_files())
    return {"low_watermark": low_watermark, "error_code": ErrorCode.none}


def _error(code: ErrorCode) -> dict[str, Any]:
    return {"low_watermark": INVALID_LOW_WATERMARK, "error_code": code}
