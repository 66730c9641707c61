"""The plain data `odradek groups` works on: partitions, members, described groups."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

MISSING = "-"
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
"""Group states as Kafka names them; librdkafka reports no others (KIP-848's Assigning and
Reconciling come back as Unknown)."""
TYPES = ("Classic", "Consumer", "Share")


class GroupsError(Exception):
    """A failure to report as `Error: <message>` with exit code 1."""


class Partition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True)
class Member:
    consumer_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[Partition, ...]
    target_assignment: tuple[Partition, ...] | None = None


@dataclass(frozen=True)
class GroupInfo:
    """A described group; `state` and `type` use Kafka's names ("Stable", "Classic")."""

    group_id: str
    state: str
    type: str
    coordinator: str
    assignment_strategy: str
    members: tuple[Member, ...]
