"""Metadata records. State changes only by replaying these (see image.py)."""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any


class ResourceType(enum.IntEnum):
    """Kafka's config resource types."""

    TOPIC = 2
    BROKER = 4


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


MetadataRecord = TopicRecord | PartitionRecord | RemoveTopicRecord | ConfigRecord

_TYPES: dict[str, type] = {
    cls.__name__: cls for cls in (TopicRecord, PartitionRecord, RemoveTopicRecord, ConfigRecord)
}


def new_topic_id() -> str:
    return str(uuid.uuid4())


def to_json(record: MetadataRecord) -> str:
    return json.dumps({"type": type(record).__name__, **asdict(record)}, separators=(",", ":"))


def from_json(line: str) -> MetadataRecord:
    """Parse one record; raises ValueError (or KeyError/TypeError) on a malformed line."""
    data: dict[str, Any] = json.loads(line)
    cls = _TYPES[data.pop("type")]
    if cls is PartitionRecord:
        data["replicas"] = tuple(data["replicas"])
        data["isr"] = tuple(data["isr"])
    record: MetadataRecord = cls(**data)
    return record
