"""Kafka's `partition.metadata` file: the topic id a partition directory belongs to, so that a
directory left by a deleted topic is never taken for a re-created topic of the same name."""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path

FILE_NAME = "partition.metadata"


def write_topic_id(directory: Path, topic_id: str) -> None:
    """Kafka's format (`version: 0`, `topic_id: <base64>`), written durably."""
    encoded = base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).decode().rstrip("=")
    tmp = directory / (FILE_NAME + ".tmp")
    with open(tmp, "w") as file:
        file.write(f"version: 0\ntopic_id: {encoded}\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, directory / FILE_NAME)


def read_topic_id(directory: Path) -> str | None:
    """The recorded topic id as a canonical UUID string; None when absent or unreadable."""
    try:
        text = (directory / FILE_NAME).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            try:
                raw = base64.urlsafe_b64decode(value.strip() + "==")
                return str(uuid.UUID(bytes=raw))
            except ValueError:
                return None
    return None
