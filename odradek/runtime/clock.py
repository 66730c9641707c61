"""The wall clock, read by shells only: cores are handed the time."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch, as Kafka stamps records and reports."""
    return time.time_ns() // 1_000_000
