"""The Kafka listener: one asyncio Protocol per connection over the sans-IO frame decoder.

Like Kafka, a connection executes one request at a time: frames are queued as they arrive
and the next is dispatched only when the previous request's handler has completed, so
responses leave in request order. Reading pauses while the queue is full or the peer is
not reading its responses. A connection whose bytes cannot be framed or decoded is closed
with a log line; others are unaffected. Each connection has a Session (who it is), which its
listener opens once the connection (and its TLS handshake) is made.
"""

from __future__ import annotations

import asyncio
import logging
import time
import typing
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from odradek.broker.session import Session
from odradek.protocol.frames import FrameDecoder, FrameError

log = logging.getLogger("odradek.broker.server")

Response = Sequence[bytes | memoryview] | None
"""The buffers of one response frame, or None when the request gets no response."""



@dataclass(frozen=True, slots=True)
class Later:
    """A request whose handler still runs: `pending` (run as the connection's in-flight task
    itself) and `finish`, which makes the response of its result. A coroutine wrapping the
    handler's instead, cancelled before its first step (the client went away), would leave
    the handler's coroutine never awaited."""

    pending: Awaitable[Any]
    finish: Callable[[Any], Response]


Dispatch = Callable[[bytes | bytearray, Session], Response | Awaitable[Response] | Later]
"""Handles one frame of a connection; raises ConnectionAbort to drop the connection."""
OpenSession = Callable[[asyncio.BaseTransport, str], Session]
"""A new connection's session from its transport and peer; raises ConnectionAbort to refuse
the connection."""

MAX_QUEUED_FRAMES = 8
"""Reading pauses once this many received frames wait for dispatch."""
MAX_QUEUED_BYTES = 16 << 20
"""Reading pauses once the frames waiting for dispatch hold this many bytes."""
WRITE_BUFFER_HIGH = 4 << 20
"""Dispatch and reading pause while the transport buffers more unsent bytes than this."""


class MutedResponse(list[bytes | memoryview]):
    """A response after which the connection reads and dispatches nothing for `mute_ms`:
    its client was throttled (KIP-219)."""

    def __init__(self, buffers: Sequence[bytes | memoryview], mute_ms: int) -> None:
        super().__init__(buffers)
        self.mute_ms = mute_ms


class Gate(typing.Protocol):
    """The broker's connection limits as a listener's connections meet them."""

    def admit(self, connection: KafkaConnection) -> bool | None:
        """True: serve it; False: close it; None: leave it unread until `admitted`."""

    def release(self, connection: KafkaConnection) -> None:
        """The connection closed."""


class ConnectionAbort(Exception):
    """The request is unusable (bad header or body) or refused (failed authentication):
    close this connection only, after writing `final_response` if there is one."""

    def __init__(self, reason: str, final_response: Response = None) -> None:
        super().__init__(reason)
        self.final_response = final_response


