"""One connection's SASL authentication, after Kafka's SaslServerAuthenticator: which requests
may come in which state, the handshake, the mechanism exchange, and KIP-368 sessions and
re-authentication. Pure: the shell passes `now_ms` and builds the mechanism servers.

Before authentication only ApiVersions and SaslHandshake may come, then only
SaslAuthenticate until the exchange completes; anything else closes the connection, as do a
mechanism the listener does not enable and failed credentials (after their answer)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol

from odradek.protocol.codec import api_name
from odradek.security.principal import USER, KafkaPrincipal

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


class MechanismServer(Protocol):
    """A mechanism's side of the exchange (PlainServer, ScramServer)."""

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str: ...

    def evaluate(self, message: bytes) -> bytes: ...


class SaslAuthenticationFailed(Exception):
    """SASL_AUTHENTICATION_FAILED with this message; the connection closes after the answer."""


class UnsupportedSaslMechanism(Exception):
    """UNSUPPORTED_SASL_MECHANISM; the connection closes after the answer."""


class IllegalSaslState(Exception):
    """A request out of order: the connection closes without an answer."""


class SaslState(StrEnum):
    """Kafka's SaslServerAuthenticator.SaslState, without its legacy GSSAPI first request."""

    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    AUTHENTICATED = "AUTHENTICATED"
    REAUTH_AUTHENTICATE = "REAUTH_AUTHENTICATE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"
    FAILED = "FAILED"


_S = SaslState
TRANSITIONS: Mapping[SaslState, frozenset[SaslState]] = MappingProxyType({
    _S.HANDSHAKE_OR_VERSIONS_REQUEST: frozenset({_S.HANDSHAKE_REQUEST, _S.AUTHENTICATE,
                                                 _S.FAILED}),
    _S.HANDSHAKE_REQUEST: frozenset({_S.AUTHENTICATE, _S.FAILED}),
    _S.AUTHENTICATE: frozenset({_S.AUTHENTICATED, _S.FAILED}),
    _S.AUTHENTICATED: frozenset({_S.REAUTH_AUTHENTICATE, _S.REAUTH_BAD_MECHANISM, _S.FAILED}),
    _S.REAUTH_AUTHENTICATE: frozenset({_S.AUTHENTICATED, _S.FAILED}),
    _S.REAUTH_BAD_MECHANISM: frozenset({_S.FAILED}),
    _S.FAILED: frozenset(),
})
"""State -> the states it may move to. FAILED is final: the connection closes."""
_AUTHENTICATED = frozenset({_S.AUTHENTICATED, _S.REAUTH_AUTHENTICATE, _S.REAUTH_BAD_MECHANISM})
_EXCHANGING = frozenset({_S.AUTHENTICATE, _S.REAUTH_AUTHENTICATE, _S.REAUTH_BAD_MECHANISM})


class IllegalSaslTransition(Exception):
    """A move the table does not list: a bug in this module."""


