"""ListOffsets: earliest, latest, max timestamp and by timestamp. Under read_committed the
latest offset, and the bound on lookups by time, is the last stable offset."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.fetch import leader_epoch_error
from odradek.broker.handlers.partitions import answer_each_partition
from odradek.security.acls import AclOperation

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
READ_COMMITTED = 1


SPECIAL_TIMESTAMP_VERSIONS = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
"""The first version that may ask for each special timestamp; Kafka answers an earlier one
UNSUPPORTED_VERSION."""


def handle_list_offsets(context: RequestContext, request: Any) -> Result:
    broker, replicas, version = context.broker, context.services.replicas, context.version
    committed = getattr(request, "isolation_level", 0) == READ_COMMITTED

    def lookup(topic: str, p: Any) -> dict[str, Any]:
        epoch_error = leader_epoch_error(replicas, (topic, p.partition_index),
                                         getattr(p, "current_leader_epoch", -1))
        if epoch_error != ErrorCode.none and broker.leader_log(topic, p.partition_index)[0]:
            return {"error_code": epoch_error}
        if version < SPECIAL_TIMESTAMP_VERSIONS.get(p.timestamp, 0):
            return {"error_code": ErrorCode.unsupported_version}
        return _lookup(broker, topic, p.partition_index, p.timestamp, committed)

    return {"topics": answer_each_partition(context, AclOperation.DESCRIBE, request.topics,
                                            lookup)}


def _lookup(broker: Broker, topic: str, partition: int, timestamp: int,
            read_committed: bool) -> dict[str, Any]:
    """Offsets with the leader epoch they were written in, as Kafka's leader epoch cache
    gives it; -1 for an offset not found."""
    log_, code = broker.leader_log(topic, partition)
    if log_ is None:
        return {"error_code": code}
    visible_end = log_.last_stable_offset if read_committed else log_.high_watermark
    found: tuple[int, int] | None
    epoch: int | None = None
    if timestamp == LATEST:
        found, epoch = (visible_end, -1), log_.leader_epochs.latest_epoch
    elif timestamp == LATEST_TIERED:
        found = None  # no tiered storage: no offset, as Kafka without remote storage
    elif timestamp in (EARLIEST, EARLIEST_LOCAL):
        found = (log_.log_start_offset, -1)
    elif timestamp == MAX_TIMESTAMP:
        found = log_.max_timestamp_offset()
    elif timestamp < 0:
        return {"error_code": ErrorCode.unsupported_version}
    else:
        found = log_.offset_for_timestamp(timestamp)
        if found is not None and found[0] >= visible_end:
            found = None
    offset, found_timestamp = found if found is not None else (-1, -1)
    if epoch is None:
        epoch = log_.leader_epochs.epoch_at(offset) if offset >= 0 else -1
    return {
        "error_code": ErrorCode.none,
        "offset": offset,
        "timestamp": found_timestamp,
        "leader_epoch": epoch,
        "old_style_offsets": [offset] if offset >= 0 else [],
    }
