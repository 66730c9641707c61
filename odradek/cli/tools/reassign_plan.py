"""The pure side of `odradek reassign`: Kafka's reassignment JSON formats, generate's proposed
placement, the replication throttles a reassignment needs, the status lines and the copy
progress. Nothing here talks to a cluster."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from odradek.cli.tools.common import ToolError
from odradek.metadata.errors import MetadataError
from odradek.metadata.placement import place_replicas

VERSION = 1
ANY_LOG_DIR = "any"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LOG_DIRS_THROTTLED_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLES = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE, LOG_DIRS_THROTTLED_RATE)
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
TOPIC_THROTTLES = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)


class Partition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Ongoing(NamedTuple):
    """A reassignment in progress, as ListPartitionReassignments describes it."""

    replicas: list[int]
    adding: list[int]
    removing: list[int]


@dataclass(frozen=True)
class Move:
    """The brokers a partition's data comes from and the brokers it is copied to."""

    sources: frozenset[int]
    destinations: frozenset[int]


Assignment = dict[Partition, list[int]]


# --- JSON formats ------------------------------------------------------------------------


def _field(entry: Any, name: str, kind: type, what: str) -> Any:
    if not isinstance(entry, dict) or name not in entry:
        raise ToolError(f"{what} has no \"{name}\" field: {json.dumps(entry)}")
    value = entry[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ToolError(f"\"{name}\" must be {'a string' if kind is str else 'an integer'} "
                        f"in {what}: {json.dumps(entry)}")
    return value


def _int_list(entry: dict[str, Any], name: str, what: str) -> list[int]:
    values = _field(entry, name, list, what)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ToolError(f"\"{name}\" must be a list of integers in {what}: {json.dumps(entry)}")
    return list(values)


def _entries(data: Any, key: str, what: str) -> list[Any]:
    """The list under `key` of a versioned document (version 1 only, as Kafka reads it)."""
    if not isinstance(data, dict):
        raise ToolError(f"{what} must be a JSON object")
    version = data.get("version", VERSION)
    if version != VERSION:
        raise ToolError(f"Not supported version field value {version}")
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise ToolError(f"\"{key}\" must be a list in {what}")
    return entries


def parse_topics_to_move(data: Any) -> list[str]:
    """The topics of a --topics-to-move-json-file: {"topics": [{"topic": "foo"}], "version": 1}."""
    topics = [_field(entry, "topic", str, "a topic entry")
              for entry in _entries(data, "topics", "the topics to move")]
    duplicates = sorted(name for name, count in Counter(topics).items() if count > 1)
    if duplicates:
        raise ToolError("List of topics to reassign contains duplicate entries: "
                        + ",".join(duplicates))
    if not topics:
        raise ToolError("the topics to move JSON lists no topic")
    return topics


def parse_reassignment(data: Any) -> Assignment:
    """The target replicas of a --reassignment-json-file, checked as Kafka checks them before
    executing: partitions listed once, replica lists non-empty and without duplicates, and
    "log_dirs" (optional) as long as "replicas". Moves between log directories are not
    supported: every log dir must be "any"."""
    entries = []
    for entry in _entries(data, "partitions", "the reassignment"):
        partition = Partition(_field(entry, "topic", str, "a partition entry"),
                              _field(entry, "partition", int, "a partition entry"))
        replicas = _int_list(entry, "replicas", "a partition entry")
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise ToolError(f"Size of replicas list {replicas} is different from size of log "
                            f"dirs list {log_dirs} for partition {partition}")
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ToolError(f"moving replicas between log directories is not supported "
                            f"(log_dirs of {partition} must be \"{ANY_LOG_DIR}\")")
        entries.append((partition, replicas))
    if not entries:
        raise ToolError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise ToolError("Partition replica list cannot be empty")
    repeated = [p for p, count in Counter(p for p, _ in entries).items() if count > 1]
    if repeated:
        raise ToolError("Partition reassignment contains duplicate topic partitions: "
                        + ",".join(map(str, sorted(repeated))))
    doubled = [f"{p} contains multiple entries for "
               + ",".join(str(b) for b, n in sorted(Counter(replicas).items()) if n > 1)
               for p, replicas in sorted(entries) if len(set(replicas)) != len(replicas)]
    if doubled:
        raise ToolError("Partition replica lists may not contain duplicate entries: "
                        + ". ".join(doubled))
    return dict(entries)


def reassignment_json(assignment: Mapping[Partition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON, on one line, partitions in topic and partition order."""
    return json.dumps({"version": VERSION, "partitions": [
        {"topic": p.topic, "partition": p.partition, "replicas": list(assignment[p]),
         "log_dirs": [ANY_LOG_DIR] * len(assignment[p])}
        for p in sorted(assignment)]}, separators=(",", ":"))


def parse_broker_list(text: str) -> list[int]:
    """A --broker-list such as "1,2,3": integers, each once."""
    try:
        brokers = [int(item) for item in text.split(",")]
    except ValueError:
        raise ToolError(f"--broker-list must be comma-separated broker ids, got {text!r}"
                        ) from None
    duplicates = sorted(b for b, n in Counter(brokers).items() if n > 1)
    if duplicates:
        raise ToolError(f"Broker list contains duplicate entries: {duplicates}")
    return brokers


# --- generate ----------------------------------------------------------------------------


def propose(current: Mapping[Partition, Sequence[int]],
            brokers: Sequence[tuple[int, str | None]]) -> Assignment:
    """New replicas for every partition of `current` over `brokers` ((id, rack)), keeping each
    topic's replication factor. The placement is the one Odradek's controller gives new
    partitions (distinct brokers and racks, leaders and replicas spread evenly), so the same
    input always gives the same proposal. Topics are placed in name order, each going on
    round the brokers where the previous one stopped, so that leadership stays even across
    topics too (Kafka starts each topic at a random broker instead)."""
    by_topic: dict[str, list[Partition]] = {}
    for partition in current:
        by_topic.setdefault(partition.topic, []).append(partition)
    proposal: Assignment = {}
    turn = 0
    for topic in sorted(by_topic):
        partitions = sorted(by_topic[topic])
        factor = len(current[partitions[0]])
        try:
            placed = place_replicas(turn, len(partitions), factor, brokers, {})
        except MetadataError as error:
            raise ToolError(f"cannot place {topic}: {error.message}") from None
        proposal.update(zip(partitions, placed, strict=True))
        turn += len(partitions)
    return proposal


def placement_brokers(wanted: Sequence[int], racks: Mapping[int, str | None],
                      rack_aware: bool) -> list[tuple[int, str | None]]:
    """(id, rack) of the --broker-list brokers; all must be in the cluster and, when racks
    are used, either all or none of them must have one (Kafka's rule)."""
    unknown = [b for b in wanted if b not in racks]
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]}")
    brokers = [(b, racks[b] if rack_aware else None) for b in wanted]
    rackless = sum(rack is None for _, rack in brokers)
    if rack_aware and 0 < rackless < len(brokers):
        raise ToolError("Not all brokers have rack information. Add --disable-rack-aware in "
                        "command line to make replica assignment without rack information.")
    return brokers


# --- execute: throttles ------------------------------------------------------------------


def moves(ongoing: Mapping[Partition, Ongoing], proposed: Mapping[Partition, Sequence[int]],
          current: Mapping[Partition, Sequence[int]]) -> dict[Partition, Move]:
    """Where data flows, for the reassignments in progress and the proposed ones: a proposed
    partition already moving keeps its sources (the replicas it had before that move)."""
    result = {p: Move(frozenset(o.replicas) - frozenset(o.adding), frozenset(o.adding))
              for p, o in ongoing.items()}
    for partition, replicas in proposed.items():
        known = result.get(partition)
        sources = known.sources if known is not None else frozenset(current[partition])
        result[partition] = Move(sources, frozenset(replicas) - sources)
    return result


def _throttled_replicas(partition_moves: Mapping[Partition, Move], sources: bool
                        ) -> dict[str, str]:
    entries: dict[str, set[tuple[int, int]]] = {}
    for partition, move in partition_moves.items():
        brokers = move.sources if sources else move.destinations - move.sources
        entries.setdefault(partition.topic, set()).update(
            (partition.partition, b) for b in brokers)
    return {topic: ",".join(f"{p}:{b}" for p, b in sorted(pairs))
            for topic, pairs in entries.items()}


def leader_throttles(partition_moves: Mapping[Partition, Move]) -> dict[str, str]:
    """Each topic's leader.replication.throttled.replicas: the source replicas."""
    return _throttled_replicas(partition_moves, sources=True)


def follower_throttles(partition_moves: Mapping[Partition, Move]) -> dict[str, str]:
    """Each topic's follower.replication.throttled.replicas: the new replicas."""
    return _throttled_replicas(partition_moves, sources=False)


def reassigning_brokers(partition_moves: Mapping[Partition, Move]) -> list[int]:
    """The brokers that send or receive data: their throttled rates are set."""
    return sorted({b for m in partition_moves.values() for b in m.sources | m.destinations})


# --- verify and list ---------------------------------------------------------------------


def status_line(partition: Partition, current: Sequence[int] | None,
                target: Sequence[int]) -> str:
    """Kafka's verify line for one partition; `current` is None while it is still moving."""
    if current is None:
        return f"Reassignment of partition {partition} is still in progress."
    if list(current) == list(target):
        return f"Reassignment of partition {partition} is completed."
    return (f"There is no active reassignment of partition {partition}, but replica set is "
            f"{_ids(current)} rather than {_ids(target)}.")


def ongoing_line(partition: Partition, ongoing: Ongoing) -> str:
    """Kafka's --list line for one reassignment in progress."""
    line = f"{partition}: replicas: {_ids(ongoing.replicas)}."
    if ongoing.adding:
        line += f" adding: {_ids(ongoing.adding)}."
    if ongoing.removing:
        line += f" removing: {_ids(ongoing.removing)}."
    return line


def _ids(brokers: Iterable[int]) -> str:
    return ",".join(map(str, brokers))


def plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


# --- verify --wait: progress -------------------------------------------------------------


@dataclass
class CopyProgress:
    """Bytes copied to the new replicas of the partitions being reassigned: per partition,
    the adding replicas' log sizes (each capped at the leader's size) against the leader's
    size times the number of adding replicas. A finished partition counts as fully copied."""

    totals: dict[Partition, int] = field(default_factory=dict)
    copied: dict[Partition, int] = field(default_factory=dict)

    def observe(self, partition: Partition, leader_size: int,
                adding_sizes: Sequence[int]) -> None:
        self.totals[partition] = leader_size * len(adding_sizes)
        self.copied[partition] = sum(min(size, leader_size) for size in adding_sizes)

    def finish(self, partition: Partition) -> None:
        self.copied[partition] = self.totals.get(partition, 0)

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    @property
    def completed(self) -> int:
        return sum(self.copied.values())

    def percent(self, done: bool) -> int:
        if not self.total:
            return 100 if done else 0
        return self.completed * 100 // self.total
