"""A TCP proxy in front of a broker that loses Produce responses: it forwards a Produce
request, lets the broker append it, then drops the connection instead of returning the
answer, so that the client retries a batch the log already holds.

The broker advertises the proxy's port (advertised.listeners), so every connection the
client opens goes through it.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

PRODUCE = 0
_LENGTH = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">hhi")


def _read_frame(sock: socket.socket) -> bytes | None:
    header = _read_exactly(sock, 4)
    if header is None:
        return None
    body = _read_exactly(sock, _LENGTH.unpack(header)[0])
    return None if body is None else header + body


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        try:
            chunk = sock.recv(size - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


class ProduceResponseDropper:
    def __init__(self, upstream_port: int, listen_port: int, drops: int) -> None:
        self.upstream_port = upstream_port
        self.drops = drops
        """How many Produce responses to lose (each loses its connection)."""
        self.dropped = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", listen_port))
        self._sockets: list[socket.socket] = []
        self._closed = False

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._server.close()
        for sock in list(self._sockets):
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [client, upstream]
            produce_ids: set[int] = set()
            threading.Thread(target=self._requests, args=(client, upstream, produce_ids),
                             daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, produce_ids),
                             daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket,
                  produce_ids: set[int]) -> None:
        while (frame := _read_frame(client)) is not None:
            api_key, _, correlation_id = _REQUEST_HEADER.unpack_from(frame, 4)
            if api_key == PRODUCE:
                produce_ids.add(correlation_id)
            try:
                upstream.sendall(frame)
            except OSError:
                break
        _close(client, upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket,
                   produce_ids: set[int]) -> None:
        while (frame := _read_frame(upstream)) is not None:
            (correlation_id,) = _LENGTH.unpack_from(frame, 4)
            if correlation_id in produce_ids:
                with self._lock:
                    drop = self.dropped < self.drops
                    self.dropped += drop
                if drop:
                    break
            try:
                client.sendall(frame)
            except OSError:
                break
        _close(client, upstream)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


@contextmanager
def dropping_produce_responses(upstream_port: int, listen_port: int,
                               drops: int) -> Iterator[ProduceResponseDropper]:
    proxy = ProduceResponseDropper(upstream_port, listen_port, drops)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.close()
