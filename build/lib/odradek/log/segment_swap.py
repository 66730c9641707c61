"""Replacing segments with cleaned ones so that a crash at any point leaves either the old
segments or the new ones, never a mix.

The cleaner writes the new segments (log and index files) into `cleaner-staging/` inside the
partition dir. The commit point is the `cleaner-swap` manifest, written atomically: the
staged files to move in and the old files to delete. `finish_swap` carries the manifest out
and can be repeated (after a crash, at the next load) until the manifest is gone. Without a
manifest the staging dir is an uncommitted leftover, deleted at load.

    0                          <- version
    move 00000000000000000000.log
    move 00000000000000000000.index
    delete 00000000000000004096.log
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .checkpoint import fsync_directory, write_lines_atomically

STAGING_DIR = "cleaner-staging"
SWAP_MANIFEST = "cleaner-swap"
VERSION = "0"

SwapPoint = Literal["staged", "committed"]
"""The points of a swap a crash test stops at: `staged` (the new segments written, no
manifest yet) and `committed` (the manifest written, the swap not yet carried out)."""
SwapHook = Callable[[Path, SwapPoint], None]
"""Called with the partition dir at each swap point; injected by tests, None otherwise."""


@dataclass(frozen=True, slots=True)
class StagedGroup:
    """Old segments (by base offset) and the one cleaned segment that replaces them."""

    old_bases: tuple[int, ...]
    new_base: int
    files: tuple[str, ...]
    """Names of the staged files (log and indexes)."""


class CorruptSwapManifestError(ValueError):
    """A cleaner-swap file that does not follow the format."""


def staging_dir(directory: Path) -> Path:
    return directory / STAGING_DIR


def commit_swap(directory: Path, moves: Iterable[str], deletes: Iterable[str],
                at_swap_point: SwapHook | None = None) -> None:
    """The commit point: from here on the swap completes, now or at the next load."""
    fsync_directory(staging_dir(directory))
    lines = [VERSION, *(f"move {name}" for name in moves),
             *(f"delete {name}" for name in deletes)]
    write_lines_atomically(directory / SWAP_MANIFEST, lines)
    if at_swap_point is not None:
        at_swap_point(directory, "committed")


def finish_swap(directory: Path) -> bool:
    """Carry out a committed swap, or drop an uncommitted staging dir. True when a committed
    swap was completed."""
    manifest = directory / SWAP_MANIFEST
    staging = staging_dir(directory)
    if not manifest.exists():
        if staging.exists():
            shutil.rmtree(staging)
        return False
    moves, deletes = _read_manifest(manifest)
    for name in moves:
        source = staging / name
        if source.exists():
            os.replace(source, directory / name)
    for name in deletes:
        (directory / name).unlink(missing_ok=True)
    fsync_directory(directory)
    manifest.unlink()
    fsync_directory(directory)
    shutil.rmtree(staging, ignore_errors=True)
    return True


def _read_manifest(path: Path) -> tuple[list[str], list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != VERSION:
        raise CorruptSwapManifestError(f"{path}: unknown version {lines[:1]}")
    moves: list[str] = []
    deletes: list[str] = []
    for line in lines[1:]:
        action, _, name = line.partition(" ")
        if not name or "/" in name or action not in ("move", "delete"):
            raise CorruptSwapManifestError(f"{path}: bad line {line!r}")
        (moves if action == "move" else deletes).append(name)
    return moves, deletes
