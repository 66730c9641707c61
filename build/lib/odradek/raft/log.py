"""The in-memory Raft log: the entries after the latest snapshot, addressed by Raft index."""

from __future__ import annotations

from collections.abc import Sequence

from odradek.raft.types import Entry, Snapshot


class RaftLog:
    """Entries `offset + 1 .. last_index`; the entry at `offset` is covered by a snapshot
    (or is the empty start, index 0 term 0)."""

    __slots__ = ("offset", "offset_term", "entries")

    def __init__(self, offset: int = 0, offset_term: int = 0,
                 entries: Sequence[Entry] = ()) -> None:
        self.offset = offset
        self.offset_term = offset_term
        self.entries = list(entries)
        for position, entry in enumerate(self.entries):
            if entry.index != offset + 1 + position:
                raise ValueError(f"entry {position} has index {entry.index}, expected "
                                 f"{offset + 1 + position}: entries must follow index {offset}")

    @property
    def first_index(self) -> int:
        return self.offset + 1

    @property
    def last_index(self) -> int:
        return self.offset + len(self.entries)

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else self.offset_term

    def term_at(self, index: int) -> int | None:
        """The term of the entry at `index`; None when compacted away or past the end."""
        if index == self.offset:
            return self.offset_term
        if self.offset < index <= self.offset + len(self.entries):
            return self.entries[index - self.offset - 1].term
        return None

    def slice(self, first: int, last: int) -> list[Entry]:
        """Entries `first .. last` inclusive, clipped to what the log holds after `offset`."""
        start = max(first - self.offset - 1, 0)
        return self.entries[start:max(last - self.offset, 0)]

    def is_up_to_date(self, last_term: int, last_index: int) -> bool:
        """Whether a log ending at (last_term, last_index) is at least as up to date as this
        one (Raft §5.4.1): a later last term, or the same last term and no shorter."""
        return (last_term, last_index) >= (self.last_term, self.last_index)

    def find_conflict_by_term(self, index: int, term: int) -> int:
        """The largest index <= `index` whose term is <= `term` (or the offset, below which
        terms are unknown). Log terms never decrease along a log, so no entry between the
        result and `index` can match an entry of `term` or earlier."""
        index = min(index, self.last_index)
        while index > self.offset and self.entries[index - self.offset - 1].term > term:
            index -= 1
        return index

    def append(self, entries: Sequence[Entry]) -> None:
        """Append `entries`, which must start right after `last_index`."""
        if entries and entries[0].index != self.last_index + 1:
            raise ValueError(f"entries from {entries[0].index} do not follow {self.last_index}")
        self.entries.extend(entries)

    def truncate_after(self, index: int) -> None:
        """Drop every entry after `index` (index >= offset)."""
        del self.entries[index - self.offset:]

    def compact(self, index: int, term: int) -> None:
        """Drop the entries up to `index`, now covered by a snapshot."""
        del self.entries[:index - self.offset]
        self.offset, self.offset_term = index, term

    def restore(self, snapshot: Snapshot) -> None:
        """Replace the whole log by the snapshot's position."""
        self.entries = []
        self.offset, self.offset_term = snapshot.index, snapshot.term
