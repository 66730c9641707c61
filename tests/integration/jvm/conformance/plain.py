"""Responses as plain trees (dicts, lists, scalars) for field-by-field comparison: error codes
by name, durations and instants in milliseconds, UUIDs as text, and the record bytes of a
Fetch decoded into batches and records."""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import fields, is_dataclass
from typing import Any

from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import InvalidRecordsError, iter_batches

Tree = Any


def plain(value: Any, field: str = "") -> Tree:
    if is_dataclass(value):
        return {item.name: plain(getattr(value, item.name), item.name) for item in fields(value)}
    if isinstance(value, tuple | list):
        return [plain(item, field) for item in value]
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | memoryview):
        return batches(bytes(value)) if field == "records" else text(bytes(value))
    return value


def text(data: bytes | None) -> str | None:
    return None if data is None else data.decode(errors="backslashreplace")


def batches(data: bytes) -> list[dict[str, Any]]:
    """Each whole batch's header fields and records; an incomplete tail (a Fetch may end in
    one) is reported by its length."""
    result: list[dict[str, Any]] = []
    end = 0
    for info in iter_batches(data):
        batch = {name: getattr(info, name) for name in (
            "base_offset", "last_offset_delta", "partition_leader_epoch", "magic", "attributes",
            "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
            "record_count")}
        try:
            batch["records"] = [
                {"offset": r.offset, "timestamp": r.timestamp, "key": text(r.key),
                 "value": text(r.value), "headers": [[k, text(v)] for k, v in r.headers]}
                for r in decode_records(data[info.position:info.end])]
        except InvalidRecordsError as error:
            batch["records"] = f"undecodable: {error}"
        result.append(batch)
        end = info.end
    if end < len(data):
        result.append({"incomplete_tail_bytes": len(data) - end})
    return result
