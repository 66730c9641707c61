"""Raft as a pure state machine (no IO): `RaftNode` with tick/step/propose/ready/advance."""

from odradek.raft.node import RaftConfig, RaftNode, RaftSafetyError
from odradek.raft.types import (
    NO_NODE,
    Entry,
    HardState,
    Message,
    MessageType,
    NotLeaderError,
    Ready,
    Role,
    Snapshot,
    SoftState,
)

__all__ = [
    "NO_NODE",
    "Entry",
    "HardState",
    "Message",
    "MessageType",
    "NotLeaderError",
    "RaftConfig",
    "RaftNode",
    "RaftSafetyError",
    "Ready",
    "Role",
    "Snapshot",
    "SoftState",
]
