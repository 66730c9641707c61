"""The controller's durable Raft state in its metadata log directory, in the spirit of
Kafka's `__cluster_metadata-0`:

- `quorum-state`: term, vote and commit as JSON, replaced atomically (tmp, fsync, rename);
- `00000000000000000000.log`: framed entries, each `length, CRC32C, term, index, data`
  (length counts what follows the CRC; the CRC covers term, index and data);
- `<20-digit index>-<10-digit term>.checkpoint`: the newest snapshot, its index being the
  last Raft index it covers: `CRC32C, index, term, voter count, voters, data`.

Only an unsynced tail of the log can be torn by a crash, so `load` cuts the log at the first
incomplete or corrupt frame. Blocking IO: the shell calls it from a worker thread, one call
at a time.
"""

from __future__ import annotations

import json
import logging
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import crc32c

from odradek.log.checkpoint import fsync_directory
from odradek.raft.types import Entry, HardState, Snapshot
from odradek.runtime.service import StartupError

log = logging.getLogger("odradek.controller.store")

LOG_FILE = "00000000000000000000.log"
STATE_FILE = "quorum-state"
STATE_VERSION = 0
_FRAME_HEADER = struct.Struct(">iIqq")
"""length, CRC32C, term, index; the entry's data follows."""
_FRAME_PREFIX = 8
"""Bytes before what the length and the CRC cover (length and CRC themselves)."""
_SNAPSHOT_HEADER = struct.Struct(">Iqqi")
"""CRC32C (of everything after it), index, term, voter count; voters and data follow."""
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


class RaftStoreError(StartupError):
    """The stored state cannot be trusted: a corrupt snapshot or quorum-state file, or a log
    that does not follow its snapshot."""


@dataclass(frozen=True, slots=True)
class PersistedRaftState:
    hard_state: HardState
    snapshot: Snapshot | None
    entries: list[Entry]
    """Consecutive, starting right after the snapshot (or at index 1)."""


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def _frame(entry: Entry) -> bytes:
    body = struct.pack(">qq", entry.term, entry.index) + entry.data
    return struct.pack(">iI", len(body), crc32c.crc32c(body)) + body


def snapshot_file_name(snapshot: Snapshot) -> str:
    return f"{snapshot.index:020d}-{snapshot.term:010d}.checkpoint"


def _encode_snapshot(snapshot: Snapshot) -> bytes:
    voters = sorted(snapshot.voters)
    rest = (struct.pack(f">qqi{len(voters)}i", snapshot.index, snapshot.term, len(voters),
                        *voters)
            + snapshot.data)
    return struct.pack(">I", crc32c.crc32c(rest)) + rest


def _read_snapshot(path: Path) -> Snapshot:
    data = path.read_bytes()
    if len(data) < _SNAPSHOT_HEADER.size:
        raise RaftStoreError(f"snapshot {path} is truncated: {len(data)} bytes")
    checksum, index, term, count = _SNAPSHOT_HEADER.unpack_from(data)
    if crc32c.crc32c(data[4:]) != checksum:
        raise RaftStoreError(f"snapshot {path} fails its CRC32C checksum: the file is corrupt")
    if snapshot_file_name(Snapshot(index, term, b"")) != path.name:
        raise RaftStoreError(f"snapshot {path} holds index {index} and term {term}, "
                             f"which its name does not")
    start = _SNAPSHOT_HEADER.size
    voters = frozenset(struct.unpack_from(f">{count}i", data, start))
    return Snapshot(index, term, data[start + 4 * count:], voters)


