"""What every Odradek process shares: the event loop choice and its watchdog, signal
handling, periodic background work and the Prometheus endpoint."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

from odradek.loop_watchdog import LoopWatchdog
from odradek.process_metrics import ProcessMetrics

log = logging.getLogger("odradek.runtime")


class StartupError(Exception):
    """State on disk that a process cannot start from; `odradek` reports it in one line."""


def every(interval_ms: int, work: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
    """Run `work` every `interval_ms`, logging (not propagating) its failures."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await work()
            except Exception:
                log.exception("background task failed")

    return asyncio.create_task(loop())


def start_metrics(registry: CollectorRegistry, host: str, port: int) -> None:
    """Serve /metrics on `port` (-1: not at all; 0: a free port)."""
    if port < 0:
        return
    try:
        server, _ = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        log.error("metrics endpoint not started on port %d: %s", port, error)
        return
    log.info("metrics on http://%s:%d/metrics", host, server.server_port)


def install_event_loop(prefer_uvloop: bool = True) -> str:
    """uvloop when wanted and available, else the standard loop; returns which."""
    if not prefer_uvloop:
        return "asyncio"
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def run_service(
    serve: Callable[[asyncio.Event], Coroutine[Any, Any, None]], prefer_uvloop: bool = True,
    registry: CollectorRegistry | None = None, kafka_server: bool = True,
) -> None:
    """Run `serve(stop)` until SIGTERM or SIGINT sets `stop`, with a watchdog that logs
    where the loop is stuck should it stop turning. The process's own metrics go on
    `registry` (Kafka's idle gauges too for a `kafka_server`: a broker or controller)."""
    loop_name = install_event_loop(prefer_uvloop)
    health = ProcessMetrics(registry, kafka_server) if registry is not None else None

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        log.info("event loop: %s", loop_name)
        watchdog = LoopWatchdog(on_lag=health.observe_lag if health is not None else None)
        if health is not None:
            health.start()
        watchdog.start()
        try:
            await serve(stop)
        finally:
            watchdog.stop()

    asyncio.run(main())
