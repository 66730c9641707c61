"""Notices an event loop that stops turning (a callback that blocks, or a coroutine that
loops without awaiting) and logs where the loop's thread is, so that a process which stops
answering says why in its log.

A task on the loop stamps the time every `check_s`; a daemon thread compares the stamp with
the clock and, once it is older than `stall_s`, logs the loop thread's stack once per
stall, and a line when the loop turns again. Each heartbeat also reports how late its
timer fired (`on_lag`), which the event-loop lag histogram counts.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable

log = logging.getLogger("odradek.runtime")

STALL_S = 5.0
"""Longer than any step of the loop should take: a heartbeat this late is a stall."""


class LoopWatchdog:
    def __init__(self, stall_s: float = STALL_S, check_s: float = 0.5,
                 on_lag: Callable[[float], None] | None = None) -> None:
        self.stall_s = stall_s
        self.check_s = check_s
        self.on_lag = on_lag
        self._stamp = time.monotonic()
        self._loop_thread = threading.get_ident()
        self._stopped = threading.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start watching the running loop (call from a coroutine on it)."""
        self._loop_thread = threading.get_ident()
        self._stamp = time.monotonic()
        self._task = asyncio.create_task(self._beat())
        threading.Thread(target=self._watch, name="loop-watchdog", daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        if self._task is not None:
            self._task.cancel()

    async def _beat(self) -> None:
        while True:
            self._stamp = time.monotonic()
            await asyncio.sleep(self.check_s)
            if self.on_lag is not None:
                self.on_lag(max(time.monotonic() - self._stamp - self.check_s, 0.0))

    def _watch(self) -> None:
        stalled_since: float | None = None
        while not self._stopped.wait(self.check_s):
            stamp = self._stamp
            late = time.monotonic() - stamp
            if late > self.stall_s and stalled_since != stamp:
                stalled_since = stamp
                log.warning("the event loop has not run for %.1f s; its thread is at:\n%s",
                            late, self._loop_stack())
            elif stalled_since is not None and stamp != stalled_since:
                log.warning("the event loop runs again after a stall of %.1f s",
                            stamp - stalled_since)
                stalled_since = None

    def _loop_stack(self) -> str:
        frame = sys._current_frames().get(self._loop_thread)
        return "".join(traceback.format_stack(frame)) if frame is not None else "(gone)"
