"""Routes each request frame to its handler; the handler table is the one source of the
APIs and versions the broker supports, and ApiVersions answers from it. On a SASL listener a
connection's requests first pass its SASL state (odradek/security/sasl.py): until it has
authenticated only the SASL requests (and one ApiVersions) get through."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import AUTHORIZATION_ERRORS, Access, Pair
from odradek.broker.broker import Broker
from odradek.broker.server import ConnectionAbort, Later, MutedResponse, Response
from odradek.broker.services import BrokerServices
from odradek.broker.session import Session
from odradek.protocol import codec
from odradek.protocol.codec import RequestDecodeError, RequestHeader
from odradek.runtime.clock import now_ms
from odradek.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from odradek.security.authorizer import all_operations
from odradek.security.principal import ANONYMOUS, KafkaPrincipal
from odradek.security.sasl import IllegalSaslState

log = logging.getLogger("odradek.broker.dispatch")

class EncodedBody(list[bytes | bytearray | memoryview]):
    """A response body a hot-path handler encoded itself, as buffers for writelines."""

    throttle_time_ms = 0
    """The throttle time the body already carries."""
    throttled: Callable[[int], EncodedBody] | None = None
    """The body to send instead when the client is throttled for this long (a Fetch's has
    no records)."""


Result = Mapping[str, Any] | EncodedBody | None
Handler = Callable[["RequestContext", Any], Result | Awaitable[Result]]
Throttle = Callable[["RequestContext", Any, int, Result, float], tuple[Result, int]]
"""Charges a handled request to its client's quotas: (request, frame size, result, seconds
the handler was busy) to the response to send and how long to mute the connection after it."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    services: BrokerServices
    header: RequestHeader
    peer: str
    listener: str
    """The name of the listener the request came in on: brokers are described to the
    client by their endpoints on it."""
    principal: KafkaPrincipal = ANONYMOUS
    """Who the connection is, as TLS or SASL established it."""
    session: Session | None = None
    """The connection's session (the SASL requests change it)."""
    declared: frozenset[Pair] = frozenset()
    """What the API's Access declares it may check (see access.py)."""

    @property
    def broker(self) -> Broker:
        """The broker's state (`services.broker`)."""
        return self.services.broker

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def host(self) -> str:
        """The client's address, as ACL hosts name it."""
        return self.peer.rsplit(":", 1)[0]

    def allowed(self, operation: AclOperation, resource_type: ResourceType,
                name: str = CLUSTER_NAME) -> bool:
        """Whether the principal may do `operation` on the resource; always without an
        authorizer. The pair must be among the API's declared ones."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        assert (resource_type, operation) in self.declared, (
            f"{codec.api_name(self.header.api_key)} checks {operation.name} on "
            f"{resource_type.name} without declaring it in its Access")
        return authorizer.authorize(str(self.principal), self.host, operation, resource_type,
                                    name)

    def allowed_names(self, operation: AclOperation, resource_type: ResourceType,
                      names: Iterable[str]) -> set[str]:
        """Those of `names` the principal may do `operation` on, each checked once."""
        unique = set(names)
        if self.services.authorizer is None:
            return unique
        return {name for name in unique if self.allowed(operation, resource_type, name)}

    def allowed_on_some(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type may allow `operation` (Kafka's
        authorizeByResourceType)."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        assert (resource_type, operation) in self.declared
        return authorizer.current.authorize_by_resource_type(
            str(self.principal), self.host, operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The bit field of what the principal may do on the resource (every operation of
        its type without an authorizer)."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return all_operations(resource_type)
        return authorizer.current.authorized_operations(str(self.principal), self.host,
                                                        resource_type, name)


class AuthenticationFailure(Exception):
    """A handler's answer that ends the connection: it is sent after
    connection.failed.authentication.delay.ms, then the connection closes."""

    def __init__(self, reason: str, result: Mapping[str, Any]) -> None:
        super().__init__(reason)
        self.result = result


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    min_version: int
    max_version: int
    handler: Handler
    advertised_min_version: int | None = None
    """A lower minimum to list in ApiVersions than the one served (see apis.py, Produce)."""
    access: Access | None = None
    """What the API needs authorized; every API must declare it (see access.py)."""
    name: str = field(init=False)
    """Kafka's request name (`Produce`, `ApiVersions`), as metrics label it."""

    def __post_init__(self) -> None:
        name = "".join(part.title() for part in codec.api_name(self.key).split("_"))
        object.__setattr__(self, "name", name)


class UndeclaredAccess(ValueError):
    """An API of the table declares no Access."""


def undeclared(apis: Iterable[Api]) -> list[str]:
    """The names of the APIs that declare no authorization."""
    return [api.name for api in apis
            if api.access is None or not api.access.declares_something]


