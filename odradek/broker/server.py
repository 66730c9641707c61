"""The Kafka listener: one asyncio Protocol per connection over the sans-IO frame decoder.

Requests on a connection may be pipelined; responses leave in request order. A connection
whose bytes cannot be framed or decoded is closed with a log line; others are unaffected.
"""

from __future__ import annotations

import asyncio
import logging
import typing
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from odradek.protocol.frames import FrameDecoder, FrameError

log = logging.getLogger("odradek.broker.server")

Response = Sequence[bytes | memoryview] | None
"""The buffers of one response frame, or None when the request gets no response."""

Dispatch = Callable[[bytes | bytearray, str], Response | Awaitable[Response]]
"""Handles one frame from a peer; raises ConnectionAbort to drop the connection."""

MAX_PIPELINED = 100


class ConnectionAbort(Exception):
    """The request is unusable (bad header or body): close this connection only."""


class KafkaConnection(asyncio.Protocol):
    def __init__(self, dispatch: Dispatch, max_request_bytes: int) -> None:
        self._dispatch = dispatch
        self._decoder = FrameDecoder(max_request_bytes)
        self._pending: deque[asyncio.Future[Response] | Response] = deque()
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._transport.set_write_buffer_limits(high=4 << 20)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        for item in self._pending:
            if isinstance(item, asyncio.Future):
                item.cancel()
        self._pending.clear()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._flush()
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except FrameError as error:
            self._abort(str(error))
            return
        for frame in frames:
            if self._closed:
                return
            try:
                result = self._dispatch(frame, self._peer)
            except ConnectionAbort as error:
                self._abort(str(error))
                return
            except Exception as error:
                self._abort(f"request failed: {error!r}", exc=error)
                return
            if isinstance(result, Awaitable):
                future = asyncio.ensure_future(result)
                future.add_done_callback(self._on_done)
                self._pending.append(future)
            else:
                self._pending.append(result)
        self._flush()
        self._update_reading()

    def _on_done(self, future: asyncio.Future[Response]) -> None:
        if future.cancelled() or self._closed:
            return
        error = future.exception()
        if error is not None:
            self._abort(
                str(error) if isinstance(error, ConnectionAbort) else repr(error),
                exc=None if isinstance(error, ConnectionAbort) else error,
            )
            return
        self._flush()
        self._update_reading()

    def _flush(self) -> None:
        transport = self._transport
        pending = self._pending
        if transport is None or self._closed:
            return
        while pending:
            head = pending[0]
            if isinstance(head, asyncio.Future):
                if not head.done():
                    break
                response = head.result()
            else:
                response = head
            pending.popleft()
            if response is not None:
                transport.writelines(response)

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closed:
            return
        should_pause = self._writing_paused or len(self._pending) >= MAX_PIPELINED
        if should_pause and not self._reading_paused:
            transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused:
            transport.resume_reading()
            self._reading_paused = False

    def _abort(self, reason: str, exc: BaseException | None = None) -> None:
        log.warning("closing connection from %s: %s", self._peer, reason, exc_info=exc)
        self._closed = True
        if self._transport is not None:
            self._transport.abort()
