"""Metadata records. State changes only by replaying these (see image.py).

One Raft entry carries one atomic batch of records (`encode_batch`/`decode_batch`)."""

from __future__ import annotations

import enum
import json
import types
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from odradek.config.listeners import PLAINTEXT, Endpoint

NO_LEADER = -1
"""The leader of an offline partition."""


class ConfigResourceType(enum.IntEnum):
    """Kafka's config resource types (ConfigResource.Type, without UNKNOWN). Not the ACL
    resource types (security/acls.py ResourceType): Kafka numbers those apart."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


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
    """A config override; value None removes it. resource_type is Kafka's (2 topic, 4 broker,
    32 group)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker registration; it replaces any earlier one of the same broker id. `endpoints`
    are its advertised listeners (Kafka's EndPoints); a record written before brokers had
    named listeners holds `host` and `port` instead, read as one PLAINTEXT endpoint."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
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


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """An ACL (Kafka's AccessControlEntryRecord): the codes are those of
    odradek/security/acls.py; `id` names it for removal."""

    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    id: str


@dataclass(frozen=True, slots=True)
class EntityData:
    """One part of a client quota entity: its type (`user`, `client-id`) and name (None: the
    default)."""

    entity_type: str
    entity_name: str | None


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    """A client quota of an entity (Kafka's ClientQuotaRecord); value None removes it."""

    entity: tuple[EntityData, ...]
    key: str
    value: float | None


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), as
    Kafka's record of that name: the salt and the keys derived from the salted password,
    base64; never the password. It replaces any earlier one of the user and mechanism."""

    name: str
    mechanism: int
    salt: str
    stored_key: str
    server_key: str
    iterations: int


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    name: str
    mechanism: int


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
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | ClientQuotaRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
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
    if cls is RegisterBrokerRecord and "endpoints" not in data:
        data = _with_legacy_endpoint(data)
    record: MetadataRecord = _instance(cls, data, name)
    return record


def _with_legacy_endpoint(data: dict[str, Any]) -> dict[str, Any]:
    """A registration from before named listeners: its host and port are its one listener,
    a PLAINTEXT one."""
    host, port = data.pop("host", None), data.pop("port", None)
    if host is None or port is None:
        return data
    return {**data, "endpoints": [{"name": PLAINTEXT, "host": host, "port": port}]}


def _instance(cls: type, data: dict[str, Any], name: str) -> Any:
    """A record (or a dataclass inside one) from its JSON object, each field checked."""
    hints = _HINTS.setdefault(cls, get_type_hints(cls))
    unknown = sorted(set(data) - set(hints))
    if unknown:
        raise RecordDecodeError(f"{name} has no field(s) {', '.join(unknown)}")
    values = {}
    for field in fields(cls):
        if field.name in data:
            values[field.name] = _typed(data[field.name], hints[field.name], name, field.name)
        elif field.default is MISSING:
            raise RecordDecodeError(f"{name} lacks field {field.name}")
    return cls(**values)


def _typed(value: Any, hint: Any, record: str, field: str) -> Any:
    """`value` as a field of type `hint` (int, bool, str, float, a dataclass, tuple[X, ...] of
    those, or X | None)."""
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
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and is_dataclass(hint) and isinstance(value, dict):
        return _instance(hint, value, f"{record}.{field}")
    if get_origin(hint) is tuple and isinstance(value, list):
        item = get_args(hint)[0]
        return tuple(_typed(v, item, record, field) for v in value)
    expected = hint.__name__ if isinstance(hint, type) else str(hint)
    raise RecordDecodeError(f"{record}.{field} must be {expected}, not {value!r}")