class Dispatcher:
    """The requests of one listener's connections."""

    def __init__(self, services: BrokerServices, apis: list[Api], listener: str,
                 throttle: Throttle | None = None) -> None:
        missing = undeclared(apis)
        if missing:
            raise UndeclaredAccess(f"APIs without a declared Access: {', '.join(missing)}")
        self.services = services
        self.broker = services.broker
        self.apis = {api.key: api for api in apis}
        self.listener = listener
        self.throttle = throttle

    def __call__(self, frame: bytes | bytearray, session: Session
                 ) -> Response | Awaitable[Response] | Later:
        started = time.perf_counter()
        try:
            header, offset = codec.decode_header(frame)
        except RequestDecodeError as error:
            raise ConnectionAbort(f"bad request header: {error}") from None
        if session.sasl is not None:
            try:
                session.sasl.check(header.api_key, now_ms())
            except IllegalSaslState as error:
                raise ConnectionAbort(str(error)) from None
        api = self.apis.get(header.api_key)
        if api is None:
            raise ConnectionAbort(f"unknown API key {header.api_key}")
        if not api.min_version <= header.api_version <= api.max_version:
            return self._unsupported_version(api, header)
        try:
            request = codec.decode_body(header, frame, offset)
        except RequestDecodeError as error:
            raise ConnectionAbort(
                f"malformed request: {error} (first bytes {frame[:48].hex()})"
            ) from None
        self.broker.metrics.requests.labels(api.name, str(header.api_version)).inc()
        access = api.access
        assert access is not None
        context = RequestContext(self.services, header, session.peer, self.listener,
                                 session.principal, session, declared=access.declared)
        refusal = self._refusal(access, context, request) if access.gates else None
        if refusal is not None:
            return self._finish(api, context, request, len(frame), refusal, started,
                                time.perf_counter() - started)
        try:
            result = api.handler(context, request)
        except AuthenticationFailure as failure:
            answer = self._encode(api, header, failure.result, started)
            return _close_later(str(failure), answer, session.failed_authentication_delay_ms)
        busy_s = time.perf_counter() - started
        size = len(frame)
        if inspect.isawaitable(result):
            return Later(result, lambda done: self._finish(api, context, request, size, done,
                                                           started, busy_s))
        return self._finish(api, context, request, size, result, started, busy_s)

    def _refusal(self, access: Access, context: RequestContext, request: Any) -> Result:
        """The response to a request one of its API's gates refuses (None: all allow it)."""
        for gate in access.gates:
            name = CLUSTER_NAME if gate.name is None else gate.name(request)
            if not context.allowed(gate.operation, gate.resource_type, name):
                return access.refusal(request, AUTHORIZATION_ERRORS[gate.resource_type])
        return None

    def _finish(self, api: Api, context: RequestContext, request: Any, size: int,
                result: Result, started: float, busy_s: float) -> Response:
        """Charge the request to its client's quotas, then encode its response."""
        mute_ms = 0
        if self.throttle is not None:
            result, mute_ms = self.throttle(context, request, size, result, busy_s)
        frame = self._encode(api, context.header, result, started)
        return MutedResponse(frame or [], mute_ms) if mute_ms > 0 else frame

    def _encode(
        self, api: Api, header: RequestHeader, result: Result, started: float
    ) -> Response:
        if result is None:
            frame = None
        elif isinstance(result, EncodedBody):
            head = codec.response_header(header)
            size = len(head) + sum(len(part) for part in result)
            frame = [codec.INT32.pack(size) + head, *result]
        else:
            code = result.get("error_code")
            if code:
                self.broker.metrics.count_error(api.name, code)
            frame = [codec.encode_response(header, result)]
        self.broker.metrics.total_time_ms.labels(api.name).observe(
            (time.perf_counter() - started) * 1000
        )
        return frame

    def _unsupported_version(self, api: Api, header: RequestHeader) -> Response:
        """ApiVersions answers v0 with UNSUPPORTED_VERSION and the table (KIP-511); other
        APIs answer UNSUPPORTED_VERSION where the schema can carry it, else close."""
        if header.api_key == codec.API_VERSIONS_KEY:
            v0 = RequestHeader(header.api_key, 0, header.correlation_id, header.client_id)
            table = api.handler(RequestContext(self.services, v0, "", self.listener), None)
            assert isinstance(table, Mapping)
            body = {**table, "error_code": ErrorCode.unsupported_version}
            return [codec.encode_response(v0, body)]
        known = codec.schema_versions(header.api_key)
        if known and known[0] <= header.api_version <= known[1]:
            schema = codec.response_schema(header.api_key, header.api_version)
            if "error_code" in schema.__dataclass_fields__:  # type: ignore[attr-defined]
                body = {"error_code": ErrorCode.unsupported_version}
                return [codec.encode_response(header, body)]
        raise ConnectionAbort(
            f"{api.name} v{header.api_version} unsupported "
            f"(supported {api.min_version}-{api.max_version})"
        )


async def _close_later(reason: str, answer: Response, delay_ms: int) -> Response:
    """Kafka's delayed close of a connection that failed authentication: the answer goes out
    after the delay (so that guessing passwords is slow), then the connection closes."""
    if delay_ms:
        await asyncio.sleep(delay_ms / 1000)
    raise ConnectionAbort(reason, final_response=answer)
