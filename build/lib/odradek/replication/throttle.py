"""Replication throttles (KIP-73) without IO: which partitions a broker throttles, and the
windowed byte rate that Kafka's ReplicationQuotaManager compares with the throttled rate.

`leader.replication.throttled.replicas` and `follower.replication.throttled.replicas` are
topic configs listing `partition:broker` entries (or `*` for every replica); a broker
throttles the partitions whose entries name it. The rates are the broker configs
`leader.replication.throttled.rate` and `follower.replication.throttled.rate` (bytes/s).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

WINDOW_MS = 1000
WINDOWS = 11
"""Kafka's replication quota windows: replication.quota.window.num x .size.seconds."""


def throttled(entries: Sequence[str], partition: int, broker_id: int) -> bool:
    """Whether a throttled-replicas list names this broker's replica of `partition`."""
    return any(entry == "*" or entry == f"{partition}:{broker_id}" for entry in entries)


def valid_entry(entry: str) -> bool:
    partition, colon, broker = entry.partition(":")
    return entry == "*" or (bool(colon) and partition.isdigit() and broker.isdigit())


class ByteRate:
    """Bytes per second over the last WINDOWS windows of WINDOW_MS (the current one partly)."""

    def __init__(self) -> None:
        self._windows: deque[tuple[int, int]] = deque()

    def record(self, size: int, now_ms: int) -> None:
        start = now_ms - now_ms % WINDOW_MS
        if self._windows and self._windows[-1][0] == start:
            self._windows[-1] = (start, self._windows[-1][1] + size)
        else:
            self._windows.append((start, size))
        self._expire(now_ms)

    def rate(self, now_ms: int) -> float:
        self._expire(now_ms)
        if not self._windows:
            return 0.0
        elapsed_ms = max(now_ms - self._windows[0][0], WINDOW_MS)
        return sum(size for _, size in self._windows) * 1000 / elapsed_ms

    def exceeded(self, limit: int, now_ms: int) -> bool:
        return self.rate(now_ms) > limit

    def _expire(self, now_ms: int) -> None:
        oldest = now_ms - now_ms % WINDOW_MS - (WINDOWS - 1) * WINDOW_MS
        while self._windows and self._windows[0][0] < oldest:
            self._windows.popleft()
