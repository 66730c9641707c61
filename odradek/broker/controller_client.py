"""The broker's client of the controller quorum: finds the active controller, follows
NOT_CONTROLLER redirections, and retries with exponential backoff within a deadline."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import grpc
from kio.schema.errors import ErrorCode

from odradek.net.grpc_tls import ControllerChannels
from odradek.rpc import controller_pb2_grpc

log = logging.getLogger("odradek.broker.controller")

T = TypeVar("T")
MAX_BACKOFF_S = 1.0
KEEPALIVE = [("grpc.keepalive_time_ms", 2000), ("grpc.keepalive_timeout_ms", 2000),
             ("grpc.keepalive_permit_without_calls", 1)]
"""Pings that notice a silent controller under a long-lived metadata stream."""
_TRANSIENT = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
              grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN}


class ControllerUnavailable(Exception):
    """No active controller answered within the deadline."""


class ControllerClient:
    def __init__(self, voters: Mapping[int, tuple[str, int]], timeout_ms: int,
                 backoff_ms: int, channels: ControllerChannels | None = None) -> None:
        self.voters = dict(voters)
        self.channels = channels or ControllerChannels()
        self._generation = self.channels.generation
        self.timeout_s = timeout_ms / 1000
        self.backoff_s = max(backoff_ms, 1) / 1000
        self._order = sorted(self.voters)
        self._current = self._order[0]
        self._channels: dict[int, grpc.aio.Channel] = {}
        self.switched = asyncio.Event()
        """Set whenever calls move to another controller (the metadata stream follows)."""

    @property
    def current(self) -> int:
        return self._current

    def _switch(self, node_id: int) -> None:
        if node_id != self._current:
            self._current = node_id
            self.switched.set()

    async def stub(self) -> controller_pb2_grpc.ControllerStub:
        """The current controller's stub; raises OSError when its channel cannot be opened
        (see ControllerChannels.open). Channels opened before the client's stores were
        reloaded are closed first (calls on them end, and are retried)."""
        generation = self.channels.refresh()
        if generation != self._generation:
            self._generation = generation
            await self.close()
        channel = self._channels.get(self._current)
        if channel is None:
            channel = await self.channels.open(*self.voters[self._current], KEEPALIVE)
            self._channels[self._current] = channel
        return controller_pb2_grpc.ControllerStub(channel)

    def _next(self) -> None:
        index = self._order.index(self._current)
        self._switch(self._order[(index + 1) % len(self._order)])

    def redirect(self, hint: Any) -> None:
        """Follow a NOT_CONTROLLER hint, or try the next voter when there is none."""
        if hint is not None and hint.leader_id in self.voters and hint.leader_id != self._current:
            self._switch(hint.leader_id)
        else:
            self._next()

    async def call(self, method: Callable[[controller_pb2_grpc.ControllerStub], Any],
                   request: Any, deadline_s: float | None = None) -> Any:
        """Call `method(stub)(request)` on the active controller; retries transport
        failures and NOT_CONTROLLER until `deadline_s` (default: the request timeout)
        runs out. Other errors are the caller's to read in the response."""
        budget = deadline_s if deadline_s is not None else self.timeout_s
        deadline = time.monotonic() + budget
        backoff = self.backoff_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ControllerUnavailable(f"no active controller answered within {budget:.1f}s")
            try:
                response = await method(await self.stub())(
                    request, timeout=min(self.timeout_s, remaining)
                )
            except grpc.aio.AioRpcError as error:
                if error.code() not in _TRANSIENT:
                    raise
                log.debug("controller %d: %s", self._current, error.code().name)
                self._next()
            except OSError as error:
                log.debug("controller %d: %r", self._current, error)
                self._next()
            else:
                failure = getattr(response, "error", None)
                if failure is None or failure.code != ErrorCode.not_controller:
                    return response
                self.redirect(response.controller if response.HasField("controller") else None)
            await asyncio.sleep(min(backoff, max(deadline - time.monotonic(), 0)))
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def close(self) -> None:
        await asyncio.gather(*(channel.close() for channel in self._channels.values()))
        self._channels.clear()
