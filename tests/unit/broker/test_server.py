"""KafkaConnection over a fake transport: serial execution, ordering, backpressure, aborts."""

from __future__ import annotations

import asyncio
import gc
import struct
import warnings
from collections.abc import Awaitable, Callable, Iterator
from types import SimpleNamespace

import pytest

from odradek.broker.server import (
    MAX_QUEUED_BYTES,
    MAX_QUEUED_FRAMES,
    ConnectionAbort,
    KafkaConnection,
    Later,
    MutedResponse,
    Response,
)
from odradek.broker.session import Session


def framed(*payloads: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.reading = True
        self.aborted = False
        self.on_write: Callable[[], None] | None = None

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("10.0.0.1", 9999) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def writelines(self, list_of_data: object) -> None:
        self.written.append(b"".join(list_of_data))  # type: ignore[arg-type]
        if self.on_write is not None:
            self.on_write()

    def pause_reading(self) -> None:
        assert self.reading
        self.reading = False

    def resume_reading(self) -> None:
        assert not self.reading
        self.reading = True

    def abort(self) -> None:
        self.aborted = True


class Handler:
    """Dispatch answering `b"echo:<frame>"`; frames starting with `async` wait for release."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []
        self.gates: dict[bytes, asyncio.Future[None]] = {}

    def __call__(self, frame: bytes | bytearray,
                 session: Session) -> Response | Awaitable[Response] | Later:
        frame = bytes(frame)
        self.calls.append(frame)
        if frame.startswith(b"later"):
            gate = self.gates[frame] = asyncio.get_running_loop().create_future()
            return Later(self._later(frame, gate), self._finish)
        if frame == b"abort":
            raise ConnectionAbort("bad request")
        if frame == b"boom":
            raise RuntimeError("handler bug")
        if frame == b"acks0":
            return None
        if frame.startswith(b"async"):
            gate = self.gates[frame] = asyncio.get_running_loop().create_future()
            return self._later(frame, gate)
        return [b"echo:" + frame]

    async def _later(self, frame: bytes, gate: asyncio.Future[None]) -> Response:
        await gate
        if frame == b"async-abort":
            raise ConnectionAbort("bad body")
        return [b"echo:" + frame]

    @staticmethod
    def _finish(result: Response) -> Response:
        assert result is not None
        if result[0] == b"echo:later-bug":
            raise RuntimeError("encoding bug")
        return [b"finished:" + bytes(result[0])]


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def settle(loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop until every ready callback has run (no sleeping)."""
    for _ in range(10):
        loop.run_until_complete(asyncio.sleep(0))


def connect(
    handler: Handler, connections: set[KafkaConnection] | None = None
) -> tuple[KafkaConnection, FakeTransport]:
    connection = KafkaConnection(handler, 1 << 20, connections)
    transport = FakeTransport()
    connection.connection_made(transport)
    return connection, transport


def test_pipelined_sync_requests_answer_in_order_within_one_read() -> None:
    handler = Handler()
    connection, transport = connect(handler)
    connection.data_received(framed(b"a", b"b", b"c"))
    assert transport.written == [b"echo:a", b"echo:b", b"echo:c"]
    assert transport.reading


def test_next_request_is_not_dispatched_until_async_one_completes(
    loop: asyncio.AbstractEventLoop,
) -> None:
    handler = Handler()
    connection, transport = connect(handler)

    async def scenario() -> None:
        connection.data_received(framed(b"async-create", b"produce", b"acks0", b"fetch"))

    loop.run_until_complete(scenario())
    settle(loop)
    assert handler.calls == [b"async-create"]
    assert transport.written == []
    handler.gates[b"async-create"].set_result(None)
    settle(loop)
    assert handler.calls == [b"async-create", b"produce", b"acks0", b"fetch"]
    assert transport.written == [b"echo:async-create", b"echo:produce", b"echo:fetch"]


def test_acks0_request_does_not_block_the_queue() -> None:
    handler = Handler()
    connection, transport = connect(handler)
    connection.data_received(framed(b"acks0", b"acks0", b"after"))
    assert handler.calls == [b"acks0", b"acks0", b"after"]
    assert transport.written == [b"echo:after"]


def test_reading_pauses_when_queue_is_full_and_resumes_when_drained(
    loop: asyncio.AbstractEventLoop,
) -> None:
    handler = Handler()
    connection, transport = connect(handler)
    waiting = [b"w%d" % i for i in range(MAX_QUEUED_FRAMES)]

    async def feed(data: bytes) -> None:
        connection.data_received(data)

    loop.run_until_complete(feed(framed(b"async-1", *waiting[:-1])))
    assert transport.reading, "one frame below the bound keeps reading"
    loop.run_until_complete(feed(framed(waiting[-1])))
    assert not transport.reading
    handler.gates[b"async-1"].set_result(None)
    settle(loop)
    assert transport.reading
    assert handler.calls == [b"async-1", *waiting]


def test_reading_pauses_when_queued_bytes_reach_the_bound(
    loop: asyncio.AbstractEventLoop,
) -> None:
    handler = Handler()
    connection = KafkaConnection(handler, MAX_QUEUED_BYTES, None)
    transport = FakeTransport()
    connection.connection_made(transport)

    async def feed(data: bytes) -> None:
        connection.data_received(data)

    loop.run_until_complete(feed(framed(b"async-1", b"x" * (MAX_QUEUED_BYTES - 1))))
    assert transport.reading
    loop.run_until_complete(feed(framed(b"y")))
    assert not transport.reading
    handler.gates[b"async-1"].set_result(None)
    settle(loop)
    assert transport.reading
    assert len(handler.calls) == 3


def test_no_dispatch_while_writing_is_paused() -> None:
    handler = Handler()
    connection, transport = connect(handler)
    connection.pause_writing()
    assert not transport.reading
    connection.data_received(framed(b"a", b"b"))
    assert handler.calls == []
    connection.resume_writing()
    assert handler.calls == [b"a", b"b"]
    assert transport.written == [b"echo:a", b"echo:b"]
    assert transport.reading


def test_pause_writing_during_a_read_holds_the_rest() -> None:
    handler = Handler()
    connection, transport = connect(handler)
    transport.on_write = connection.pause_writing
    connection.data_received(framed(b"a", b"b", b"c"))
    assert handler.calls == [b"a"]
    assert not transport.reading


@pytest.mark.parametrize("bad", [b"abort", b"boom"])
def test_failing_request_aborts_only_its_connection(
    bad: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    handler = Handler()
    connections: set[KafkaConnection] = set()
    connection, transport = connect(handler, connections)
    other, other_transport = connect(handler, connections)
    connection.data_received(framed(b"a", bad, b"never"))
    assert transport.written == [b"echo:a"]
    assert transport.aborted
    assert handler.calls == [b"a", bad]
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert connections == {other}
    other.data_received(framed(b"b"))
    assert other_transport.written == [b"echo:b"] and not other_transport.aborted


def test_async_connection_abort_closes_the_connection(loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    connection, transport = connect(handler)

    async def feed() -> None:
        connection.data_received(framed(b"async-abort", b"never"))

    loop.run_until_complete(feed())
    handler.gates[b"async-abort"].set_result(None)
    settle(loop)
    assert transport.aborted
    assert handler.calls == [b"async-abort"]
    assert transport.written == []


def test_bad_frame_size_aborts() -> None:
    connection, transport = connect(Handler())
    connection.data_received(struct.pack(">i", -1))
    assert transport.aborted


def test_close_cancels_the_in_flight_request(loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    connections: set[KafkaConnection] = set()
    connection, transport = connect(handler, connections)

    async def scenario() -> None:
        connection.data_received(framed(b"async-1", b"never"))
        in_flight = connection.close()
        assert in_flight is not None
        await asyncio.gather(in_flight, return_exceptions=True)
        assert in_flight.cancelled()

    loop.run_until_complete(scenario())
    assert transport.aborted
    assert connections == set()
    connection.data_received(framed(b"late"))
    assert handler.calls == [b"async-1"]


def test_a_later_result_is_finished_into_its_response_in_order(
        loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    connection, transport = connect(handler)

    async def scenario() -> None:
        connection.data_received(framed(b"later-1", b"sync"))

    loop.run_until_complete(scenario())
    settle(loop)
    assert transport.written == []
    handler.gates[b"later-1"].set_result(None)
    settle(loop)
    assert transport.written == [b"finished:echo:later-1", b"echo:sync"]


def test_a_failing_finish_aborts_only_its_connection(loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    connection, transport = connect(handler)

    async def scenario() -> None:
        connection.data_received(framed(b"later-bug", b"after"))

    loop.run_until_complete(scenario())
    handler.gates[b"later-bug"].set_result(None)
    settle(loop)
    assert transport.aborted
    assert handler.calls == [b"later-bug"]


def test_a_request_cancelled_before_it_started_leaves_no_coroutine_unawaited(
        loop: asyncio.AbstractEventLoop) -> None:
    """The client went away before the handler's task took its first step."""
    handler = Handler()
    connection, _ = connect(handler)

    async def scenario() -> None:
        connection.data_received(framed(b"later-gone"))
        in_flight = connection.close()
        assert in_flight is not None
        await asyncio.gather(in_flight, return_exceptions=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop.run_until_complete(scenario())
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


# --- throttling, connection limits, the pre-authentication cap ------------------------------


class Gate:
    """Admits by a script of verdicts; records releases."""

    def __init__(self, *verdicts: bool | None) -> None:
        self.verdicts = list(verdicts)
        self.released: list[KafkaConnection] = []

    def admit(self, connection: KafkaConnection) -> bool | None:
        return self.verdicts.pop(0)

    def release(self, connection: KafkaConnection) -> None:
        self.released.append(connection)


def test_a_muted_response_holds_reading_and_dispatch_for_its_time(
    loop: asyncio.AbstractEventLoop,
) -> None:
    """KIP-219: the throttled response leaves at once, then nothing is read or run until
    the throttle time has passed."""
    calls: list[bytes] = []

    def dispatch(frame: bytes | bytearray, peer: str) -> Response:
        calls.append(bytes(frame))
        return MutedResponse([b"throttled"], 50) if frame == b"over" else [b"ok"]

    connection = KafkaConnection(dispatch, 1 << 20)
    transport = FakeTransport()

    async def scenario() -> None:
        connection.connection_made(transport)
        connection.data_received(framed(b"over", b"next"))
        assert transport.written == [b"throttled"]
        assert calls == [b"over"] and not transport.reading
        await asyncio.sleep(0.06)

    loop.run_until_complete(scenario())
    assert calls == [b"over", b"next"] and transport.reading
    assert transport.written == [b"throttled", b"ok"]


def test_a_waiting_connection_is_unread_until_admitted(loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    gate = Gate(None)
    connection = KafkaConnection(handler, 1 << 20, gate=gate)
    transport = FakeTransport()
    connection.connection_made(transport)
    connection.data_received(framed(b"a"))
    assert not transport.reading and handler.calls == []
    connection.admitted(True)
    assert transport.reading
    assert transport.written == [b"echo:a"]
    connection.connection_lost(None)
    assert gate.released == [connection]


def test_a_refused_connection_is_closed_and_frees_nothing() -> None:
    gate = Gate(False)
    connection = KafkaConnection(Handler(), 1 << 20, gate=gate)
    transport = FakeTransport()
    connection.connection_made(transport)
    assert transport.aborted
    connection.connection_lost(None)
    assert gate.released == []


def test_idle_means_nothing_queued_in_flight_or_muted(loop: asyncio.AbstractEventLoop) -> None:
    handler = Handler()
    connection, transport = connect(handler)
    assert connection.idle

    async def scenario() -> None:
        connection.data_received(framed(b"async-x"))

    loop.run_until_complete(scenario())
    assert not connection.idle
    handler.gates[b"async-x"].set_result(None)
    settle(loop)
    assert connection.idle
    connection.close_idle()
    assert transport.aborted and not connection.idle


def test_before_authentication_requests_are_capped() -> None:
    """sasl.server.max.receive.size holds until the session's SASL exchange succeeds."""
    sasl = SimpleNamespace(authenticated=False)
    connection = KafkaConnection(Handler(), 1 << 20,
                                 open_session=lambda transport, peer: Session(peer, sasl=sasl),
                                 pre_auth_max_bytes=100)
    transport = FakeTransport()
    connection.connection_made(transport)
    connection.data_received(framed(b"x" * 100))
    assert transport.written == [b"echo:" + b"x" * 100]
    sasl.authenticated = True
    connection.data_received(framed(b"w"))  # the cap lifts once a request has run
    connection.data_received(framed(b"y" * 1000))
    assert transport.written[-1] == b"echo:" + b"y" * 1000
    unauthenticated = KafkaConnection(
        Handler(), 1 << 20, open_session=lambda transport, peer: Session(
            peer, sasl=SimpleNamespace(authenticated=False)), pre_auth_max_bytes=100)
    other = FakeTransport()
    unauthenticated.connection_made(other)
    unauthenticated.data_received(framed(b"z" * 101))
    assert other.aborted and other.written == []
