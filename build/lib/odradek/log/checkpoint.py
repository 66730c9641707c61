"""Kafka's offset checkpoint files (`OffsetCheckpointFile`), e.g. recovery-point-offset-checkpoint.

    0                 <- version
    2                 <- number of entries
    orders 0 1500     <- topic partition offset
    orders 1 1432

Written atomically: a `.tmp` sibling, fsynced, renamed over the file, then the directory fsynced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"

TopicPartition = tuple[str, int]


class CheckpointError(ValueError):
    """A checkpoint file that does not follow the format (Kafka refuses to load the dir)."""


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Replace `path` atomically with `offsets` (lines sorted by topic, then partition)."""
    lines = [str(VERSION), str(len(offsets))]
    lines += [
        f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())
    ]
    write_lines_atomically(path, lines)


def write_lines_atomically(path: Path, lines: list[str]) -> None:
    """Replace `path` with `lines`: a fsynced `.tmp` sibling renamed over it, then the
    directory fsynced."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The entries of `path`; empty when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: expected a version line and a count line")
    if lines[0].strip() != str(VERSION):
        raise CheckpointError(f"{path}: unrecognised version {lines[0].strip()!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: malformed entry count {lines[1]!r}") from None
    entries = [line for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise CheckpointError(f"{path}: expected {count} entries, found {len(entries)}")
    offsets: dict[TopicPartition, int] = {}
    for line in entries:
        fields = line.split()
        try:
            topic, partition, offset = fields[0], int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            raise CheckpointError(f"{path}: malformed line {line!r}") from None
        if len(fields) != 3:
            raise CheckpointError(f"{path}: malformed line {line!r}")
        offsets[(topic, partition)] = offset
    return offsets
