"""SaslHandshake and SaslAuthenticate: each moves its connection's SASL state
(odradek/security/sasl.py). On a listener without SASL both answer ILLEGAL_SASL_STATE, as
Kafka's request handlers do. A refused mechanism or failed credentials end the connection
after the answer (AuthenticationFailure)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import AuthenticationFailure, RequestContext, Result
from odradek.runtime.clock import now_ms
from odradek.security.sasl import (
    IllegalSaslState,
    SaslAuthenticationFailed,
    SaslSession,
    UnsupportedSaslMechanism,
)

_NOT_SASL = "SASL requests are not expected on a listener without SASL"


def _sasl(context: RequestContext) -> SaslSession | None:
    return context.session.sasl if context.session is not None else None


def handle_sasl_handshake(context: RequestContext, request: Any) -> Result:
    sasl = _sasl(context)
    if sasl is None:
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    try:
        sasl.handshake(request.mechanism)
    except UnsupportedSaslMechanism as error:
        raise AuthenticationFailure(str(error), {
            "error_code": ErrorCode.unsupported_sasl_mechanism,
            "mechanisms": sasl.enabled}) from None
    except IllegalSaslState as error:
        raise AuthenticationFailure(str(error), {
            "error_code": ErrorCode.illegal_sasl_state, "mechanisms": sasl.enabled}) from None
    return {"error_code": ErrorCode.none, "mechanisms": sasl.enabled}


def handle_sasl_authenticate(context: RequestContext, request: Any) -> Result:
    sasl = _sasl(context)
    session = context.session
    if sasl is None or session is None:
        return {"error_code": ErrorCode.illegal_sasl_state, "error_message": _NOT_SASL,
                "auth_bytes": b""}
    try:
        answer, lifetime_ms = sasl.authenticate(bytes(request.auth_bytes), now_ms())
    except SaslAuthenticationFailed as error:
        # the log says why (the client is told only what Kafka tells it)
        reason = f"{error} ({error.__cause__})" if error.__cause__ else str(error)
        raise AuthenticationFailure(reason, {
            "error_code": ErrorCode.sasl_authentication_failed, "error_message": str(error),
            "auth_bytes": b""}) from None
    except IllegalSaslState as error:
        raise AuthenticationFailure(str(error), {
            "error_code": ErrorCode.illegal_sasl_state, "error_message": str(error),
            "auth_bytes": b""}) from None
    if sasl.principal is not None:
        session.principal = sasl.principal
    return {"error_code": ErrorCode.none, "error_message": None, "auth_bytes": answer,
            "session_lifetime": lifetime_ms}
