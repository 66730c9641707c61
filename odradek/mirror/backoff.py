"""The retry delay of the mirror's jobs and writers."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Exponential: 0.5 s doubling to 10 s, back to the start after a success."""
    first_ms: int = 500
    max_ms: int = 10_000
    _next_ms: int = field(default=0, init=False)

    def next_ms(self) -> int:
        self._next_ms = min(self.max_ms, max(self.first_ms, self._next_ms * 2))
        return self._next_ms

    def reset(self) -> None:
        self._next_ms = 0
