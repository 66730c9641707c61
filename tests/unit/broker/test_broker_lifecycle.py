"""The broker's heartbeats go on after a call fails in a way the controller client does not
retry (a non-transient gRPC status): a heartbeat task that died would let the controller fence
this broker a session timeout later, with nothing in the log saying why. They go out every
10 ms only until the broker is first unfenced, as Kafka's do while STARTING."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from odradek.broker.lifecycle import (
    CATCH_UP_HEARTBEAT_S,
    BrokerLifecycle,
    MetadataProgress,
    Registration,
)
from odradek.rpc import controller_pb2 as pb

HEARTBEATS = 3


class FailingOnceClient:
    """A controller client whose first heartbeat fails with INTERNAL; later ones answer."""

    def __init__(self) -> None:
        self.heartbeats = 0
        self.answered = asyncio.Event()

    async def call(self, method: Any, request: Any, deadline_s: float | None = None) -> Any:
        self.heartbeats += 1
        if self.heartbeats == 1:
            raise grpc.aio.AioRpcError(grpc.StatusCode.INTERNAL, grpc.aio.Metadata(),
                                       grpc.aio.Metadata(), "a bug in the controller")
        if self.heartbeats >= HEARTBEATS:
            self.answered.set()
        return pb.BrokerHeartbeatResponse(is_fenced=False)


async def beat_after_a_failed_heartbeat() -> tuple[int, bool]:
    client = FailingOnceClient()

    async def apply(*_args: Any) -> None:
        return None

    lifecycle = BrokerLifecycle(client, Registration(1, broker_epoch=5),  # type: ignore[arg-type]
                                MetadataProgress(), "cluster", [], None, 10, apply, 9000)
    beating = asyncio.create_task(lifecycle._beat())
    answered = asyncio.create_task(client.answered.wait())
    await asyncio.wait({beating, answered}, return_when=asyncio.FIRST_COMPLETED)
    alive = not beating.done()
    for task in (beating, answered):
        task.cancel()
    await asyncio.gather(beating, answered, return_exceptions=True)
    return client.heartbeats, alive


def test_heartbeats_go_on_after_an_unexpected_failure() -> None:
    heartbeats, alive = asyncio.run(beat_after_a_failed_heartbeat())
    assert alive
    assert heartbeats >= HEARTBEATS


class AnsweringClient:
    """A controller client answering heartbeats with the given fenced states in turn."""

    def __init__(self, *fenced: bool) -> None:
        self.fenced = list(fenced)

    async def call(self, method: Any, request: Any, deadline_s: float | None = None) -> Any:
        return pb.BrokerHeartbeatResponse(is_fenced=self.fenced.pop(0))


async def intervals_while(*fenced: bool) -> list[float]:
    async def apply(*_args: Any) -> None:
        return None

    lifecycle = BrokerLifecycle(AnsweringClient(*fenced),  # type: ignore[arg-type]
                                Registration(1, broker_epoch=5), MetadataProgress(), "cluster",
                                [], None, 2000, apply, 9000)
    intervals = [lifecycle.heartbeat_interval_s()]
    for _ in fenced:
        await lifecycle._heartbeat()
        intervals.append(lifecycle.heartbeat_interval_s())
    return intervals


def test_heartbeats_are_fast_only_until_first_unfenced() -> None:
    fast = CATCH_UP_HEARTBEAT_S
    assert asyncio.run(intervals_while(True, True, False, True, False)) == [
        fast, fast, fast, 2.0, 2.0, 2.0]


class ShuttingDownClient:
    """A controller client whose heartbeat answers are, in turn: a failure of the call, an
    answer that keeps the broker in controlled shutdown, and one that lets it go."""

    def __init__(self) -> None:
        self.heartbeats = 0

    async def call(self, method: Any, request: Any, deadline_s: float | None = None) -> Any:
        self.heartbeats += 1
        if self.heartbeats == 1:
            raise RuntimeError("a gRPC error the client does not retry")
        return pb.BrokerHeartbeatResponse(should_shutdown=self.heartbeats == 3)

    async def close(self) -> None:
        return None


async def shut_down() -> int:
    async def apply(*_args: Any) -> None:
        return None

    client = ShuttingDownClient()
    lifecycle = BrokerLifecycle(client, Registration(1, broker_epoch=5),  # type: ignore[arg-type]
                                MetadataProgress(), "cluster", [], None, 2000, apply, 9000)
    await lifecycle.shutdown()
    return client.heartbeats


def test_a_controlled_shutdown_heartbeats_through_a_failure_until_it_is_let_go() -> None:
    assert asyncio.run(shut_down()) == 3