class RaftLogStore:
    """The durable log, hard state and snapshot of one Raft node. Call `load` first."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.log_path = directory / LOG_FILE
        self.state_path = directory / STATE_FILE
        self._loaded = False
        self._hard_state = HardState()
        self._stored_hard_state = HardState()
        """What `quorum-state` holds; `_hard_state` runs ahead of it after unsynced saves."""
        self._snapshot: Snapshot | None = None
        self._first_index = 1
        self._positions: list[int] = []
        """Byte position in the log file of each stored entry, from `first_index` on."""
        self._terms: list[int] = []
        """Term of each stored entry, from `first_index` on."""
        self._size = 0
        """Bytes of whole frames in the log file."""

    @property
    def first_index(self) -> int:
        """The first stored entry's index (snapshot index + 1, or 1)."""
        return self._first_index

    @property
    def last_index(self) -> int:
        """The last stored entry's index (`first_index - 1` when the log is empty)."""
        return self._first_index + len(self._positions) - 1

    def load(self) -> PersistedRaftState:
        """Read the directory and recover it after a crash: drop leftover temporary files,
        older snapshots and a torn log tail, and the entries the snapshot covers."""
        for tmp in self.directory.glob("*.tmp"):
            tmp.unlink()
        self._hard_state = self._stored_hard_state = self._read_hard_state()
        self._snapshot = self._read_newest_snapshot()
        entries = self._recover_log()
        base = self._snapshot.index if self._snapshot is not None else 0
        self._first_index = entries[0].index if entries else base + 1
        if self._first_index > base + 1 or (self._snapshot is None and self._first_index != 1):
            raise RaftStoreError(f"the log in {self.directory} starts at index "
                                 f"{self._first_index}, leaving a gap after index {base}")
        if self._snapshot is not None:
            self._compact(self._snapshot)
        self._loaded = True
        kept = entries[len(entries) - len(self._positions):]
        return PersistedRaftState(self._hard_state, self._snapshot, kept)

    def save(self, hard_state: HardState | None, entries: Sequence[Entry], sync: bool) -> None:
        """Write `entries`, replacing every stored entry from `entries[0].index` on (Raft's
        conflict truncation), then `hard_state`. With `sync` everything saved so far is
        durable on return; without it, the quorum-state file keeps its old content until
        the next synced save (replacing it unsynced could lose the term and vote)."""
        self._check_loaded()
        if entries:
            self._append(entries, sync)
        if hard_state is not None:
            self._hard_state = hard_state
        if sync and self._hard_state != self._stored_hard_state:
            state = self._hard_state
            _write_atomically(self.state_path, json.dumps({
                "term": state.term, "vote": state.vote, "commit": state.commit,
                "data_version": STATE_VERSION,
            }).encode())
            self._stored_hard_state = state

    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Store `snapshot` durably in place of the older one, then drop the entries it
        covers: all of them when the log ends before it or disagrees with its term (a
        snapshot installed from the leader). A snapshot no newer than the stored one is
        ignored."""
        self._check_loaded()
        if self._snapshot is not None and snapshot.index <= self._snapshot.index:
            return
        path = self.directory / snapshot_file_name(snapshot)
        _write_atomically(path, _encode_snapshot(snapshot))
        for older in self.directory.glob("*.checkpoint"):
            if older != path:
                older.unlink()
        self._snapshot = snapshot
        self._compact(snapshot)

    def _check_loaded(self) -> None:
        if not self._loaded:
            raise RuntimeError("RaftLogStore.load() must be called before writing")

    def _read_hard_state(self) -> HardState:
        try:
            text = self.state_path.read_bytes()
            if not text:
                return HardState()
            raw = json.loads(text)
            version = raw["data_version"]
            state = HardState(int(raw["term"]), int(raw["vote"]), int(raw["commit"]))
        except FileNotFoundError:
            return HardState()
        except (ValueError, KeyError, TypeError) as exc:
            raise RaftStoreError(f"{self.state_path} is not a valid quorum-state file: "
                                 f"{exc!r}") from exc
        if version != STATE_VERSION:
            raise RaftStoreError(f"{self.state_path} has data_version {version}; "
                                 f"this controller reads version {STATE_VERSION}")
        return state

    def _read_newest_snapshot(self) -> Snapshot | None:
        """The newest snapshot; older ones (left by a crash) are deleted once it reads back."""
        paths = sorted(p for p in self.directory.iterdir() if _SNAPSHOT_NAME.fullmatch(p.name))
        if not paths:
            return None
        snapshot = _read_snapshot(paths[-1])
        for older in paths[:-1]:
            older.unlink()
        return snapshot

    def _recover_log(self) -> list[Entry]:
        """The whole frames of the log file, as long as their indexes follow one another and
        their terms do not decrease (a stale frame left behind a lost truncation breaks
        either); the tail after them is truncated."""
        self._positions, self._terms, self._size = [], [], 0
        try:
            data = self.log_path.read_bytes()
        except FileNotFoundError:
            return []
        entries: list[Entry] = []
        position = 0
        while position + _FRAME_HEADER.size <= len(data):
            length, checksum, term, index = _FRAME_HEADER.unpack_from(data, position)
            end = position + _FRAME_PREFIX + length
            if (length < _FRAME_HEADER.size - _FRAME_PREFIX or end > len(data)
                    or crc32c.crc32c(data[position + _FRAME_PREFIX:end]) != checksum
                    or (entries and (index != entries[-1].index + 1
                                     or term < entries[-1].term))):
                break
            entries.append(Entry(term, index, data[position + _FRAME_HEADER.size:end]))
            self._positions.append(position)
            self._terms.append(term)
            position = end
        if position < len(data):
            log.warning("metadata log %s: cutting %d bytes of torn or corrupt tail at byte %d, "
                        "after entry %d", self.log_path, len(data) - position, position,
                        entries[-1].index if entries else 0)
            with open(self.log_path, "r+b") as file:
                file.truncate(position)
                os.fsync(file.fileno())
        self._size = position
        return entries

    def _append(self, entries: Sequence[Entry], sync: bool) -> None:
        first = entries[0].index
        if not self._first_index <= first <= self.last_index + 1:
            raise ValueError(f"entries from index {first} do not fit the stored log "
                             f"[{self._first_index}, {self.last_index}]")
        for before, after in zip(entries, entries[1:], strict=False):
            if after.index != before.index + 1:
                raise ValueError(f"entries jump from index {before.index} to {after.index}")
        kept = first - self._first_index
        start = self._positions[kept] if kept < len(self._positions) else self._size
        del self._positions[kept:], self._terms[kept:]
        frames = [_frame(entry) for entry in entries]
        created = not self.log_path.exists()
        with open(self.log_path, "w+b" if created else "r+b") as file:
            file.seek(start)
            file.truncate()
            file.write(b"".join(frames))
            file.flush()
            if sync:
                os.fsync(file.fileno())
        position = start
        for entry, frame in zip(entries, frames, strict=True):
            self._positions.append(position)
            self._terms.append(entry.term)
            position += len(frame)
        self._size = position
        if created and sync:
            fsync_directory(self.directory)

    def _compact(self, snapshot: Snapshot) -> None:
        """Drop the stored entries up to `snapshot.index` (every one when the log does not
        hold the snapshot's own entry) by rewriting the log file atomically."""
        index = snapshot.index
        if index < self._first_index:
            return
        if index <= self.last_index and self._terms[index - self._first_index] == snapshot.term:
            dropped = index + 1 - self._first_index
        else:
            dropped = len(self._positions)
        if dropped:
            cut = self._positions[dropped] if dropped < len(self._positions) else self._size
            with open(self.log_path, "rb") as file:
                file.seek(cut)
                tail = file.read(self._size - cut)
            _write_atomically(self.log_path, tail)
            self._positions = [position - cut for position in self._positions[dropped:]]
            self._terms = self._terms[dropped:]
            self._size -= cut
        self._first_index = index + 1
