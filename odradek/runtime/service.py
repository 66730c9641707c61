"""What every Odradek process shares: the event loop choice and its watchdog, signal
handling, periodic background work, and the HTTP endpoint with Prometheus' /metrics and the
/health readiness check."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from odradek.runtime.loop_watchdog import LoopWatchdog
from odradek.runtime.process_metrics import ProcessMetrics

log = logging.getLogger("odradek.runtime")

HEALTH_PATH = "/health"

Readiness = Callable[[], str | None]
"""None when the process is ready to serve, else why it is not (read from the HTTP thread:
it only reads state the event loop keeps)."""


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


def start_metrics(registry: CollectorRegistry, host: str, port: int,
                  readiness: Readiness | None = None) -> int | None:
    """Serve /metrics on `port` (-1: not at all; 0: a free port) and, with `readiness`,
    /health: 200 once ready, else 503 with the reason (container health checks and
    readiness probes). Returns the port served, None when none is."""
    if port < 0:
        return None
    app = _with_health(make_wsgi_app(registry), readiness) if readiness else make_wsgi_app(registry)

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    try:
        server = make_server(host, port, app, Server, handler_class=_QuietHandler)
    except OSError as error:
        log.error("metrics endpoint not started on port %d: %s", port, error)
        return None
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    log.info("metrics on http://%s:%d/metrics", host, server.server_port)
    return server.server_port


Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _with_health(metrics: Wsgi, readiness: Readiness) -> Wsgi:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != HEALTH_PATH:
            return metrics(environ, start_response)
        reason = readiness()
        status = "200 OK" if reason is None else "503 Service Unavailable"
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [f"{reason or 'ready'}\n".encode()]

    return app


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape or probe."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


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
