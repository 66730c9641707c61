"""The controller's replicated state machine: committed Raft entries are batches of metadata
records replayed into the QuorumController; snapshots are its serialised image. It also keeps
the batches since the last snapshot, which the metadata stream serves to brokers."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable

from odradek.metadata.controller import QuorumController
from odradek.metadata.records import decode_batch, encode_batch
from odradek.raft.types import Snapshot


class ControllerMachine:
    def __init__(self, new_controller: Callable[[], QuorumController]) -> None:
        self._new_controller = new_controller
        self.controller = new_controller()
        self.applied = 0
        self.image_offset = 0
        """Batches after this offset are in `batches`; earlier state only in the image."""
        self.offsets: list[int] = []
        self.batches: list[bytes] = []
        self._changed: asyncio.Event | None = None

    def apply(self, index: int, data: bytes) -> None:
        if data:
            self.controller.replay(decode_batch(data), index)
        self.offsets.append(index)
        self.batches.append(data)
        self.applied = index
        self._notify()

    def restore(self, snapshot: Snapshot) -> None:
        self.controller = self._new_controller()
        self.controller.replay(decode_batch(snapshot.data), snapshot.index)
        self.applied = self.image_offset = snapshot.index
        self.offsets, self.batches = [], []
        self._notify()

    @property
    def holds_records(self) -> bool:
        """Whether any metadata record was ever applied (from a snapshot or an entry)."""
        return self.image_offset > 0 or any(self.batches)

    def snapshot_data(self) -> bytes:
        return encode_batch(self.controller.metadata.to_records())

    def compacted(self, index: int) -> None:
        cut = bisect.bisect_right(self.offsets, index)
        del self.offsets[:cut], self.batches[:cut]
        self.image_offset = max(self.image_offset, index)

    def batches_after(self, offset: int) -> list[tuple[int, bytes]]:
        start = bisect.bisect_right(self.offsets, offset)
        return list(zip(self.offsets[start:], self.batches[start:], strict=True))

    def next_change(self) -> asyncio.Event:
        """An event set when anything more is applied."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
