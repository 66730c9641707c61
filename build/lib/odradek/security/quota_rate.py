"""Kafka's quota measurements without IO: the sampled statistics that client quotas compare
with their bounds (`quota.window.num` samples of `quota.window.size.seconds`), the token
bucket of controller mutation quotas, and the throttle time that brings a rate back within
its bound. The caller passes the time in (`now_ms`).

After Kafka's SampledStat, Rate, Avg and TokenBucket (org.apache.kafka.common.metrics) and
QuotaUtils.throttleTime."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    count: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.count = 0


class SampledStat:
    """`samples` windows of `window_ms`, plus the one overlapping the window's start; a
    sample is reset once no value has been recorded in it for samples x window_ms."""

    __slots__ = ("samples", "window_ms", "_samples", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.count += 1
        sample.last_event_ms = now_ms

    def total(self, now_ms: int) -> float:
        """The sum of the values recorded in the live samples."""
        self._purge(now_ms)
        return sum(sample.value for sample in self._samples)

    def average(self, now_ms: int) -> float:
        """The mean of the values recorded in the live samples (0 when there are none)."""
        self._purge(now_ms)
        count = sum(sample.count for sample in self._samples)
        return sum(sample.value for sample in self._samples) / count if count else 0.0

    def rate(self, now_ms: int) -> float:
        """Kafka's Rate: the total per second of the elapsed window."""
        return self.total(now_ms) * 1000 / self.elapsed_ms(now_ms)

    def elapsed_ms(self, now_ms: int) -> int:
        """The window a rate divides by: since the oldest live sample started, and at least
        samples - 1 whole windows (so that a first burst does not read as a huge rate)."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        missing = self.samples - 1 - elapsed // self.window_ms
        if missing > 0:
            elapsed += missing * self.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now_ms, now_ms))
        else:
            self._samples[self._current].reset(now_ms)
        return self._samples[self._current]

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)


def java_round(value: float) -> int:
    """Java's Math.round: halves round up."""
    return math.floor(value + 0.5)


def throttle_time_ms(rate: float, bound: float, elapsed_ms: int) -> int:
    """The delay that brings an observed `rate` over `elapsed_ms` down to `bound`, assuming
    nothing more is recorded: O * W / (W + X) = T, so X = (O - T) / T * W."""
    return java_round((rate - bound) / bound * elapsed_ms)


class TokenBucket:
    """Credits refilled at `rate` per second up to a burst of samples x window x rate; the
    quota is exhausted while the credits are below zero."""

    __slots__ = ("samples", "window_ms", "tokens", "_last_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self.tokens = 0.0
        self._last_ms = 0

    def measure(self, rate: float, now_ms: int) -> float:
        self._refill(rate, now_ms)
        return self.tokens

    def record(self, value: float, rate: float, now_ms: int) -> None:
        self._refill(rate, now_ms)
        self.tokens = min(self._burst(rate), self.tokens - value)

    def throttle_time_ms(self, rate: float) -> int:
        """How long until the credits are back at zero (0 while they are not below it)."""
        return java_round(-self.tokens / rate * 1000) if self.tokens < 0 else 0

    def _burst(self, rate: float) -> float:
        return self.samples * self.window_ms / 1000 * rate

    def _refill(self, rate: float, now_ms: int) -> None:
        self.tokens = min(self._burst(rate), self.tokens + rate * (now_ms - self._last_ms) / 1000)
        self._last_ms = now_ms
