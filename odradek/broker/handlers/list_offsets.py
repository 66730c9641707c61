"""ListOffsets: earliest, latest, max timestamp and by timestamp. Under read_committed the
latest offset, and the bound on lookups by time, is the last stable offset."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.partitions import answer_each_partition
from odradek.security.acls import AclOperation

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
READ_COMMITTED = 1


def handle_list_offsets(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    return {
        "topics": answer_each_partition(
            context, AclOperation.DESCRIBE, request.topics,
            lambda topic, p: _lookup(broker, topic, p.partition_index, p.timestamp, committed),
        )
    }


def _lookup(broker: Broker, topic: str, partition: int, timestamp: int,
            read_committed: bool) -> dict[str, Any]:
    log_, code = broker.leader_log(topic, partition)
    if log_ is None:
        return {"error_code": code}
    visible_end = log_.last_stable_offset if read_committed else log_.high_watermark
    found: tuple[int, int] | None
    if timestamp in (LATEST, LATEST_TIERED):
        found = (visible_end, -1)
    elif timestamp in (EARLIEST, EARLIEST_LOCAL):
        found = (log_.log_start_offset, -1)
    elif timestamp == MAX_TIMESTAMP:
        found = log_.max_timestamp_offset() or (-1, -1)
    elif timestamp < 0:
        return {"error_code": ErrorCode.unsupported_version}
    else:
        found = log_.offset_for_timestamp(timestamp)
        if found is not None and found[0] >= visible_end:
            found = None
    offset, found_timestamp = found if found is not None else (-1, -1)
    return {
        "error_code": ErrorCode.none,
        "offset": offset,
        "timestamp": found_timestamp,
        "leader_epoch": 0,
        "old_style_offsets": [offset] if offset >= 0 else [],
    }
