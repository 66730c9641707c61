"""DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets v0 and DeleteShareGroupOffsets v0
over RawClient, encoded and decoded here by hand from Kafka's message specs
({Describe,Alter,Delete}ShareGroupOffsets{Request,Response}.json), not with the broker's
codec (kio)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.integration.raw_client import RawClient
from tests.integration.share_wire import _call, _Writer

DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92


@dataclass(frozen=True)
class DescribedPartition:
    start_offset: int
    leader_epoch: int
    lag: int
    """-1 in v0, which has no lag."""
    error_code: int


@dataclass(frozen=True)
class DescribedOffsets:
    error_code: int
    partitions: dict[tuple[str, int], DescribedPartition]


def describe_offsets(client: RawClient, group_id: str,
                     topics: dict[str, list[int]] | None = None,
                     version: int = 1) -> DescribedOffsets:
    """One group's share-partitions; `topics` None asks for all of them."""
    body = _Writer()
    body.uvarint(2)
    body.string(group_id)
    if topics is None:
        body.uvarint(0)
    else:
        body.uvarint(len(topics) + 1)
        for name, partitions in topics.items():
            body.string(name)
            body.uvarint(len(partitions) + 1)
            for p in partitions:
                body.pack(">i", p)
            body.uvarint(0)
    body.uvarint(0)  # group
    body.uvarint(0)  # request
    r = _call(client, DESCRIBE_OFFSETS, bytes(body.out), version)
    r.unpack(">i")
    assert r.array_length() == 1
    assert r.string() == group_id
    found = {}
    for _ in range(r.array_length()):
        name = r.string() or ""
        r.uuid()
        for _ in range(r.array_length()):
            index, start, epoch = r.unpack(">i"), r.unpack(">q"), r.unpack(">i")
            lag = r.unpack(">q") if version >= 1 else -1
            error = r.unpack(">h")
            r.string()
            r.tags()
            found[(name, index)] = DescribedPartition(start, epoch, lag, error)
        r.tags()
    error_code = r.unpack(">h")
    r.string()
    r.tags()
    r.tags()
    r.end()
    return DescribedOffsets(error_code, found)


@dataclass(frozen=True)
class Altered:
    error_code: int
    error_message: str | None
    partitions: dict[tuple[str, int], int]
    """(topic, partition) -> error code."""


def alter_offsets(client: RawClient, group_id: str,
                  offsets: dict[str, dict[int, int]]) -> Altered:
    body = _Writer()
    body.string(group_id)
    body.uvarint(len(offsets) + 1)
    for name, partitions in offsets.items():
        body.string(name)
        body.uvarint(len(partitions) + 1)
        for index, offset in partitions.items():
            body.pack(">iq", index, offset)
            body.uvarint(0)
        body.uvarint(0)
    body.uvarint(0)
    r = _call(client, ALTER_OFFSETS, bytes(body.out), 0)
    r.unpack(">i")
    error_code, message = r.unpack(">h"), r.string()
    errors = {}
    for _ in range(r.array_length()):
        name = r.string() or ""
        r.uuid()
        for _ in range(r.array_length()):
            index, error = r.unpack(">i"), r.unpack(">h")
            r.string()
            r.tags()
            errors[(name, index)] = error
        r.tags()
    r.tags()
    r.end()
    return Altered(error_code, message, errors)


@dataclass(frozen=True)
class Deleted:
    error_code: int
    error_message: str | None
    topics: dict[str, tuple[int, str | None]]
    """Topic -> (error code, error message)."""


def delete_offsets(client: RawClient, group_id: str, topics: list[str]) -> Deleted:
    body = _Writer()
    body.string(group_id)
    body.uvarint(len(topics) + 1)
    for name in topics:
        body.string(name)
        body.uvarint(0)
    body.uvarint(0)
    r = _call(client, DELETE_OFFSETS, bytes(body.out), 0)
    r.unpack(">i")
    error_code, message = r.unpack(">h"), r.string()
    found = {}
    for _ in range(r.array_length()):
        name = r.string() or ""
        r.uuid()
        found[name] = (r.unpack(">h"), r.string())
        r.tags()
    r.tags()
    r.end()
    return Deleted(error_code, message, found)
