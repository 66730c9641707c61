"""What an IO error while writing a log means (Kafka's LogDirFailureChannel).

A write that fails part way leaves a log's files and its state in memory out of step: the
batch may be on disk while its transaction index entry, its leader epoch or the producer
state is not. Served on, such a log shows a read_committed consumer an aborted transaction,
or answers a follower with epochs that make it truncate for ever. Kafka therefore stops
serving the log dir at once, and a broker left with no log dir halts. An Odradek broker has
one log dir, so it halts; its restart recovers the logs from their files, as after kill -9.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

logger = logging.getLogger("odradek.log")

StorageFailureHandler = Callable[[Path, OSError], None]
"""Called with a partition's directory and the error, before the write's caller hears of it."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


class KafkaStorageError(Exception):
    """A log write failed with an IO error (Kafka's KafkaStorageException)."""


class _WritesToDisk(Protocol):
    directory: Path
    on_storage_error: StorageFailureHandler | None


_L = TypeVar("_L", bound=_WritesToDisk)


def _failed(directory: Path, handler: StorageFailureHandler | None,
            error: OSError) -> KafkaStorageError:
    if handler is not None:
        handler(directory, error)
    return KafkaStorageError(f"{directory.name}: {error}")


@contextmanager
def storage_errors(directory: Path, handler: StorageFailureHandler | None) -> Iterator[None]:
    """An IO error inside goes to `handler` (with `directory`), then is raised as a
    `KafkaStorageError`."""
    try:
        yield
    except OSError as error:
        raise _failed(directory, handler, error) from error


def storage_write(method: Callable[Concatenate[_L, _P], _R]) -> Callable[Concatenate[_L, _P], _R]:
    """`storage_errors` around a log's method, with the log's directory and handler; a plain
    try, not the context manager, since appends run it for every batch."""

    @functools.wraps(method)
    def write(log: _L, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(log, *args, **kwargs)
        except OSError as error:
            raise _failed(log.directory, log.on_storage_error, error) from error

    return write


def halt_on_storage_error(log_dir: Path) -> StorageFailureHandler:
    """A broker's handler: log Kafka's messages and halt the process at once (Kafka's
    Exit.halt), so that nothing more is served from the logs as they are in memory."""

    def halt(directory: Path, error: OSError) -> None:
        logger.error("Error while writing to %s in dir %s: %s", directory.name, log_dir, error)
        logger.critical("Shutdown broker because all log dirs in %s have failed", log_dir)
        logging.shutdown()
        os._exit(1)

    return halt
