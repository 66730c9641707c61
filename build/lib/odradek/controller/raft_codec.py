"""Raft messages to and from their protobuf form (odradek/rpc/raft.proto)."""

from __future__ import annotations

from odradek.raft.types import Entry, Message, MessageType, Snapshot
from odradek.rpc import raft_pb2

_TYPE_TO_WIRE = {kind: raft_pb2.RaftMessageType.Value(kind.name) for kind in MessageType}
_TYPE_FROM_WIRE = {wire: kind for kind, wire in _TYPE_TO_WIRE.items()}


def snapshot_to_proto(snapshot: Snapshot) -> raft_pb2.RaftSnapshot:
    return raft_pb2.RaftSnapshot(
        index=snapshot.index, term=snapshot.term, data=snapshot.data,
        voters=sorted(snapshot.voters),
    )


def snapshot_from_proto(wire: raft_pb2.RaftSnapshot) -> Snapshot:
    return Snapshot(wire.index, wire.term, wire.data, frozenset(wire.voters))


def message_to_proto(message: Message) -> raft_pb2.RaftMessage:
    wire = raft_pb2.RaftMessage(
        type=_TYPE_TO_WIRE[message.type],
        source=message.source,
        target=message.target,
        term=message.term,
        log_term=message.log_term,
        index=message.index,
        entries=[raft_pb2.RaftEntry(term=e.term, index=e.index, data=e.data)
                 for e in message.entries],
        commit=message.commit,
        reject=message.reject,
        reject_hint=message.reject_hint,
        force=message.force,
    )
    if message.snapshot is not None:
        wire.snapshot.CopyFrom(snapshot_to_proto(message.snapshot))
    return wire


def message_from_proto(wire: raft_pb2.RaftMessage) -> Message:
    """Raises KeyError for an unknown message type."""
    return Message(
        type=_TYPE_FROM_WIRE[wire.type],
        source=wire.source,
        target=wire.target,
        term=wire.term,
        log_term=wire.log_term,
        index=wire.index,
        entries=tuple(Entry(e.term, e.index, e.data) for e in wire.entries),
        commit=wire.commit,
        reject=wire.reject,
        reject_hint=wire.reject_hint,
        snapshot=snapshot_from_proto(wire.snapshot) if wire.HasField("snapshot") else None,
        force=wire.force,
    )
