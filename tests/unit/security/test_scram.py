"""SCRAM: RFC 7677's example exchange, a round trip with kafka-python's independent client
(SCRAM-SHA-256 and -512), every refusal, and fuzzed messages that may only fail cleanly."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from odradek.security.sasl import SaslAuthenticationFailed
from odradek.security.scram import (
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramServer,
    credential,
    credential_from_salted,
    salted_password,
    sasl_name,
    username,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_server(stored: ScramCredential | None = None) -> ScramServer:
    found = stored or credential(SHA256, "pencil", RFC_SALT, 4096)
    return ScramServer(SHA256, lambda user, mechanism: found if user == "user" else None,
                       RFC_SERVER_NONCE)


def test_rfc_7677_example_exchange() -> None:
    server = rfc_server()
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


def test_the_stored_form_from_a_salted_password_is_the_one_from_the_password() -> None:
    salted = salted_password(SHA512, "secret", b"salt", 4096)
    assert credential_from_salted(SHA512, salted, b"salt", 4096) == \
        credential(SHA512, "secret", b"salt", 4096)


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_round_trip_with_kafka_python_client(mechanism: ScramMechanism) -> None:
    stored = credential(mechanism, "s3cret", b"0123456789abcdef", 4096)
    server = ScramServer(mechanism, lambda user, m: stored if user == "alice" else None, "xyz")
    client = ScramClient("alice", "s3cret", mechanism.mechanism_name)
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))
    assert server.complete and server.authorization_id == "alice"


def test_wrong_password_is_refused() -> None:
    server = rfc_server(credential(SHA256, "not-pencil", RFC_SALT, 4096))
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="Invalid client credentials"):
        server.evaluate(RFC_CLIENT_FINAL)
    assert not server.complete


@pytest.mark.parametrize(("first", "final", "error"), [
    (b"n,,n=nobody,r=abc", None, "Invalid user credentials"),
    (b"y,,n=user,r=abc", None, "client first message format"),
    (b"n,,n=us=er,r=abc", None, "client first message format"),
    (RFC_CLIENT_FIRST, RFC_CLIENT_FINAL.replace(b"%hvYD", b"%XXYD"), "nonce"),
    (RFC_CLIENT_FIRST, RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "channel binding"),
    (RFC_CLIENT_FIRST, RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=AAAA"), "credentials"),
    (RFC_CLIENT_FIRST, b"c=biws,r=x", "client final message format"),
])
def test_malformed_or_wrong_messages_fail(first: bytes, final: bytes | None,
                                          error: str) -> None:
    server = rfc_server()
    with pytest.raises(ScramError, match=error):
        server.evaluate(first)
        assert final is not None
        server.evaluate(final)
    with pytest.raises(ScramError, match="Unexpected challenge"):
        server.evaluate(RFC_CLIENT_FINAL)


def test_an_authorization_id_other_than_the_user_is_refused_with_kafkas_message() -> None:
    with pytest.raises(SaslAuthenticationFailed, match="authorization id that is different"):
        rfc_server().evaluate(b"n,a=admin,n=user,r=abc")


def test_too_few_iterations_are_refused() -> None:
    with pytest.raises(ScramError, match="Iterations 1000 is less than the minimum 4096"):
        rfc_server(credential(SHA256, "pencil", RFC_SALT, 1000)).evaluate(RFC_CLIENT_FIRST)


@pytest.mark.parametrize(("user", "name"), [("a,b", "a=2Cb"), ("a=b", "a=3Db"), ("ab", "ab")])
def test_usernames_escape_as_sasl_names(user: str, name: str) -> None:
    assert sasl_name(user) == name
    assert username(name) == user


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=200), final=st.binary(max_size=200))
def test_fuzzed_messages_fail_cleanly(first: bytes, final: bytes) -> None:
    """Any bytes either pass as a well-formed message or raise the mechanism's errors."""
    server = rfc_server()
    try:
        server.evaluate(first)
        server.evaluate(final)
    except (ScramError, SaslAuthenticationFailed):
        assert not server.complete


@settings(max_examples=200, deadline=None)
@given(nonce=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e,
                                            blacklist_characters=","), min_size=1, max_size=40),
       proof=st.binary(min_size=32, max_size=32))
def test_fuzzed_well_formed_messages_never_authenticate_without_the_key(
        nonce: str, proof: bytes) -> None:
    server = rfc_server()
    server.evaluate(f"n,,n=user,r={nonce}".encode())
    final = f"c=biws,r={nonce}{RFC_SERVER_NONCE},p={base64.b64encode(proof).decode()}"
    with pytest.raises(ScramError):
        server.evaluate(final.encode())
