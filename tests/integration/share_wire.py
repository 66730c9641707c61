"""ShareGroupHeartbeat v1 and ShareGroupDescribe v1 over RawClient, encoded and decoded here
by hand from Kafka's message specs (clients/src/main/resources/common/message/
ShareGroup{Heartbeat,Describe}{Request,Response}.json), not with the broker's codec (kio):
kafka-python, RawClient's codec, has no share group messages. `Members` heartbeats for a
group's members."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from tests.integration.raw_client import RawClient, frame
from tests.waiting import wait_until

HEARTBEAT_KEY, DESCRIBE_KEY = 76, 77
VERSION = 1


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self.out.append(value & 0x7F | 0x80)
            value >>= 7
        self.out.append(value)

    def string(self, value: str | None) -> None:
        """COMPACT_(NULLABLE_)STRING."""
        if value is None:
            self.uvarint(0)
            return
        data = value.encode()
        self.uvarint(len(data) + 1)
        self.out += data

    def strings(self, values: list[str] | None) -> None:
        if values is None:
            self.uvarint(0)
            return
        self.uvarint(len(values) + 1)
        for value in values:
            self.string(value)

    def pack(self, fmt: str, *values: object) -> None:
        self.out += struct.pack(fmt, *values)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def string(self) -> str | None:
        length = self.uvarint() - 1
        if length < 0:
            return None
        value = self.data[self.pos:self.pos + length].decode()
        self.pos += length
        return value

    def array_length(self) -> int:
        return self.uvarint() - 1

    def uuid(self) -> str:
        value = str(uuid.UUID(bytes=self.data[self.pos:self.pos + 16]))
        self.pos += 16
        return value

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def end(self) -> None:
        assert self.pos == len(self.data), f"{len(self.data) - self.pos} bytes left over"


def _call(client: RawClient, api_key: int, body: bytes, version: int = VERSION) -> _Reader:
    correlation_id = client.next_correlation_id()
    header = _Writer()
    header.pack(">hhih", api_key, version, correlation_id, 3)
    header.out += b"raw"
    header.uvarint(0)  # request header v2's tagged fields
    client.send_raw(frame(bytes(header.out) + body))
    reader = _Reader(client.recv_frame())
    assert reader.unpack(">i") == correlation_id
    reader.tags()  # response header v1
    return reader


@dataclass(frozen=True)
class Heartbeat:
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: dict[str, list[int]] | None
    """Topic id -> partitions, or None when the response carries no assignment."""


def heartbeat(client: RawClient, group_id: str, member_id: str, member_epoch: int,
              topics: list[str] | None = None, rack_id: str | None = None) -> Heartbeat:
    body = _Writer()
    body.string(group_id)
    body.string(member_id)
    body.pack(">i", member_epoch)
    body.string(rack_id)
    body.strings(topics)
    body.uvarint(0)
    r = _call(client, HEARTBEAT_KEY, bytes(body.out))
    r.unpack(">i")  # throttle time
    error_code, error_message = r.unpack(">h"), r.string()
    member, epoch, interval = r.string(), r.unpack(">i"), r.unpack(">i")
    assignment = None
    if r.unpack(">b") >= 0:
        assignment = {}
        for _ in range(r.array_length()):
            topic_id = r.uuid()
            assignment[topic_id] = [r.unpack(">i") for _ in range(r.array_length())]
            r.tags()
        r.tags()
    r.tags()
    r.end()
    return Heartbeat(error_code, error_message, member, epoch, interval, assignment)


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: dict[str, list[int]]
    """Topic name -> partitions."""


@dataclass(frozen=True)
class DescribedGroup:
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[DescribedMember]


def describe(client: RawClient, *group_ids: str) -> list[DescribedGroup]:
    body = _Writer()
    body.strings(list(group_ids))
    body.pack(">?", False)
    body.uvarint(0)
    r = _call(client, DESCRIBE_KEY, bytes(body.out))
    r.unpack(">i")
    groups = []
    for _ in range(r.array_length()):
        error_code, error_message = r.unpack(">h"), r.string()
        group_id, state = r.string(), r.string()
        group_epoch, assignment_epoch, assignor = r.unpack(">i"), r.unpack(">i"), r.string()
        members = []
        for _ in range(r.array_length()):
            member_id, rack_id, epoch = r.string(), r.string(), r.unpack(">i")
            client_id, client_host = r.string(), r.string()
            names = [r.string() or "" for _ in range(r.array_length())]
            assignment = {}
            for _ in range(r.array_length()):
                r.uuid()
                name = r.string() or ""
                assignment[name] = [r.unpack(">i") for _ in range(r.array_length())]
                r.tags()
            r.tags()  # assignment
            r.tags()  # member
            members.append(DescribedMember(member_id or "", rack_id, epoch, client_id or "",
                                           client_host or "", names, assignment))
        r.unpack(">i")  # authorized operations
        r.tags()
        groups.append(DescribedGroup(error_code, error_message, group_id or "", state or "",
                                     group_epoch, assignment_epoch, assignor or "", members))
    r.tags()
    r.end()
    return groups


class Members:
    """Share consumers of one group, as their heartbeats leave them."""

    def __init__(self, client: RawClient, group: str, topic: str) -> None:
        self.client, self.group, self.topic = client, group, topic
        self.epochs: dict[str, int] = {}
        self.assigned: dict[str, dict[str, list[int]]] = {}

    def beat(self, member: str) -> Heartbeat:
        epoch = self.epochs.get(member, 0)
        response = heartbeat(self.client, self.group, member, epoch,
                             [self.topic] if epoch == 0 else None)
        assert response.error_code == 0, response
        assert response.heartbeat_interval_ms == 5000
        self.epochs[member] = response.member_epoch
        if response.assignment is not None:
            self.assigned[member] = response.assignment
        return response

    def partitions(self, member: str) -> set[int]:
        return {p for parts in self.assigned.get(member, {}).values() for p in parts}

    def settle(self, names: tuple[str, ...], partitions: int) -> int:
        """Heartbeat until the members hold every partition at one epoch (the group assigns a
        partition once the share coordinator has initialized its state); that epoch."""
        def settled() -> bool:
            for name in names:
                self.beat(name)
            held = set().union(*(self.partitions(m) for m in names))
            return held == set(range(partitions)) and len({self.epochs[m] for m in names}) == 1
        wait_until(settled, 30, "every partition assigned at one epoch", interval=0.2)
        return self.epochs[names[0]]
