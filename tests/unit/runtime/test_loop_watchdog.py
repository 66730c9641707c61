"""The event-loop watchdog: a loop blocked past the stall threshold (asleep in a call, or
spinning in Python and so holding the GIL) is reported once, with the blocking function in
the stack, and its recovery is reported; a turning loop is not."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from odradek.runtime.loop_watchdog import LoopWatchdog


def stuck_in_a_callback(seconds: float, spin: bool) -> None:
    """Blocks the event loop for `seconds` on purpose: asleep, or spinning on the GIL."""
    if not spin:
        time.sleep(seconds)
        return
    spin_until = time.monotonic() + seconds
    while time.monotonic() < spin_until:
        pass


async def run(watchdog: LoopWatchdog, block_s: float, idle_s: float, spin: bool = False
              ) -> None:
    watchdog.start()
    await asyncio.sleep(idle_s)  # the loop turns freely around the stall, on purpose
    stuck_in_a_callback(block_s, spin)
    await asyncio.sleep(idle_s)
    watchdog.stop()


@pytest.mark.parametrize("spin", [False, True], ids=["asleep", "spinning"])
def test_a_blocked_loop_is_reported_once_with_where_it_is(
        caplog: pytest.LogCaptureFixture, spin: bool) -> None:
    with caplog.at_level(logging.WARNING, logger="odradek.runtime"):
        asyncio.run(run(LoopWatchdog(stall_s=0.3, check_s=0.05), block_s=1.2, idle_s=0.4,
                        spin=spin))
    stalls = [r.getMessage() for r in caplog.records if "has not run" in r.getMessage()]
    assert len([s for s in stalls if "stuck_in_a_callback" in s]) == 1
    assert any("runs again" in r.getMessage() for r in caplog.records)


def test_a_turning_loop_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="odradek.runtime"):
        asyncio.run(run(LoopWatchdog(stall_s=5.0, check_s=0.05), block_s=0.0, idle_s=0.3))
    # only the watchdog's own records: a client thread left by an earlier test may log too
    assert not [r for r in caplog.records if r.name == "odradek.runtime"]


def test_each_heartbeat_reports_how_late_it_ran_and_a_blocked_loop_is_late() -> None:
    lags: list[float] = []
    asyncio.run(run(LoopWatchdog(stall_s=5.0, check_s=0.05, on_lag=lags.append),
                    block_s=0.5, idle_s=0.3))
    assert len(lags) >= 4 and min(lags) >= 0
    assert max(lags) >= 0.4  # the heartbeat due during the blocking call ran that late
