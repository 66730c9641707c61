"""What every Odradek process serves about itself, whatever its role: prometheus-client's
process collector (open fds, RSS, CPU seconds), a histogram of how late the event loop runs
its timers, and for the Kafka processes (brokers, controllers) Kafka's idle gauges, computed
from the CPU time of the loop's thread. The mirror service reuses it through `run_service`."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry, Gauge, Histogram, ProcessCollector

from odradek.runtime.windowed_rate import WindowedRate, idle_fraction

LOOP_LAG_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                      10.0)
KAFKA_IDLE_GAUGES = (
    ("kafka_network_socketserver_networkprocessoravgidle_percent",
     "Fraction of time (0 to 1) the network thread, Odradek's event loop, waited for IO "
     "rather than ran, over the last minute."),
    ("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
     "Fraction of time (0 to 1) the request handler, Odradek's event loop (it handles the "
     "requests it reads), was idle, over the last minute."),
)


class ProcessMetrics:
    """Registers the process's own figures on `registry`; `start` on the loop's thread."""

    def __init__(self, registry: CollectorRegistry, kafka_server: bool = True) -> None:
        ProcessCollector(registry=registry)
        self.loop_lag = Histogram(
            "odradek_event_loop_lag_seconds", "How late the event loop ran a timer that "
            "was due (the loop watchdog's heartbeat): time spent in callbacks that block.",
            buckets=LOOP_LAG_BUCKETS_S, registry=registry)
        self._clock: int | None = None
        self._busy: WindowedRate | None = None
        self._lock = threading.Lock()
        if kafka_server:
            for name, doc in KAFKA_IDLE_GAUGES:
                Gauge(name, doc, registry=registry).set_function(self.loop_idle)

    def start(self) -> None:
        """Watch the CPU time of the calling thread: the event loop's."""
        self._clock = time.pthread_getcpuclockid(threading.get_ident())
        self._busy = WindowedRate(time.monotonic(), time.clock_gettime(self._clock))

    def observe_lag(self, late_s: float) -> None:
        self.loop_lag.observe(late_s)

    def loop_idle(self) -> float:
        """1 minus the loop thread's CPU seconds per second over the last minute (1 before
        the loop starts). Blocking system calls on the loop count as idle."""
        if self._clock is None or self._busy is None:
            return 1.0
        with self._lock:  # scrapes may run at once, on the metrics server's threads
            try:
                busy = time.clock_gettime(self._clock)
            except OSError:  # the loop's thread has ended
                return 1.0
            return idle_fraction(self._busy.measure(time.monotonic(), busy))
