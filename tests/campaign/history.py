"""What every client of a campaign did and saw, as plain records: the checker's only input.

Times are `time.monotonic()` seconds of the campaign's one process. Values are unique strings;
a transaction's id is unique too. `History.to_json`/`from_json` keep a run for replaying the
checker on it by hand.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any

COMMITTED = "committed"
ABORTED = "aborted"
UNKNOWN = "unknown"
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True)
class Send:
    process: str
    value: str
    topic: str
    time: float
    txn: str | None = None


UNKNOWN_OFFSET = -1
"""An Ack's offset when the delivery report had none: librdkafka's idempotent producer
reports a message whose request timed out as delivered, offset unknown, once the broker has
acknowledged a later sequence."""


@dataclass(frozen=True)
class Ack:
    """A delivery report without error: the record is at (topic, partition, offset), or
    somewhere in that partition when the offset is UNKNOWN_OFFSET."""

    process: str
    value: str
    topic: str
    partition: int
    offset: int
    time: float
    latency: float
    txn: str | None = None


@dataclass(frozen=True)
class Failure:
    """A delivery report with an error: the write may or may not have happened."""

    process: str
    value: str
    error: str
    time: float


@dataclass(frozen=True)
class Txn:
    """A transaction and what its producer learned of it. `reads` are the values a
    consume-transform-produce transaction consumed; `offsets` the group offsets
    (`"topic/partition"` to offset) it committed; `commit_started` when commit_transaction
    was called (None if it never was)."""

    process: str
    txn: str
    values: list[str]
    outcome: str
    start: float
    end: float
    commit_started: float | None = None
    reads: list[str] = field(default_factory=list)
    group: str | None = None
    offsets: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Read:
    process: str
    isolation: str
    topic: str
    partition: int
    offset: int
    value: str
    time: float
    group: str | None = None


@dataclass(frozen=True)
class Assignment:
    """A rebalance callback (or the first assign) touched these partitions: reads of them
    start a new session, from wherever the group's committed offset says."""

    process: str
    partitions: list[tuple[str, int]]
    time: float


@dataclass(frozen=True)
class Commit:
    """A group offset: committed by a consumer (`source` its name) and acknowledged, or
    observed on the brokers by the campaign's monitor (`source` "monitor")."""

    source: str
    group: str
    topic: str
    partition: int
    offset: int
    time: float
    """A consumer's commit: when it was issued (it commits the positions of that moment);
    the monitor's: when it was read."""


@dataclass(frozen=True)
class Writer:
    """Which producer id and epoch wrote the record at an offset, from the batch header in
    a broker's log files (read after the final read, for the offsets of duplicates)."""

    topic: str
    partition: int
    offset: int
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class Fault:
    kind: str
    target: str
    start: float
    end: float


@dataclass(frozen=True)
class Stored:
    """A record of the final read, made after the cluster healed."""

    isolation: str
    topic: str
    partition: int
    offset: int
    value: str


KINDS: dict[str, type] = {"sends": Send, "acks": Ack, "failures": Failure, "txns": Txn,
                          "reads": Read, "assignments": Assignment, "commits": Commit,
                          "faults": Fault, "final": Stored, "writers": Writer}


@dataclass
class History:
    sends: list[Send] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    final: list[Stored] = field(default_factory=list)
    writers: list[Writer] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, event: Any) -> None:
        """Append an event to its list (any thread)."""
        kind = next(name for name, cls in KINDS.items() if isinstance(event, cls))
        with self.lock:
            getattr(self, kind).append(event)

    def to_json(self) -> dict[str, list[dict[str, Any]]]:
        with self.lock:
            return {name: [asdict(event) for event in getattr(self, name)] for name in KINDS}

    @classmethod
    def from_json(cls, data: dict[str, list[dict[str, Any]]]) -> History:
        history = cls()
        for name, kind in KINDS.items():
            names = {f.name for f in fields(kind)}
            for item in data.get(name, []):
                values = {k: v for k, v in item.items() if k in names}
                if kind is Assignment:
                    values["partitions"] = [tuple(p) for p in values["partitions"]]
                getattr(history, name).append(kind(**values))
        return history
