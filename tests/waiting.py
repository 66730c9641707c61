"""Waiting in tests for something to become true: one deadline loop for unit, sim and
integration tests. A test waits on what it can observe, never on a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable

TIMEOUT = 30.0
INTERVAL = 0.1


def wait_until(
    condition: Callable[[], object],
    timeout: float = TIMEOUT,
    what: str | Callable[[], str] = "the condition",
    *,
    between: Callable[[], object] | None = None,
    interval: float = INTERVAL,
    ignoring: type[Exception] | tuple[type[Exception], ...] = (),
) -> float:
    """Seconds until `condition()` was true; AssertionError naming `what` (a text, or a
    function that describes the state at the deadline) once `timeout` seconds passed.

    Between checks it calls `between`, e.g. a consumer's poll, which serves the client's
    callbacks and paces the loop; without it, it sleeps `interval`. Exceptions of the
    `ignoring` types that `condition` raises (a cluster in failover refusing requests)
    count as not yet, and the last is reported at the deadline; any other propagates.
    """
    started = time.monotonic()
    last: Exception | None = None
    while True:
        try:
            if condition():
                return time.monotonic() - started
        except ignoring as error:
            last = error
        if between is None:
            time.sleep(interval)
        else:
            between()
        if time.monotonic() - started >= timeout:  # no check starts after the deadline
            described = what() if callable(what) else what
            suffix = "" if last is None else f" (last error: {last!r})"
            raise AssertionError(f"not within {timeout}s: {described}{suffix}")
