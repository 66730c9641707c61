"""A rate over a recent window, measured from a running total: what Kafka's `Rate` stat
reports (records per second over the last samples), for totals that the hot paths keep as
plain counters. Pure: the caller passes the time in."""

from __future__ import annotations

from collections import deque

WINDOW_S = 60.0
"""Kafka's default metrics window: metrics.num.samples (2) x metrics.sample.window.ms (30 s)."""


class WindowedRate:
    """Each `measure` keeps a (time, total) sample and answers the total's increase per
    second since the oldest sample still inside the window (or the last one before it)."""

    def __init__(self, start_s: float, start_total: float = 0.0,
                 window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, float]] = deque([(start_s, start_total)])

    def measure(self, now_s: float, total: float) -> float:
        samples = self._samples
        while len(samples) > 1 and samples[1][0] <= now_s - self.window_s:
            samples.popleft()
        since, base = samples[0]
        if now_s > samples[-1][0]:
            samples.append((now_s, total))
        return (total - base) / (now_s - since) if now_s > since else 0.0


def idle_fraction(busy_per_second: float) -> float:
    """The share of time a thread was not busy, from its busy seconds per wall second,
    as Kafka's *AvgIdlePercent gauges report it: a fraction from 0 to 1."""
    return min(max(1.0 - busy_per_second, 0.0), 1.0)
