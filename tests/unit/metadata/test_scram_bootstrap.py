"""`storage format --add-scram`: Kafka's ScramParser syntax, records and error messages (the
cases of Kafka's ScramParserTest)."""

from __future__ import annotations

import base64

import pytest

from odradek.metadata.scram_bootstrap import FormatterError, parse_add_scram, split_component
from odradek.security.scram import ScramMechanism, credential, salted_password, stored_credential

SALT = bytes([49, 108, 118, 52, 112, 100, 110, 119, 52, 102, 119, 113, 55, 110, 111, 116, 99,
              120, 109, 48, 121, 121, 49, 107, 55, 113])
SALT_B64 = "MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E="


def fixed_salt() -> bytes:
    return SALT


def parse(argument: str) -> object:
    return parse_add_scram(argument, fixed_salt)


@pytest.mark.parametrize(("component", "expected"), [
    ("name=foo", ("name", "foo")), ('name="foo"', ("name", "foo")), ("name=", ("name", "")),
    ('name=""', ("name", ""))])
def test_components_split_at_the_first_equals_sign_and_lose_their_quotes(
        component: str, expected: tuple[str, str]) -> None:
    assert split_component(component) == expected


def test_a_password_becomes_the_salt_and_keys_never_the_password() -> None:
    record = parse_add_scram("SCRAM-SHA-512=[name=broker,password=broker-secret]", fixed_salt)
    assert (record.name, record.mechanism, record.iterations) == ("broker", 2, 4096)
    assert base64.b64decode(record.salt) == SALT
    assert stored_credential(record) == credential(ScramMechanism.SCRAM_SHA_512,
                                                   "broker-secret", SALT, 4096)
    assert "broker-secret" not in repr(record)


def test_salt_iterations_and_a_salted_password_are_taken_as_given() -> None:
    salted = salted_password(ScramMechanism.SCRAM_SHA_256, "my pass", SALT, 8192)
    record = parse_add_scram(
        f'SCRAM-SHA-256=[name=alice,iterations=8192,salt="{SALT_B64}",'
        f'saltedpassword="{base64.b64encode(salted).decode()}"]', lambda: b"unused")
    assert (record.name, record.mechanism, record.iterations) == ("alice", 1, 8192)
    assert stored_credential(record) == credential(ScramMechanism.SCRAM_SHA_256, "my pass",
                                                   SALT, 8192)


def test_without_a_salt_the_salt_is_drawn() -> None:
    draws = iter([b"first-salt", b"second-salt"])
    first = parse_add_scram("SCRAM-SHA-256=[name=bob,password=p]", lambda: next(draws))
    second = parse_add_scram("SCRAM-SHA-256=[name=bob,password=p]", lambda: next(draws))
    assert first.salt != second.salt


@pytest.mark.parametrize(("argument", "message"), [
    ("SCRAM-SHA-512", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-512'"),
    ("SCRAM-SHA-UNSUPPORTED=[name=scram-admin,password=scram-user-secret]",
     "The add-scram mechanism SCRAM-SHA-UNSUPPORTED is not supported."),
    ("SCRAM-SHA-256=name=scram-admin,password=scram-user-secret",
     "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=scram-admin,password=scram-user-secret",
     "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[password=mypass]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=bar]",
     "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=bob,password=mypass,unknown=something,unknown2=somethingelse]",
     "Unknown SCRAM configurations: unknown, unknown2"),
    ('SCRAM-SHA-256=[name=alice,saltedpassword="mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE="]',
     "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=bob,password=p,iterations=many]",
     "Failed to parse iterations count: many"),
    ("SCRAM-SHA-256=[name=bob,password=p,iterations=4095]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256"),
    ("SCRAM-SHA-512=[name=bob,password=p,iterations=16385]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512"),
    ("SCRAM-SHA-256=[name=bob,password=p,salt=%%%]", "Failed to decode given salt: %%%"),
    ("SCRAM-SHA-256=[name=bob,password]", "No equals sign found in SCRAM component: password"),
])
def test_bad_arguments_get_kafkas_messages(argument: str, message: str) -> None:
    with pytest.raises(FormatterError) as raised:
        parse(argument)
    assert str(raised.value) == message
