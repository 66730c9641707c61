"""A connection's SASL state (SaslSession), PLAIN and the JAAS config PLAIN users come from."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.security import jaas
from odradek.security.plain import PlainServer
from odradek.security.principal import KafkaPrincipal
from odradek.security.sasl import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    IllegalSaslState,
    IllegalSaslTransition,
    MechanismServer,
    SaslAuthenticationFailed,
    SaslSession,
    SaslState,
    UnsupportedSaslMechanism,
)

METADATA, PRODUCE = 3, 0
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')


def session(reauth_ms: int = 0) -> SaslSession:
    def new_server(mechanism: str) -> MechanismServer:
        return PlainServer(USERS)
    return SaslSession(["PLAIN", "SCRAM-SHA-512"], new_server, {"PLAIN": reauth_ms})


def login(sasl: SaslSession, user: str, password: str, now_ms: int = 0) -> int:
    sasl.check(SASL_HANDSHAKE, now_ms)
    sasl.handshake("PLAIN")
    sasl.check(SASL_AUTHENTICATE, now_ms)
    return sasl.authenticate(f"\0{user}\0{password}".encode(), now_ms)[1]


def test_only_sasl_requests_and_one_api_versions_come_before_authentication() -> None:
    sasl = session()
    sasl.check(API_VERSIONS, 0)
    assert sasl.state == SaslState.HANDSHAKE_REQUEST
    with pytest.raises(IllegalSaslState, match="API_VERSIONS during SASL handshake"):
        sasl.check(API_VERSIONS, 0)
    assert sasl.state == SaslState.FAILED
    with pytest.raises(IllegalSaslState, match="METADATA during SASL handshake"):
        session().check(METADATA, 0)
    sasl = session()
    sasl.handshake("PLAIN")
    with pytest.raises(IllegalSaslState, match="METADATA during SASL authentication"):
        sasl.check(METADATA, 0)


def test_a_failed_session_admits_nothing_more() -> None:
    sasl = session()
    sasl.handshake("PLAIN")
    with pytest.raises(SaslAuthenticationFailed):
        sasl.authenticate(b"\0alice\0wrong", 0)
    assert sasl.state == SaslState.FAILED
    for api_key in (API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, PRODUCE):
        with pytest.raises(IllegalSaslState):
            sasl.check(api_key, 0)
    with pytest.raises(IllegalSaslState):
        sasl.handshake("PLAIN")


def test_every_move_is_in_the_table() -> None:
    """A session through login, re-authentication and a refused mechanism passes Kafka's
    states, and a move the table does not list raises."""
    sasl = session(reauth_ms=1000)
    seen = [sasl.state]
    sasl.check(API_VERSIONS, 0)
    seen.append(sasl.state)
    login(sasl, "alice", "alice-secret")
    seen.append(sasl.state)
    sasl.handshake("PLAIN")
    seen.append(sasl.state)
    sasl.authenticate(b"\0alice\0alice-secret", 1)
    seen.append(sasl.state)
    sasl.handshake("SCRAM-SHA-512")
    seen.append(sasl.state)
    assert seen == [SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, SaslState.HANDSHAKE_REQUEST,
                    SaslState.AUTHENTICATED, SaslState.REAUTH_AUTHENTICATE,
                    SaslState.AUTHENTICATED, SaslState.REAUTH_BAD_MECHANISM]
    with pytest.raises(IllegalSaslTransition):
        sasl._move(SaslState.AUTHENTICATED)


def test_a_successful_login_names_the_principal_and_admits_every_request() -> None:
    sasl = session()
    login(sasl, "alice", "alice-secret")
    assert sasl.principal == KafkaPrincipal("User", "alice")
    sasl.check(PRODUCE, 10**12)


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0carol\0alice-secret", "Invalid username or password"),
    (b"\0alice", "expected 3 tokens, got 2"),
    (b"\0\0pw", "username not specified"),
    (b"\0alice\0", "password not specified"),
    (b"bob\0alice\0alice-secret", "authorization id that is different"),
])
def test_plain_refusals_carry_kafkas_messages(token: bytes, message: str) -> None:
    sasl = session()
    sasl.handshake("PLAIN")
    with pytest.raises(SaslAuthenticationFailed, match=message):
        sasl.authenticate(token, 0)
    assert not sasl.authenticated


def test_an_unknown_mechanism_is_unsupported() -> None:
    with pytest.raises(UnsupportedSaslMechanism, match="Unsupported SASL mechanism GSSAPI"):
        session().handshake("GSSAPI")


def test_a_session_ends_after_connections_max_reauth_ms_unless_renewed() -> None:
    sasl = session(reauth_ms=1000)
    assert login(sasl, "alice", "alice-secret", now_ms=0) == 1000
    sasl.check(PRODUCE, 1000)
    assert login(sasl, "alice", "alice-secret", now_ms=900) == 1000
    sasl.check(PRODUCE, 1900)
    with pytest.raises(IllegalSaslState, match="expired"):
        sasl.check(PRODUCE, 1901)


def test_re_authentication_keeps_the_principal_and_the_mechanism() -> None:
    sasl = session(reauth_ms=1000)
    login(sasl, "alice", "alice-secret")
    with pytest.raises(SaslAuthenticationFailed, match="Cannot change principals during "
                                                       "re-authentication from User.alice"):
        login(sasl, "bob", "bob-secret", now_ms=10)
    assert sasl.state == SaslState.FAILED
    sasl = session(reauth_ms=1000)
    login(sasl, "alice", "alice-secret")
    sasl.handshake("SCRAM-SHA-512")
    with pytest.raises(SaslAuthenticationFailed, match="not supported for re-authentication"):
        sasl.authenticate(b"n,,n=alice,r=abc", 20)


def test_requests_continue_while_a_client_re_authenticates() -> None:
    sasl = session(reauth_ms=1000)
    login(sasl, "alice", "alice-secret")
    sasl.handshake("PLAIN")
    sasl.check(PRODUCE, 500)


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.binary(max_size=64), min_size=1, max_size=3))
def test_fuzzed_plain_tokens_fail_cleanly(tokens: list[bytes]) -> None:
    sasl = session()
    sasl.handshake("PLAIN")
    for token in tokens:
        try:
            sasl.authenticate(token, 0)
        except (SaslAuthenticationFailed, IllegalSaslState):
            assert not sasl.authenticated
            return
    assert sasl.principal is not None and USERS[sasl.principal.name]


def test_jaas_users_and_client_credentials() -> None:
    assert jaas.plain_users(JAAS) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert jaas.client_credentials(JAAS) == ("admin", "admin-secret")


def test_jaas_values_may_be_bare_quoted_or_escaped_and_modules_repeat() -> None:
    text = ('a.B required k=v q="x y;z" e="say \\"hi\\"";'
            ' org.apache.kafka.common.security.plain.PlainLoginModule optional user_x=1;')
    modules = jaas.parse(text)
    assert modules[0].options == {"k": "v", "q": "x y;z", "e": 'say "hi"'}
    assert modules[1].flag == "optional"


@pytest.mark.parametrize("text", [
    "", "a.B required", "a.B mandatory;", "a.B required k=;", "a.B required k v;",
    'a.B required k="unterminated;',
])
def test_bad_jaas_is_refused(text: str) -> None:
    with pytest.raises(jaas.JaasError):
        jaas.parse(text)
