"""Kafka's deleteRecordsOnLeader: a partition's log start offset moved up on its leader, for
DeleteRecords and for the internal topics a coordinator prunes (`__share_group_state`);
followers follow the leader's log start offset as they fetch."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.file_deletion import delete_later
from odradek.log.partition import OffsetOutOfRangeError

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def delete_on_leader(broker: Broker, topic: str, partition: int, offset: int
                     ) -> dict[str, Any]:
    """Move the log start offset of a partition this broker leads up to `offset` (-1: the
    high watermark); the new one as `low_watermark`, or the `error_code`."""
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
