"""The aborted-transaction index, `<base offset>.txnindex` beside each segment (Kafka's
TransactionIndex): an entry per transaction aborted by a marker in the segment, 34 bytes
each: int16 version (0), int64 producer id, int64 first offset, int64 last offset (the
marker's), int64 last stable offset (after the abort).

read_committed fetches send the aborted transactions overlapping what they return, so that
clients drop those records. The file exists only once a segment has an aborted transaction.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size


class CorruptIndexError(ValueError):
    """A transaction index that is not a whole number of version-0 entries."""


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        """Loaded on first use."""

    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = _load(self.path)
        return self._entries

    def discard_if_corrupt(self) -> bool:
        """Delete a corrupt file (its entries are rebuilt by replaying the segment); True
        when that happened."""
        try:
            self.entries()
        except CorruptIndexError:
            self.path.unlink(missing_ok=True)
            self._entries = []
            return True
        return False

    def append(self, entry: AbortedTxn) -> None:
        entries = self.entries()
        if entries and entry.last_offset <= entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {entry.last_offset} appended after "
                             f"one ending at {entries[-1].last_offset} in {self.path.name}")
        with open(self.path, "ab") as out:
            out.write(_ENTRY.pack(VERSION, entry.producer_id, entry.first_offset,
                                  entry.last_offset, entry.last_stable_offset))
        entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or past `offset`."""
        entries = self.entries()
        kept = [entry for entry in entries if entry.last_offset < offset]
        if len(kept) == len(entries):
            return
        if kept:
            with open(self.path, "r+b") as out:
                out.truncate(len(kept) * ENTRY_SIZE)
        else:
            self.path.unlink(missing_ok=True)
        self._entries = kept

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound), and whether no later segment can
        hold more (an entry's last stable offset reached the bound)."""
        found = []
        for entry in self.entries():
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
                found.append(entry)
                if entry.last_stable_offset >= upper_bound:
                    return found, True
        return found, False

    def flush(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _load(path: Path) -> list[AbortedTxn]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    if len(data) % ENTRY_SIZE:
        raise CorruptIndexError(f"{path.name}: {len(data)} bytes is not a whole number of "
                                f"{ENTRY_SIZE}-byte entries")
    entries = []
    for position in range(0, len(data), ENTRY_SIZE):
        version, producer_id, first, last, stable = _ENTRY.unpack_from(data, position)
        if version != VERSION:
            raise CorruptIndexError(f"{path.name}: entry version {version}")
        entries.append(AbortedTxn(producer_id, first, last, stable))
    return entries


def collect_aborted_transactions(indexes: Sequence[TransactionIndex], fetch_offset: int,
                                 upper_bound: int) -> list[AbortedTxn]:
    """Walk the segments' indexes from the one holding `fetch_offset` until one says no
    later segment can add to the answer (UnifiedLog.collectAbortedTransactions)."""
    found: list[AbortedTxn] = []
    for index in indexes:
        entries, complete = index.collect(fetch_offset, upper_bound)
        found += entries
        if complete:
            break
    return found
