"""Kafka's leader-epoch cache (LeaderEpochFileCache): the first offset of each leader epoch.

Followers ask the leader for the end offset of their latest epoch (OffsetForLeaderEpoch) and
truncate what lies past it, the divergent tail of an earlier leader (KIP-101, KIP-279).
The cache is kept in `<partition dir>/leader-epoch-checkpoint`:

    0          <- version
    2          <- number of entries
    0 0        <- epoch start offset
    3 1500

Written atomically (a fsynced `.tmp` sibling renamed over it) whenever it changes.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import CheckpointError, write_lines_atomically

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
_VERSION = 0


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Entries strictly increasing in both epoch and start offset."""

    def __init__(self, path: Path | None, entries: list[EpochEntry] | None = None) -> None:
        """`path` None keeps the cache in memory only (tests)."""
        self.path = path
        self._entries: list[EpochEntry] = list(entries or [])

    @classmethod
    def load(cls, directory: Path) -> LeaderEpochCache:
        """The cache of a partition dir; empty when it has no checkpoint file."""
        path = directory / LEADER_EPOCH_CHECKPOINT
        return cls(path, _read(path))

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def epoch_at(self, offset: int) -> int:
        """The epoch the record at `offset` was written in (UNDEFINED_EPOCH before any)."""
        starts = [entry.start_offset for entry in self._entries]
        i = bisect.bisect_right(starts, offset) - 1
        return self._entries[i].epoch if i >= 0 else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset`, as Kafka does: nothing changes when
        the latest epoch is `epoch` from no later offset; otherwise entries of this epoch or
        later, or starting at or past `start_offset`, are replaced by the new one."""
        latest = self._entries[-1] if self._entries else None
        if epoch < 0 or (latest is not None and latest.epoch == epoch
                         and latest.start_offset <= start_offset):
            return
        kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._replace([*kept, EpochEntry(epoch, start_offset)])

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's OffsetForLeaderEpoch answers: the end offset of the
        largest epoch <= `epoch` is the start of the next larger epoch (the log end offset for
        the latest); (UNDEFINED_EPOCH, UNDEFINED_OFFSET) when `epoch` is undefined or larger
        than every epoch known."""
        entries = self._entries
        if epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == entries[-1].epoch:
            return epoch, log_end_offset
        epochs = [entry.epoch for entry in entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to `end_offset`: forget epochs starting at or past it."""
        if self._entries and self._entries[-1].start_offset >= end_offset:
            self._replace([e for e in self._entries if e.start_offset < end_offset])

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: the epoch holding it starts there."""
        entries = self._entries
        i = bisect.bisect_right([e.start_offset for e in entries], start_offset) - 1
        if i < 0 or (i == 0 and entries[0].start_offset == start_offset):
            return
        self._replace([EpochEntry(entries[i].epoch, start_offset), *entries[i + 1:]])

    def clear(self) -> None:
        if self._entries:
            self._replace([])

    def save(self) -> None:
        if self.path is not None:
            _write(self.path, self._entries)

    def _replace(self, entries: list[EpochEntry]) -> None:
        """The file first: a write that fails leaves the cache as the file has it."""
        if self.path is not None:
            _write(self.path, entries)
        self._entries = entries


def _write(path: Path, entries: list[EpochEntry]) -> None:
    lines = [str(_VERSION), str(len(entries))]
    lines += [f"{entry.epoch} {entry.start_offset}" for entry in entries]
    write_lines_atomically(path, lines)


def _read(path: Path) -> list[EpochEntry]:
    try:
        lines = path.read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return []
    try:
        numbers = [int(token) for token in lines]
    except ValueError:
        raise CheckpointError(f"{path}: not a leader-epoch checkpoint") from None
    if len(numbers) < 2 or numbers[0] != _VERSION or len(numbers) != 2 + 2 * numbers[1]:
        raise CheckpointError(f"{path}: not a version {_VERSION} leader-epoch checkpoint")
    entries = [EpochEntry(numbers[i], numbers[i + 1]) for i in range(2, len(numbers), 2)]
    for earlier, later in zip(entries, entries[1:], strict=False):
        if later.epoch <= earlier.epoch or later.start_offset < earlier.start_offset:
            raise CheckpointError(f"{path}: epochs out of order")
    return entries
