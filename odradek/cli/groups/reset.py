"""Planning `reset-offsets`: its arguments, the partitions in scope and their new offsets."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, NamedTuple

from odradek.cli.groups.model import GroupsError, Partition

if TYPE_CHECKING:
    from odradek.cli.groups.admin import GroupAdmin

INACTIVE_STATES = frozenset({"Empty", "Dead"})


def parse_datetime(text: str) -> int:
    """An ISO 8601 date-time as epoch milliseconds. Like Kafka, the 'T' is required and a time
    without a zone is UTC; unlike Kafka, seconds and milliseconds may be left out."""
    if "T" not in text:
        raise ValueError(f"invalid date-time {text!r}: expected ISO 8601 with a 'T', "
                         "e.g. 2024-05-01T12:00:00.000")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"invalid date-time {text!r}: expected ISO 8601, "
                         "e.g. 2024-05-01T12:00:00.000+02:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


class TopicArg(NamedTuple):
    """`--topic T` (partitions None: all of them) or `--topic T:0,2`."""

    topic: str
    partitions: tuple[int, ...] | None


def parse_topic_arg(text: str) -> TopicArg:
    """The argparse type of `--topic`."""
    topic, separator, partitions = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"invalid topic {text!r}: no topic name")
    if not separator:
        return TopicArg(topic, None)
    try:
        numbers = tuple(int(p) for p in partitions.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid topic {text!r}: expected TOPIC:PARTITION[,PARTITION...]") from None
    if any(n < 0 for n in numbers):
        raise argparse.ArgumentTypeError(f"invalid topic {text!r}: negative partition")
    return TopicArg(topic, numbers)


@dataclass(frozen=True)
class PartitionOffsets:
    """What a reset plan needs to know of one partition. `at_timestamp` is the first offset
    whose timestamp is at or after the requested one, None when no record is that late."""

    earliest: int
    latest: int
    committed: int | None = None
    at_timestamp: int | None = None


ResetKind = Literal["earliest", "latest", "offset", "datetime", "shift"]


@dataclass(frozen=True)
class ResetTarget:
    """Where to move: `value` is the offset, the shift, or the epoch milliseconds."""

    kind: ResetKind
    value: int = 0


def clamp(offset: int, earliest: int, latest: int) -> int:
    """Kafka's checkOffsetsRange: past the log end goes to the end, before the start to it."""
    return max(earliest, min(offset, latest))


def plan_reset(target: ResetTarget,
               offsets: Mapping[Partition, PartitionOffsets]) -> dict[Partition, int]:
    """The new committed offset of each partition, clamped to [earliest, latest]."""
    plan = {}
    for partition, known in sorted(offsets.items()):
        if target.kind == "earliest":
            wanted = known.earliest
        elif target.kind == "latest":
            wanted = known.latest
        elif target.kind == "offset":
            wanted = target.value
        elif target.kind == "datetime":
            wanted = known.latest if known.at_timestamp is None else known.at_timestamp
        else:
            if known.committed is None:
                raise GroupsError(
                    f"Cannot shift offset for partition {partition.topic}-{partition.partition}"
                    " since there is no current committed offset.")
            wanted = known.committed + target.value
        plan[partition] = clamp(wanted, known.earliest, known.latest)
    return plan


def refusal(group_id: str, state: str | None) -> str | None:
    """Why the offsets of a group in `state` (None: no such group) cannot be reset, if so."""
    if state is None or state in INACTIVE_STATES:
        return None
    return (f"Assignments can only be reset if the group '{group_id}' is inactive, "
            f"but the current state is {state}.")


def reset_scope(topics: Sequence[TopicArg] | None, committed: Mapping[Partition, int],
                admin: GroupAdmin) -> list[Partition]:
    """The partitions to reset: those named by `topics`, or (None) every committed one."""
    if topics is None:
        return sorted(committed)
    partitions = [Partition(t.topic, p) for t in topics for p in t.partitions or ()]
    partitions += admin.topic_partitions(t.topic for t in topics if t.partitions is None)
    return sorted(set(partitions))


def partition_offsets(partitions: Sequence[Partition], committed: Mapping[Partition, int],
                      target: ResetTarget, admin: GroupAdmin) -> dict[Partition, PartitionOffsets]:
    """What plan_reset needs to know of each partition, asked of the brokers."""
    earliest = admin.log_offsets(partitions, "earliest")
    latest = admin.log_offsets(partitions, "latest")
    at_timestamp = (admin.log_offsets(partitions, target.value) if target.kind == "datetime"
                    else {})
    known = {}
    for p in partitions:
        start, end = earliest.get(p), latest.get(p)
        if start is None or end is None or (target.kind == "datetime" and p not in at_timestamp):
            raise GroupsError(f"Could not get the offsets of {p.topic}-{p.partition}: "
                              "no such partition, or no answer from its leader.")
        known[p] = PartitionOffsets(start, end, committed.get(p), at_timestamp.get(p))
    return known
