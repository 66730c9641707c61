"""Deleting a log's files as Kafka does: the log renames them to `*.deleted` at once, and they
are unlinked after the topic's file.delete.delay.ms, in a worker thread, so that a read that
already holds them finishes first. Files left `*.deleted` by a stop are removed when the log
is next loaded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.log.partition import PartitionLog


def delete_later(log_: PartitionLog, paths: list[Path]) -> None:
    """Unlink `paths`, files `log_` renamed to `*.deleted`, after its file.delete.delay.ms."""
    if not paths:
        return
    loop = asyncio.get_running_loop()
    delay_s = log_.config.file_delete_delay_ms / 1000
    loop.call_later(delay_s, loop.run_in_executor, None, unlink_all, paths)


def unlink_all(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
