"""Runs a broker: loads state, serves the Kafka listener and /metrics, runs the log's
background work (retention, time-based flush, recovery-point checkpoints) off the loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import start_http_server

from odradek.broker.apis import API_TABLE
from odradek.broker.broker import Broker, now_ms
from odradek.broker.dispatch import Dispatcher
from odradek.broker.group_runtime import GroupCoordinatorRuntime
from odradek.broker.server import KafkaConnection
from odradek.config import BrokerConfig, InvalidConfigError
from odradek.metadata.image import OFFSETS_TOPIC

log = logging.getLogger("odradek.broker.app")


def parse_listener(uri: str) -> tuple[str, int]:
    parts = urlsplit(uri if "://" in uri else f"PLAINTEXT://{uri}")
    if parts.port is None:
        raise InvalidConfigError(f"listener {uri!r} has no port")
    return parts.hostname or "0.0.0.0", parts.port


def _every(interval_ms: int, work: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
    async def loop() -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await work()
            except Exception:
                log.exception("background task failed")

    return asyncio.create_task(loop())


class BrokerApp:
    def __init__(self, config: BrokerConfig) -> None:
        listeners = config["listeners"]
        assert isinstance(listeners, list) and listeners
        self.bind_host, self.bind_port = parse_listener(listeners[0])
        advertised = config["advertised.listeners"] or listeners
        assert isinstance(advertised, list)
        host, port = parse_listener(advertised[0])
        self.config = config
        self.broker = Broker(config, host if host != "0.0.0.0" else "127.0.0.1", port)
        self.broker.groups = GroupCoordinatorRuntime(self.broker)
        self._last_flush_ms: dict[tuple[str, int], int] = {}

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        broker = self.broker
        await loop.run_in_executor(None, broker.load)
        if OFFSETS_TOPIC in broker.metadata.topics:
            await broker.groups.ensure_loaded()
        dispatcher = Dispatcher(broker, API_TABLE)
        max_request = self.config.integer("socket.request.max.bytes")
        connections: set[KafkaConnection] = set()
        server = await loop.create_server(
            lambda: KafkaConnection(dispatcher, max_request, connections),
            self.bind_host, self.bind_port, reuse_address=True, backlog=1024,
        )
        self._start_metrics()
        tasks = [
            _every(self.config.integer("log.retention.check.interval.ms"), self.enforce_retention),
            _every(self.config.integer("log.flush.scheduler.interval.ms"), self.flush_by_time),
            _every(self.config.integer("log.flush.offset.checkpoint.interval.ms") or 60000,
                   self.checkpoint),
            _every(self.config.integer("offsets.retention.check.interval.ms"),
                   broker.groups.expire_offsets),
        ]
        log.info("odradek broker %d serving Kafka on %s:%d (cluster %s, data in %s)",
                 broker.node_id, self.bind_host, self.bind_port, broker.cluster_id,
                 broker.log_dir)
        try:
            await stop.wait()
        finally:
            log.info("shutting down")
            server.close()
            broker.groups.close()
            in_flight = [request for c in list(connections) if (request := c.close()) is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, *in_flight, return_exceptions=True)
            await loop.run_in_executor(None, broker.logs.shutdown)
            log.info("stopped cleanly")

    def _start_metrics(self) -> None:
        port = self.config.integer("metrics.port")
        if port < 0:
            return
        try:
            server, _ = start_http_server(port, addr=self.bind_host, registry=self.broker.registry)
        except OSError as error:
            log.error("metrics endpoint not started on port %d: %s", port, error)
            return
        log.info("metrics on http://%s:%d/metrics", self.bind_host, server.server_port)

    async def enforce_retention(self) -> None:
        loop = asyncio.get_running_loop()
        now = now_ms()
        for (topic, partition), partition_log in list(self.broker.logs.logs()):
            expired = partition_log.retention_candidates(now)
            if not expired:
                continue
            paths = partition_log.remove_segments(expired)
            log.info("retention removed %d segment(s) of %s-%d; log start offset now %d",
                     len(expired), topic, partition, partition_log.log_start_offset)
            delay = partition_log.config.file_delete_delay_ms / 1000
            loop.call_later(delay, loop.run_in_executor, None, _unlink_all, paths)

    async def flush_by_time(self) -> None:
        loop = asyncio.get_running_loop()
        now = now_ms()
        for key, partition_log in list(self.broker.logs.logs()):
            last = self._last_flush_ms.setdefault(key, now)
            if now - last >= partition_log.config.flush_ms:
                self._last_flush_ms[key] = now
                await loop.run_in_executor(None, partition_log.flush)

    async def checkpoint(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.broker.logs.checkpoint)


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


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


def run_broker(config: BrokerConfig, prefer_uvloop: bool = True) -> None:
    loop_name = install_event_loop(prefer_uvloop)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        log.info("event loop: %s", loop_name)
        await BrokerApp(config).run(stop)

    asyncio.run(main())
