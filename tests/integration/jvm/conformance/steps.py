"""The vocabulary of scenarios: a scenario is a list of `Step`s, each one request. Values in a
step's body may be markers resolved when it runs: `Name` (a resource name of this run),
`Ref` (a field of an earlier step's response on the same broker) and `Batch` (record bytes
built then, possibly damaged on purpose)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import crc32c

from odradek.protocol.record_codec import build_batch

ADMIN, ALICE = "admin", "alice"
"""Connections: the PLAINTEXT listener (User:ANONYMOUS, a super user) and the SASL_PLAINTEXT
listener as User:alice, who has only the ACLs a scenario grants."""


@dataclass(frozen=True)
class Name:
    """A topic, group or transactional id unique to this run of the scenario."""

    name: str


@dataclass(frozen=True)
class Ref:
    """A value from the plain response of an earlier step of this run: `path` is dotted, list
    indexes as numbers ("topics.0.topic_id")."""

    step: str
    path: str


@dataclass(frozen=True)
class Batch:
    """A magic v2 record batch. `damage`: "crc" flips a CRC bit, "magic" sets magic 1,
    "garbage" makes a gzip batch whose payload is not gzip."""

    records: tuple[tuple[bytes | None, bytes | None], ...] = ((b"k", b"v"),)
    producer_id: Any = -1
    producer_epoch: Any = -1
    base_sequence: int = -1
    transactional: bool = False
    compression: int = 0
    timestamp: int | None = None
    damage: str | None = None


@dataclass(frozen=True)
class Step:
    """One request. `version` None is the version under test; `until` repeats the request
    (on both brokers) until it holds of the plain response, for states that settle, such as
    a new group coordinator loading."""

    api: int
    body: Mapping[str, Any]
    version: int | None = None
    name: str = ""
    compare: bool = True
    conn: str = ADMIN
    until: Callable[[Any], bool] | None = None
    raw: bytes | None = None


@dataclass
class Context:
    """A run's resource-name prefix, its clock reading (the same on both brokers, so that
    batches carry the same timestamps) and the responses so far by step name."""

    prefix: str
    now: int
    responses: dict[str, Any] = field(default_factory=dict)


def resolve(value: Any, context: Context) -> Any:
    if isinstance(value, Name):
        return context.prefix + value.name
    if isinstance(value, Ref):
        found = context.responses[value.step]
        for part in value.path.split("."):
            found = found[int(part)] if isinstance(found, list) else found[part]
        return found
    if isinstance(value, Batch):
        return build(value, context)
    if isinstance(value, Mapping):
        return {key: resolve(item, context) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [resolve(item, context) for item in value]
    return value


def build(spec: Batch, context: Context) -> bytes:
    data = build_batch(
        spec.records, timestamp_ms=context.now if spec.timestamp is None else spec.timestamp,
        compression=spec.compression, producer_id=resolve(spec.producer_id, context),
        producer_epoch=resolve(spec.producer_epoch, context), base_sequence=spec.base_sequence,
        is_transactional=spec.transactional)
    if spec.damage == "crc":
        return data[:17] + bytes([data[17] ^ 1]) + data[18:]
    if spec.damage == "magic":
        return data[:16] + b"\x01" + data[17:]
    if spec.damage == "garbage":
        garbage = b"not gzip at all" * 3
        body = bytearray(data[:61] + garbage)
        struct.pack_into(">i", body, 8, len(body) - 12)  # batch length
        struct.pack_into(">h", body, 21, 1)  # attributes: gzip
        struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
        return bytes(body)
    assert spec.damage is None, spec.damage
    return data
