"""`odradek configs` for SCRAM users, its pure parts: kafka-configs' credential syntax and
checks, the AlterUserScramCredentials bodies (a salted password a server accepts the
password against), and the described lines."""

from __future__ import annotations

import pytest

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.quota_entities import QuotaEntity, check_config_names
from odradek.cli.tools.scram_users import (
    Described,
    ScramChanges,
    Upsertion,
    alterations,
    describe_lines,
    parse_credential,
    scram_changes,
)
from odradek.security.scram import (
    ScramClient,
    ScramMechanism,
    ScramServer,
    credential_from_salted,
)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
ALICE = QuotaEntity((("users", "alice"),))


@pytest.mark.parametrize(("text", "expected"), [
    ("iterations=8192,password=alice-secret", Upsertion(SHA256, 8192, "alice-secret")),
    ("password=alice-secret", Upsertion(SHA256, 4096, "alice-secret")),
    ("iterations=-1,password=p=w,d", Upsertion(SHA256, 4096, "p=w,d")),
    ("iterations=16384,password=", Upsertion(SHA256, 16384, "")),
])
def test_credentials_as_kafka_configs_reads_them(text: str, expected: Upsertion) -> None:
    assert parse_credential(SHA256, text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("iterations=4095,password=p", "Iterations 4095 is less than the minimum 4096 required "
                                   "for SCRAM-SHA-256"),
    ("iterations=16385,password=p", "Too many iterations: 16385 is more than the maximum "
                                    "16384 allowed for SCRAM-SHA-256"),
    ("iterations=,password=p", "Invalid credential property SCRAM-SHA-256=iterations=,"),
    ("password", "Invalid credential property SCRAM-SHA-256=password"),
    ("secret=p", "Invalid credential property"),
    ("password=p,iterations=8192", None),
])
def test_bad_credentials_get_kafka_configs_messages(text: str, message: str | None) -> None:
    if message is None:  # kafka-configs reads it all as the password
        assert parse_credential(SHA256, text).password == "p,iterations=8192"
        return
    with pytest.raises(ToolError, match=message):
        parse_credential(SHA256, text)


def test_scram_and_quota_configs_of_users() -> None:
    changes = scram_changes(ALICE, {"SCRAM-SHA-512": "password=s"}, ["SCRAM-SHA-256"])
    assert changes == ScramChanges("alice", (Upsertion(SHA512, 4096, "s"),), (SHA256,))
    assert scram_changes(ALICE, {"producer_byte_rate": "1"}, []) is None
    with pytest.raises(ToolError, match="Cannot alter both quota and SCRAM credential"):
        scram_changes(ALICE, {"SCRAM-SHA-512": "password=s"}, ["producer_byte_rate"])
    with pytest.raises(ToolError, match="The use of --entity-default or --user-defaults"):
        scram_changes(QuotaEntity((("users", ""),)), {"SCRAM-SHA-512": "password=s"}, [])
    with pytest.raises(ToolError, match="Only quota configs can be deleted for 'clients'"):
        check_config_names(QuotaEntity((("users", "a"), ("clients", "c"))), {},
                           ["SCRAM-SHA-256"])
    with pytest.raises(ToolError, match="Unexpected config names: password"):
        check_config_names(ALICE, {"SCRAM-SHA-256": "iterations=4096", "password": "x"}, [])


def test_each_mechanism_goes_in_its_own_request_with_a_password_the_server_accepts() -> None:
    changes = ScramChanges("alice", (Upsertion(SHA256, 8192, "secret"),
                                     Upsertion(SHA512, 4096, "secret")), (SHA256,))
    bodies = alterations(changes)
    assert [(m, len(b["deletions"]), len(b["upsertions"])) for m, b in bodies] == [
        (SHA256, 1, 0), (SHA256, 0, 1), (SHA512, 0, 1)]
    (upsertion,) = bodies[1][1]["upsertions"]
    assert upsertion["iterations"] == 8192 and upsertion["name"] == "alice"
    assert b"secret" not in upsertion["salted_password"]
    assert bodies[1][1]["upsertions"][0]["salt"] != bodies[2][1]["upsertions"][0]["salt"]
    stored = credential_from_salted(SHA256, upsertion["salted_password"], upsertion["salt"],
                                    upsertion["iterations"])
    server = ScramServer(SHA256, lambda user, mechanism: stored, "server-nonce")
    client = ScramClient(SHA256, "alice", "secret", "client-nonce")
    final = server.evaluate(client.final_message(server.evaluate(client.first_message())))
    client.verify(final)
    assert server.complete and server.authorization_id == "alice"


def test_described_credentials_as_kafka_configs_prints_them() -> None:
    assert describe_lines([
        Described("alice", (("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096))),
        Described("bob", (), "UNKNOWN_SERVER_ERROR: boom")]) == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096",
        "Error retrieving SCRAM credential configs for user-principal 'bob': "
        "UNKNOWN_SERVER_ERROR: boom"]
