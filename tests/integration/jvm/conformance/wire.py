"""One blocking Kafka connection for the conformance suite: requests built from plain
mappings with Odradek's encoder (kio), responses decoded with kio's decoder, the same on both
brokers. A connection the broker closes instead of answering is a result too (`CLOSED`)."""

from __future__ import annotations

import socket
import struct
from functools import cache
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.serial.errors import SerialError

from odradek.protocol.codec import API_VERSIONS_KEY, build_request, encode_body, is_flexible
from odradek.protocol.guard import skip_tagged_fields

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
CLOSED = "<connection closed by the broker>"
"""What a request gets when the broker closes the connection instead of answering."""


class Undecodable(str):
    """A response kio's decoder refuses; compared by its error text."""


@cache
def _reader(api_key: int, version: int) -> Any:
    return entity_reader(load_response_schema(api_key, version))


class Wire:
    """One connection to one broker; each `call` sends a request and reads its answer."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.closed = False

    def close(self) -> None:
        self.sock.close()

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        """The decoded response entity, or CLOSED."""
        return self.call_raw(api_key, version, encode_body(build_request(api_key, version, body)))

    def call_raw(self, api_key: int, version: int, body: bytes) -> Any:
        if self.closed:
            return CLOSED
        self.correlation_id += 1
        header = struct.pack(">hhih", api_key, version, self.correlation_id, 11) + b"conformance"
        if is_flexible(api_key, version):
            header += b"\x00"
        payload = header + body
        try:
            self.sock.sendall(struct.pack(">i", len(payload)) + payload)
            (size,) = struct.unpack(">i", self._read(4))
            frame = self._read(size)
        except (ConnectionError, EOFError):
            self.closed = True
            return CLOSED
        (correlation_id,) = struct.unpack_from(">i", frame)
        assert correlation_id == self.correlation_id, (correlation_id, self.correlation_id)
        flexible_header = api_key != API_VERSIONS_KEY and is_flexible(api_key, version)
        position = skip_tagged_fields(frame, 4) if flexible_header else 4
        try:
            response, _ = _reader(api_key, version)(frame, position)
        except SerialError as error:  # kio refuses some values brokers send, e.g. a -1 instant
            return Undecodable(f"{type(error).__name__}: {error}")
        return response

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    def login_plain(self, user: str, password: str) -> None:
        """SASL/PLAIN: SaslHandshake v1, then one SaslAuthenticate v2."""
        handshake = self.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert handshake.error_code == ErrorCode.none, handshake
        token = b"\0" + user.encode() + b"\0" + password.encode()
        answer = self.call(SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        assert answer.error_code == ErrorCode.none, answer