class KafkaConnection(asyncio.Protocol):
    """One client connection; `connections`, when given, holds it while it is open, and
    `gate` admits it. With `pre_auth_max_bytes` (a SASL listener's
    sasl.server.max.receive.size) its requests and the bytes it has queued are capped at
    that until its session is authenticated."""

    def __init__(
        self,
        dispatch: Dispatch,
        max_request_bytes: int,
        connections: set[KafkaConnection] | None = None,
        open_session: OpenSession = lambda transport, peer: Session(peer),
        gate: Gate | None = None,
        pre_auth_max_bytes: int | None = None,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._on_close = on_close
        """Told the peer ("host:port") once the connection is closed."""
        self._open_session = open_session
        self._session = Session("?")
        self._max_request_bytes = max_request_bytes
        self._pre_auth_max_bytes = pre_auth_max_bytes
        self._decoder = FrameDecoder(min(max_request_bytes, pre_auth_max_bytes or
                                         max_request_bytes))
        self._max_queued_bytes = min(MAX_QUEUED_BYTES, pre_auth_max_bytes or MAX_QUEUED_BYTES)
        self._connections = connections
        self._gate = gate
        self._waiting = False
        """Not yet admitted by the gate: what arrives is held, unread."""
        self._held = bytearray()
        self._admitted = False
        self.peer_ip = "?"
        self.last_active = 0.0
        """The loop time of the connection's latest read or write."""
        self._queue: deque[bytes | bytearray] = deque()
        self._queued_bytes = 0
        self._in_flight: asyncio.Future[Any] | None = None
        self._finish: Callable[[Any], Response] | None = None
        """How the in-flight request's result becomes its response (None: it is one)."""
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._reading_paused = False
        self._writing_paused = False
        self._muted: asyncio.TimerHandle | None = None
        self._closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.peer_ip = peer[0] if peer else "?"
        self.last_active = time.monotonic()
        self._transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        if self._connections is not None:
            self._connections.add(self)
        try:
            self._session = self._open_session(transport, self._peer)
        except ConnectionAbort as error:
            self._abort(str(error))
            return
        if self._gate is not None:
            verdict = self._gate.admit(self)
            if verdict is None:
                self._waiting = True  # reading pauses at the first bytes (uvloop reads on)
            else:
                self.admitted(verdict)

    def admitted(self, accepted: bool) -> None:
        """The gate's verdict on this connection: serve it, or close it."""
        self._waiting = False
        self._admitted = accepted
        if not accepted:
            self._abort_quietly()
            return
        held, self._held = bytes(self._held), bytearray()
        if held:
            self.data_received(held)
        else:
            self._update_reading()

    def _lift_pre_auth_cap(self) -> None:
        """Once SASL authentication succeeded: requests up to socket.request.max.bytes."""
        sasl = self._session.sasl
        if self._pre_auth_max_bytes is not None and sasl is not None and sasl.authenticated:
            self._pre_auth_max_bytes = None
            self._decoder.max_size = self._max_request_bytes
            self._max_queued_bytes = MAX_QUEUED_BYTES

    @property
    def idle(self) -> bool:
        """No request queued or in flight (a muted connection is not idle)."""
        return (not self._queue and self._in_flight is None and self._muted is None
                and not self._closed)

    def close_idle(self) -> None:
        """Close it as idle past connections.max.idle.ms."""
        log.info("closing idle connection from %s", self._peer)
        self._abort_quietly()
    def connection_lost(self, exc: Exception | None) -> None:
        self._close()

    def close(self) -> asyncio.Future[Response] | None:
        """Abort the connection (broker shutdown); returns the cancelled in-flight request."""
        in_flight = self._in_flight
        self._abort_quietly()
        return in_flight

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._run()

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self.last_active = time.monotonic()
        if self._waiting:
            self._held += data
            self._update_reading()
            return
        try:
            frames = self._decoder.feed(data)
        except FrameError as error:
            self._abort(str(error))
            return
        self._queue.extend(frames)
        self._queued_bytes += sum(len(frame) for frame in frames)
        self._run()

    def _run(self) -> None:
        """Dispatch queued frames until one is still running or writing is paused."""
        queue = self._queue
        while queue and self._in_flight is None and not self._writing_paused and not self._muted:
            if self._closed:
                return
            frame = queue.popleft()
            self._queued_bytes -= len(frame)
            try:
                result = self._dispatch(frame, self._session)
            except Exception as error:
                self._fail(error)
                return
            if isinstance(result, Later):
                future, finish = asyncio.ensure_future(result.pending), result.finish
            elif isinstance(result, Awaitable):
                future, finish = asyncio.ensure_future(result), None
            else:
                self._write(result)
                continue
            if not future.done():
                self._in_flight, self._finish = future, finish
                future.add_done_callback(self._on_done)
                break
            if not self._complete(future, finish):
                return
        self._update_reading()

    def _on_done(self, future: asyncio.Future[Any]) -> None:
        if future is not self._in_flight:
            return
        finish, self._in_flight, self._finish = self._finish, None, None
        if self._complete(future, finish):
            self._run()

    def _complete(self, future: asyncio.Future[Any],
                  finish: Callable[[Any], Response] | None) -> bool:
        """Write a finished request's response; False when the connection is now closed."""
        if self._closed or future.cancelled():
            return False
        error = future.exception()
        if error is None and finish is not None:
            try:
                response = finish(future.result())
            except Exception as failure:
                error = failure
        elif error is None:
            response = future.result()
        if error is not None:
            self._fail(error)
            return False
        self._write(response)
        return True

    def _write(self, response: Response) -> None:
        if response is not None and self._transport is not None and not self._closed:
            self._transport.writelines(response)
            self.last_active = time.monotonic()
            if isinstance(response, MutedResponse):
                self._mute(response.mute_ms)

    def _mute(self, mute_ms: int) -> None:
        if self._muted is not None:
            self._muted.cancel()
        self._muted = asyncio.get_running_loop().call_later(mute_ms / 1000, self._unmute)
        self._update_reading()

    def _unmute(self) -> None:
        self._muted = None
        self._run()

    def _update_reading(self) -> None:
        self._lift_pre_auth_cap()
        transport = self._transport
        if transport is None or self._closed:
            return
        should_pause = (
            self._writing_paused
            or self._waiting
            or self._muted is not None
            or len(self._queue) >= MAX_QUEUED_FRAMES
            or self._queued_bytes >= self._max_queued_bytes
        )
        if should_pause and not self._reading_paused:
            transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused:
            transport.resume_reading()
            self._reading_paused = False

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, ConnectionAbort):
            if error.final_response is not None:
                self._write(error.final_response)
                self._close_after_writing(str(error))
                return
            self._abort(str(error))
        else:
            self._abort(f"request failed: {error!r}", exc=error)

    def _abort(self, reason: str, exc: BaseException | None = None) -> None:
        log.warning("closing connection from %s: %s", self._peer, reason, exc_info=exc)
        self._abort_quietly()

    def _abort_quietly(self) -> None:
        if self._transport is not None and not self._closed:
            self._transport.abort()
        self._close()

    def _close_after_writing(self, reason: str) -> None:
        log.info("closing connection from %s: %s", self._peer, reason)
        if self._transport is not None and not self._closed:
            self._transport.close()
        self._close()

    def _close(self) -> None:
        if self._gate is not None and not self._closed and (self._admitted or self._waiting):
            self._gate.release(self)
        if self._on_close is not None and not self._closed:
            self._on_close(self._peer)
        self._waiting = self._admitted = False
        self._closed = True
        if self._muted is not None:
            self._muted.cancel()
            self._muted = None
        if self._in_flight is not None:
            self._in_flight.cancel()
            self._in_flight = self._finish = None
        self._queue.clear()
        self._queued_bytes = 0
        if self._connections is not None:
            self._connections.discard(self)
