"""One Kafka protocol connection to one broker: kio request entities in, response entities
out, one request in flight at a time. A failure closes it; the caller opens a new one.

A connection is secured as its `ClientSecurity` says: TLS, then SASL (SaslHandshake v1 and
SaslAuthenticate v2) before the first request, and again before the session the broker
granted ends (KIP-368 re-authentication, at 85% of its lifetime)."""

from __future__ import annotations

import asyncio
import struct
import time
from functools import cache
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from odradek.net.kafka_client.request_versions import SASL_AUTHENTICATE, SASL_HANDSHAKE
from odradek.net.kafka_client.security import PLAINTEXT_CLIENT, ClientSecurity
from odradek.protocol.codec import INT32, build_request, encode_body, is_flexible
from odradek.protocol.guard import skip_tagged_fields

_HEADER = struct.Struct(">hhih")
REAUTHENTICATE_AT = 0.85
"""The share of a SASL session's lifetime after which the client authenticates again."""


class KafkaClientError(Exception):
    """A request this client could not deliver or whose answer it could not read; the message
    says why."""


class BrokerConnectionError(KafkaClientError, ConnectionError):
    """The connection failed or the response did not parse; the connection is closed."""


@cache
def _response_reader(api_key: int, version: int) -> Any:
    return entity_reader(load_response_schema(api_key, version))


class SaslAuthenticationError(BrokerConnectionError):
    """The broker refused this client's SASL login, or the exchange failed."""


class BrokerConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client_id: str, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id.encode()
        self._correlation_id = 0
        self._answered = False
        """Whether the broker has answered anything on this connection."""
        self._security = security
        self._reauthenticate_at: float | None = None
        """time.monotonic() after which the SASL session must be renewed."""

    @classmethod
    async def connect(cls, host: str, port: int, client_id: str, timeout: float,
                      security: ClientSecurity = PLAINTEXT_CLIENT) -> BrokerConnection:
        """A connection, secured and (on SASL) authenticated; raises BrokerConnectionError,
        or SaslAuthenticationError when the broker refuses the login."""
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                host, port, ssl=security.ssl_context,
                server_hostname=security.server_hostname(host)), timeout)
        except (OSError, TimeoutError) as error:
            raise BrokerConnectionError(f"cannot connect to {host}:{port}: {error}") from None
        connection = cls(reader, writer, client_id, security)
        if security.sasl is not None:
            await connection._authenticate(timeout)
        return connection

    async def _authenticate(self, timeout: float) -> None:
        login = self._security.sasl
        assert login is not None
        handshake = await self._exchange([build_request(
            *SASL_HANDSHAKE, {"mechanism": login.mechanism})], timeout)
        if handshake[0].error_code != ErrorCode.none:
            self.close()
            raise SaslAuthenticationError(
                f"SASL mechanism {login.mechanism} refused "
                f"({handshake[0].error_code.name.upper()}); "
                f"the broker enables {', '.join(handshake[0].mechanisms) or 'none'}")
        exchange = login.exchange()
        token: bytes | None = exchange.first()
        try:
            while token is not None:
                (response,) = await self._exchange(
                    [build_request(*SASL_AUTHENTICATE, {"auth_bytes": token})], timeout)
                if response.error_code != ErrorCode.none:
                    raise SaslAuthenticationError(
                        f"{response.error_code.name.upper()}: {response.error_message or ''}")
                token = exchange.answer(response.auth_bytes)
        except (SaslAuthenticationError, ValueError) as error:
            self.close()
            raise SaslAuthenticationError(f"SASL {login.mechanism} login as {login.username} "
                                          f"failed: {error}") from None
        lifetime_s = response.session_lifetime.total_seconds()
        self._reauthenticate_at = (time.monotonic() + lifetime_s * REAUTHENTICATE_AT
                                   if lifetime_s > 0 else None)

    async def send(self, request: Any, timeout: float) -> Any:
        """Send a kio request entity; the decoded response entity of the same version."""
        (response,) = await self.send_all([request], timeout)
        return response

    async def send_all(self, requests: list[Any], timeout: float) -> list[Any]:
        """Send the requests back to back, then read their responses in order (a broker
        handles one connection's requests in order): one round trip for all of them."""
        if self._reauthenticate_at is not None and time.monotonic() >= self._reauthenticate_at:
            await self._authenticate(timeout)
        return await self._exchange(requests, timeout)

    def _closed_by_broker(self) -> str:
        """Why the broker closed the connection; the hint applies only to a TLS connection
        closed before its first answer (a later close is a broker stopping or dropping it)."""
        if self._security.ssl_context is None or self._answered:
            return "the broker closed the connection"
        return ("the broker closed the connection (a TLS listener with ssl.client.auth=required "
                "does so to a client without a certificate it trusts)")

    async def _exchange(self, requests: list[Any], timeout: float) -> list[Any]:
        payloads = []
        first_id = self._correlation_id + 1
        for request in requests:
            api_key, version = int(request.__api_key__), int(request.__version__)
            self._correlation_id += 1
            flexible = is_flexible(api_key, version)
            header = _HEADER.pack(api_key, version, self._correlation_id, len(self._client_id))
            header += self._client_id + (b"\x00" if flexible else b"")
            payload = header + encode_body(request)
            payloads.append(INT32.pack(len(payload)) + payload)
        try:
            if self._writer.transport.is_closing():
                raise ConnectionResetError  # uvloop raises RuntimeError on such a write
            self._writer.writelines(payloads)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
                frames = []
                for _ in requests:
                    (size,) = INT32.unpack(await self._reader.readexactly(4))
                    frames.append(await self._reader.readexactly(size))
            self._answered = True
        except (asyncio.IncompleteReadError, ConnectionResetError):
            self.close()
            raise BrokerConnectionError(self._closed_by_broker()) from None
        except (OSError, TimeoutError) as error:
            self.close()
            raise BrokerConnectionError(f"{type(error).__name__}: {error}") from None
        return [self._decode(request, frame, first_id + index)
                for index, (request, frame) in enumerate(zip(requests, frames, strict=True))]

    def _decode(self, request: Any, frame: bytes, expected_id: int) -> Any:
        api_key, version = int(request.__api_key__), int(request.__version__)
        (correlation_id,) = INT32.unpack_from(frame, 0)
        if correlation_id != expected_id:
            self.close()
            raise BrokerConnectionError(f"correlation id {correlation_id}, expected "
                                        f"{expected_id}")
        try:
            position = skip_tagged_fields(frame, 4) if is_flexible(api_key, version) else 4
            response, _ = _response_reader(api_key, version)(frame, position)
        except Exception as error:  # kio raises several types on garbage; all mean the same
            self.close()
            raise BrokerConnectionError(f"undecodable response: {error}") from None
        return response

    def close(self) -> None:
        self._writer.close()
