"""Producer state snapshot files, `<offset>.snapshot` in the partition directory (Kafka's).

A snapshot holds the producer state as of its offset: every batch below it applied. The log
writes one when it rolls a segment and when it closes, so that loading replays at most the
batches past the newest snapshot.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from odradek.txn.producer_state import CorruptSnapshotError, ProducerStateManager

from .checkpoint import fsync_directory
from .segment import segment_path

SNAPSHOT_SUFFIX = ".snapshot"
logger = logging.getLogger("odradek.log")


def snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in `directory`, ascending."""
    offsets = []
    for path in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        stem = path.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def write_snapshot(directory: Path, offset: int, state: ProducerStateManager,
                   *, sync: bool = False) -> None:
    """Write the snapshot for `offset` under a temporary name and rename it into place."""
    path = segment_path(directory, offset, SNAPSHOT_SUFFIX)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(state.snapshot())
        if sync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_directory(directory)


def load_latest(directory: Path, at_most: int) -> tuple[int, ProducerStateManager] | None:
    """The newest readable snapshot at or below `at_most`; corrupt ones are deleted."""
    for offset in reversed(snapshot_offsets(directory)):
        if offset > at_most:
            continue
        path = segment_path(directory, offset, SNAPSHOT_SUFFIX)
        try:
            return offset, ProducerStateManager.from_snapshot(path.read_bytes())
        except (CorruptSnapshotError, OSError) as error:
            logger.warning("%s: deleting unreadable producer snapshot %s: %s",
                           directory.name, path.name, error)
            path.unlink(missing_ok=True)
    return None


def delete_snapshots(directory: Path, *, above: int | None = None,
                     below: int | None = None) -> None:
    """Delete the snapshots past `above` (truncation) or under `below` (retention)."""
    for offset in snapshot_offsets(directory):
        if (above is not None and offset > above) or (below is not None and offset < below):
            segment_path(directory, offset, SNAPSHOT_SUFFIX).unlink(missing_ok=True)
