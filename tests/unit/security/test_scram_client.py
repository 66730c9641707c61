"""Our SCRAM client against our SCRAM server (both pure): a right password completes on both
sides, a wrong one is refused by the server, a forged server signature by the client."""

from __future__ import annotations

import os

import pytest

from odradek.security.scram import (
    ScramClient,
    ScramError,
    ScramMechanism,
    ScramServer,
    credential,
)


def exchange(mechanism: ScramMechanism, password: str, tamper: bool = False) -> ScramServer:
    stored = credential(mechanism, "right", os.urandom(16), 4096)
    server = ScramServer(mechanism, lambda user, _: stored if user == "a,b=c" else None, "srv")
    client = ScramClient(mechanism, "a,b=c", password, "cli")
    final = client.final_message(server.evaluate(client.first_message()))
    server_final = server.evaluate(final)
    client.verify(server_final[:-4] + b"AAA=" if tamper else server_final)
    return server


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_a_right_password_completes_on_both_sides(mechanism: ScramMechanism) -> None:
    server = exchange(mechanism, "right")
    assert server.complete and server.authorization_id == "a,b=c"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_a_wrong_password_is_refused_by_the_server(mechanism: ScramMechanism) -> None:
    with pytest.raises(ScramError, match="Invalid client credentials"):
        exchange(mechanism, "wrong")


def test_a_forged_server_signature_is_refused_by_the_client() -> None:
    with pytest.raises(ScramError, match="server signature"):
        exchange(ScramMechanism.SCRAM_SHA_256, "right", tamper=True)


@pytest.mark.parametrize("server_first", [b"r=xyz,s=AAAA,i=4096", b"r=cli1,s=AAAA,i=10",
                                          b"garbage", b"\xff"])
def test_a_bad_server_first_message_is_refused(server_first: bytes) -> None:
    client = ScramClient(ScramMechanism.SCRAM_SHA_512, "u", "p", "cli")
    client.first_message()
    with pytest.raises(ScramError):
        client.final_message(server_first)


def test_a_server_error_is_reported() -> None:
    client = ScramClient(ScramMechanism.SCRAM_SHA_512, "u", "p", "cli")
    client.final_message(b"r=cli1,s=AAAA,i=4096")
    with pytest.raises(ScramError, match="unknown-user"):
        client.verify(b"e=unknown-user")
