"""Durable metadata records for a single-node cluster: one JSON record per line, fsynced.

Loading replays every record; a torn last line (a crash mid-write) is cut off. The Raft
controller quorum will replace this file with the replicated metadata log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from odradek.metadata.records import MetadataRecord, from_json, to_json

log = logging.getLogger("odradek.broker.metadata")

FILE_NAME = "records.jsonl"


class MetadataStore:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / FILE_NAME

    def load(self) -> list[MetadataRecord]:
        """Every durable record, in order; truncates a torn or garbage tail."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records: list[MetadataRecord] = []
        position = 0
        while position < len(data):
            end = data.find(b"\n", position)
            if end < 0:
                break
            try:
                records.append(from_json(data[position:end].decode()))
            except (ValueError, KeyError, TypeError):
                log.error("metadata record at byte %d of %s is corrupt", position, self.path)
                break
            position = end + 1
        if position < len(data):
            log.warning("truncating %d bytes of torn metadata at %s", len(data) - position,
                        self.path)
            with open(self.path, "r+b") as file:
                file.truncate(position)
                os.fsync(file.fileno())
        return records

    def append(self, records: Iterable[MetadataRecord]) -> None:
        """Write and fsync (blocking: call from a worker thread)."""
        payload = "".join(to_json(record) + "\n" for record in records).encode()
        with open(self.path, "ab") as file:
            file.write(payload)
            file.flush()
            os.fsync(file.fileno())
