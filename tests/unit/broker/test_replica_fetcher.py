"""The replica fetcher's loop against a leader that accepts connections, for a partition the
broker has no log for (not created yet, or detached while its topic is deleted): the fetcher
must wait and retry, never spin. A spin starves the event loop of the very executor callback
that creates or retires the log, and the broker stops answering anyone."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from odradek.broker.replica_fetcher import EPOCH_RETRY_S, ReplicaFetcher
from odradek.config.kafka_configs import BrokerConfig
from odradek.net.kafka_client import PLAINTEXT_CLIENT, BrokerConnection
from odradek.replication.throttle import ByteRate

SPIN_LIMIT = 1000
"""Far more log lookups than a waiting fetcher makes in the test's window."""


class Starved(AssertionError):
    pass


def never_consulted(key: tuple[str, int], now_ms: int) -> bool | None:
    raise AssertionError("a partition without a log is never fetched, so never throttled")


class CountingLogs:
    """A broker's log manager holding no logs, counting lookups; it fails the fetcher once the
    lookups show it never gave the event loop back."""

    def __init__(self) -> None:
        self.lookups = 0

    def get(self, topic: str, partition: int) -> None:
        self.lookups += 1
        if self.lookups > SPIN_LIMIT:
            raise Starved(f"{self.lookups} lookups of {topic}-{partition} without yielding")


async def follow_a_partition_without_a_log(window_s: float) -> tuple[int, BaseException | None]:
    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    logs = CountingLogs()
    broker: Any = SimpleNamespace(config=BrokerConfig({}), node_id=2, logs=logs,
                                  inter_broker_security=PLAINTEXT_CLIENT)
    fetcher = ReplicaFetcher(broker, leader_id=1, host="127.0.0.1", port=port,
                             throttle=never_consulted, quota=ByteRate())
    fetcher.add(("orders", 0), leader_epoch=0)
    await asyncio.sleep(window_s)  # the window in which lookups are counted, on purpose
    error = fetcher._task.exception() if fetcher._task.done() else None
    fetcher.stop()
    await fetcher.stopped()
    server.close()
    await server.wait_closed()
    return logs.lookups, error


def test_a_followed_partition_without_a_log_is_retried_not_spun_on() -> None:
    lookups, error = asyncio.run(follow_a_partition_without_a_log(window_s=20 * EPOCH_RETRY_S))
    assert error is None
    assert 1 <= lookups <= SPIN_LIMIT


class RecordingConnection:
    """What the fetcher sends once its connection opens; nothing is ever answered."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def send(self, request: Any, timeout: float) -> Any:
        self.requests.append(request)
        await asyncio.sleep(timeout)
        raise AssertionError("unreachable: the test stops the fetcher first")

    def close(self) -> None:
        pass


def follower_log(end: int) -> Any:
    """A followed partition's log in epoch 1, `end` records long, all committed."""
    return SimpleNamespace(log_end_offset=end, log_start_offset=0, high_watermark=end,
                           leader_epochs=SimpleNamespace(latest_epoch=1))


def fetcher_of(log_: Any, config: dict[str, str]) -> ReplicaFetcher:
    """A fetcher of broker 2 following broker 1 for partitions whose log is `log_`."""
    broker: Any = SimpleNamespace(config=BrokerConfig(config), node_id=2,
                                  logs=SimpleNamespace(get=lambda topic, partition: log_),
                                  inter_broker_security=PLAINTEXT_CLIENT)
    return ReplicaFetcher(broker, leader_id=1, host="127.0.0.1", port=9,
                          throttle=lambda key, now_ms: None, quota=ByteRate())


@contextmanager
def connecting_with(connect: Callable[..., Awaitable[Any]]) -> Iterator[None]:
    """BrokerConnection.connect replaced by `connect` for the block."""
    original = BrokerConnection.connect
    BrokerConnection.connect = connect  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        BrokerConnection.connect = original  # type: ignore[method-assign]


async def followed_elsewhere_while_connecting() -> list[Any]:
    """The fault campaign's lost writes: the fetcher picks its partitions, then waits for a
    connection to a leader frozen with SIGSTOP; meanwhile the partition is followed at a new
    leader and its log grows with that leader's records. Returns what the fetcher sent to the
    old leader once it came back."""
    leader_back = asyncio.Event()
    connection = RecordingConnection()

    async def connect(*_args: Any, **_kwargs: Any) -> RecordingConnection:
        await leader_back.wait()
        return connection

    log_ = follower_log(545)
    with connecting_with(connect):
        fetcher = fetcher_of(log_, {})
        fetcher.add(("orders", 0), leader_epoch=1)
        await asyncio.sleep(0.05)  # the fetcher is now waiting on the connection
        fetcher.remove(("orders", 0))  # followed at the new leader instead...
        log_.log_end_offset, log_.leader_epochs.latest_epoch = 552, 2  # ...which it copies
        leader_back.set()
        await asyncio.sleep(2 * EPOCH_RETRY_S)
        fetcher.stop()
        await fetcher.stopped()
    return connection.requests


def test_a_partition_followed_elsewhere_meanwhile_is_not_fetched_from_the_old_leader() -> None:
    assert asyncio.run(followed_elsewhere_while_connecting()) == []


class FailingOnceConnection(RecordingConnection):
    """Its first request fails with an error no connection should raise (a bug)."""

    def __init__(self, failures: list[int]) -> None:
        super().__init__()
        self._failures = failures

    async def send(self, request: Any, timeout: float) -> Any:
        if self._failures:
            self._failures.pop()
            raise RuntimeError("a bug in a fetch")
        return await super().send(request, timeout)


async def fetch_after_an_unexpected_error() -> tuple[int, list[Any], bool]:
    """Connections opened, requests sent after the failure, and whether the fetcher's task
    is still running."""
    failures = [1]
    connections: list[FailingOnceConnection] = []

    async def connect(*_args: Any, **_kwargs: Any) -> FailingOnceConnection:
        connections.append(FailingOnceConnection(failures))
        return connections[-1]

    with connecting_with(connect):
        fetcher = fetcher_of(follower_log(5), {"replica.fetch.backoff.ms": "10"})
        fetcher.add(("orders", 0), leader_epoch=1)
        while not any(c.requests for c in connections) and not fetcher._task.done():
            await asyncio.sleep(0.01)
        running = not fetcher._task.done()
        fetcher.stop()
        await fetcher.stopped()
    return len(connections), [r for c in connections for r in c.requests], running


def test_an_unexpected_error_in_a_fetch_is_retried_not_fatal() -> None:
    """Like the transaction marker sender's: an exception the loop did not expect would end
    the fetcher's task silently, and this broker would stop following that leader."""
    connections, requests, running = asyncio.run(fetch_after_an_unexpected_error())
    assert running
    assert connections == 2
    assert len(requests) == 1
