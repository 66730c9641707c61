"""A simulated disk for one Raft node, with the controller store's semantics: a snapshot is
written durably (and rewrites the log durably); entries and the hard state reach the page
cache first and survive a crash only once a Ready with `must_sync` was carried out."""

from __future__ import annotations

import random

from odradek.raft import Entry, HardState, Snapshot


class SimDisk:
    def __init__(self) -> None:
        self.snapshot: Snapshot | None = None
        self.entries: list[Entry] = []
        """Written entries, following the snapshot (or index 1)."""
        self.hard_state = HardState()
        self._synced_entries: list[Entry] = []
        self._synced_hard_state = HardState()

    @property
    def offset(self) -> int:
        return self.snapshot.index if self.snapshot is not None else 0

    def entry(self, index: int) -> Entry | None:
        position = index - self.offset - 1
        return self.entries[position] if 0 <= position < len(self.entries) else None

    def write(self, hard_state: HardState | None, entries: list[Entry], sync: bool) -> None:
        """Ready's entries replace any stored entry at their index and everything after."""
        if entries:
            first = entries[0].index
            if not self.offset < first <= self.offset + len(self.entries) + 1:
                raise AssertionError(f"entries from {first} leave a gap after the stored log "
                                     f"({self.offset}, {self.offset + len(self.entries)}]")
            del self.entries[first - self.offset - 1:]
            self.entries.extend(entries)
        if hard_state is not None:
            self.hard_state = hard_state
        if sync:
            self._synced_entries = list(self.entries)
            self._synced_hard_state = self.hard_state

    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Durably replace the log's start by `snapshot`: entries after it are kept when the
        log holds the snapshot's own entry, else the whole log goes."""
        if self.snapshot is not None and snapshot.index <= self.snapshot.index:
            return
        own = self.entry(snapshot.index)
        if own is not None and own.term == snapshot.term:
            kept = self.entries[snapshot.index - self.offset:]
        else:
            kept = []
        self.snapshot = snapshot
        self.entries = kept
        synced = [e for e in self._synced_entries if e.index > snapshot.index]
        self._synced_entries = synced if own is not None and own.term == snapshot.term else []

    def crash(self, rng: random.Random) -> None:
        """Unsynced entries are lost; an unsynced hard state (only a commit index moves
        without a sync) may or may not have reached the disk."""
        self.entries = list(self._synced_entries)
        if rng.random() < 0.5:
            self.hard_state = self._synced_hard_state
        self._synced_hard_state = self.hard_state
