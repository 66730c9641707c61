"""Metadata records. State changes only by replaying these (see image.py).

One Raft entry carries one atomic batch of records (`encode_batch`/`decode_batch`)."""

from __future__ import annotations

import enum
import json
import types
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Union, get_args, get_origin, get_type_hints

NO_LEADER = -1
"""The leader of an offline partition."""


class ResourceType(enum.IntEnum):
    """Kafka's config resource types."""

    TOPIC = 2
    BROKER = 4


class RecordDecodeError(ValueError):
    """Bytes or text that are not a well-formed metadata record or batch."""


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    topic_id: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    """Replicas a reassignment is adding (in `replicas`, until they join the ISR)."""
    removing_replicas: tuple[int, ...] = ()
    """Replicas a reassignment will remove once every adding replica is in the ISR."""


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change of one partition; None leaves a field as it is. Replay bumps the partition
    epoch, and the leader epoch when the leader changes."""

    topic_id: str
    partition: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    topic_id: str


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A config override; value None removes it. resource_type is Kafka's (2 topic, 4 broker)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker registration; it replaces any earlier one of the same broker id."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    host: str
    port: int
    rack: str | None
    fenced: bool = True


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids given to a broker; the next block starts at next_producer_id."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


MetadataRecord = (
    TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | RemoveTopicRecord
    | ConfigRecord
    | RegisterBrokerRecord
    | UnregisterBrokerRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | ProducerIdsRecord
)

_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(MetadataRecord)}
_HINTS: dict[type, dict[str, Any]] = {cls: get_type_hints(cls) for cls in _TYPES.values()}


def _as_dict(record: MetadataRecord) -> dict[str, Any]:
    return {"type": type(record).__name__, **asdict(record)}


def to_json(record: MetadataRecord) -> str:
    return json.dumps(_as_dict(record), separators=(",", ":"))


def from_json(line: str) -> MetadataRecord:
    """Parse one record; raises RecordDecodeError on a malformed line."""
    try:
        data = json.loads(line)
    except ValueError as error:
        raise RecordDecodeError(f"not JSON: {error}") from None
    return _from_dict(data)


def encode_batch(records: list[MetadataRecord]) -> bytes:
    """One Raft entry's payload: a JSON array of records. No records encode to b""."""
    if not records:
        return b""
    return json.dumps([_as_dict(r) for r in records], separators=(",", ":")).encode()


def decode_batch(data: bytes) -> list[MetadataRecord]:
    """The records of one batch (b"" holds none); raises RecordDecodeError on anything else
    than what encode_batch writes."""
    if not data:
        return []
    try:
        items = json.loads(data)
    except ValueError as error:
        raise RecordDecodeError(f"metadata batch is not JSON: {error}") from None
    if not isinstance(items, list):
        raise RecordDecodeError("a metadata batch must be a JSON array of records")
    return [_from_dict(item) for item in items]


def _from_dict(data: Any) -> MetadataRecord:
    if not isinstance(data, dict):
        raise RecordDecodeError(f"a metadata record must be a JSON object, not {data!r}")
    data = dict(data)
    name = data.pop("type", None)
    cls = _TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise RecordDecodeError(f"unknown metadata record type {name!r}")
    hints = _HINTS[cls]
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise RecordDecodeError(f"{name} has no field(s) {', '.join(unknown)}")
    values = {}
    for field in fields(cls):
        if field.name in data:
            values[field.name] = _typed(data[field.name], hints[field.name], name, field.name)
        elif field.default is MISSING:
            raise RecordDecodeError(f"{name} lacks field {field.name}")
    record: MetadataRecord = cls(**values)
    return record


def _typed(value: Any, hint: Any, record: str, field: str) -> Any:
    """`value` as a field of type `hint` (int, bool, str, tuple[int, ...], or X | None)."""
    if get_origin(hint) in (Union, types.UnionType):
        if value is None:
            return None
        (hint,) = (arg for arg in get_args(hint) if arg is not type(None))
    if hint is bool and isinstance(value, bool):
        return value
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is str and isinstance(value, str):
        return value
    if get_origin(hint) is tuple and isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(value)
    expected = hint.__name__ if isinstance(hint, type) else str(hint)
    raise RecordDecodeError(f"{record}.{field} must be {expected}, not {value!r}")