class SaslSession:
    """`new_server(mechanism)` starts a mechanism's exchange. A server's `evaluate` raises
    SaslAuthenticationFailed with a message for the client, or ValueError, whose message may
    say too much (whether a user exists): the client gets Kafka's generic message then. Every
    refusal moves the session to FAILED, as the connection closes after it."""

    def __init__(self, enabled: Sequence[str], new_server: Callable[[str], MechanismServer],
                 max_reauth_ms: Mapping[str, int]) -> None:
        self.enabled = list(enabled)
        self._new_server = new_server
        self.max_reauth_ms = max_reauth_ms
        """connections.max.reauth.ms by mechanism (0: sessions do not end)."""
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self._server: MechanismServer | None = None
        """The exchange under way, in the states of _EXCHANGING."""
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        """Who the connection is, once authenticated (kept while it re-authenticates)."""
        self.expires_at_ms: int | None = None
        """When the session ends without a re-authentication (KIP-368), if it does."""

    @property
    def authenticated(self) -> bool:
        return self.state in _AUTHENTICATED

    @property
    def exchanging(self) -> bool:
        """A handshake has chosen the mechanism and its exchange has not completed."""
        return self.state in _EXCHANGING

    def _move(self, new: SaslState) -> None:
        if new not in TRANSITIONS[self.state]:
            raise IllegalSaslTransition(f"a SASL session cannot go from {self.state} to {new}")
        self.state = new
        if new not in _EXCHANGING:
            self._server = None

    def _fail(self, error: Exception) -> Exception:
        if self.state != SaslState.FAILED:
            self._move(SaslState.FAILED)
        return error

    def check(self, api_key: int, now_ms: int) -> None:
        """May this request come now? Raises IllegalSaslState when not (close the
        connection)."""
        state = self.state
        if state == SaslState.AUTHENTICATED:
            if self.expires_at_ms is not None and now_ms > self.expires_at_ms:
                raise self._fail(IllegalSaslState("the authenticated session expired "
                                                  "(connections.max.reauth.ms)"))
        elif state == SaslState.AUTHENTICATE:
            if api_key != SASL_AUTHENTICATE:
                raise self._fail(IllegalSaslState(
                    f"Unexpected Kafka request of type {_name(api_key)} during SASL "
                    "authentication."))
        elif state == SaslState.HANDSHAKE_OR_VERSIONS_REQUEST and api_key == API_VERSIONS:
            self._move(SaslState.HANDSHAKE_REQUEST)
        elif state in (SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, SaslState.HANDSHAKE_REQUEST):
            if api_key != SASL_HANDSHAKE:
                raise self._fail(IllegalSaslState(
                    f"Unexpected Kafka request of type {_name(api_key)} during SASL "
                    "handshake."))
        elif state == SaslState.FAILED:
            raise IllegalSaslState("the connection failed its SASL authentication")

    def handshake(self, mechanism: str) -> None:
        """Choose the mechanism (again, to re-authenticate)."""
        if mechanism not in self.enabled:
            raise self._fail(UnsupportedSaslMechanism(f"Unsupported SASL mechanism {mechanism}"))
        if self.exchanging or self.state == SaslState.FAILED:
            raise self._fail(IllegalSaslState("SaslHandshake during a SASL exchange"))
        if self.state != SaslState.AUTHENTICATED:
            self.mechanism = mechanism
            self._server = self._new_server(mechanism)
            self._move(SaslState.AUTHENTICATE)
        elif mechanism != self.mechanism:
            # as Kafka: the handshake succeeds, the SaslAuthenticate after it fails
            self._server = _Refusal(
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self.mechanism}'")
            self._move(SaslState.REAUTH_BAD_MECHANISM)
        else:
            self._server = self._new_server(mechanism)
            self._move(SaslState.REAUTH_AUTHENTICATE)

    def authenticate(self, token: bytes, now_ms: int) -> tuple[bytes, int]:
        """One SaslAuthenticate token: the answer, and the session lifetime once complete
        (0: no limit, or not complete yet)."""
        server = self._server
        if server is None:
            raise self._fail(IllegalSaslState("SaslAuthenticate before SaslHandshake"))
        phase = "re-authentication" if self.authenticated else "authentication"
        try:
            answer = server.evaluate(token)
        except ValueError as error:
            raise self._fail(SaslAuthenticationFailed(
                f"Authentication failed during {phase} due to invalid credentials with SASL "
                f"mechanism {self.mechanism}")) from error
        except SaslAuthenticationFailed as error:
            raise self._fail(error) from None
        if not server.complete:
            return answer, 0
        principal = KafkaPrincipal(USER, server.authorization_id)
        if self.principal is not None and principal != self.principal:
            before, after = self.principal, principal
            raise self._fail(SaslAuthenticationFailed(
                "Cannot change principals during re-authentication from "
                f"{before.principal_type}.{before.name}: {after.principal_type}.{after.name}"))
        self.principal = principal
        self._move(SaslState.AUTHENTICATED)
        lifetime = max(self.max_reauth_ms.get(self.mechanism or "", 0), 0)
        self.expires_at_ms = now_ms + lifetime if lifetime else None
        return answer, lifetime


class _Refusal:
    """The exchange of a re-authentication that asked for another mechanism."""

    complete = False
    authorization_id = ""

    def __init__(self, message: str) -> None:
        self.message = message

    def evaluate(self, message: bytes) -> bytes:
        raise SaslAuthenticationFailed(self.message)


def _name(api_key: int) -> str:
    return api_name(api_key).upper()
