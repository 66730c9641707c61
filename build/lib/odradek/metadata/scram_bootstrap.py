"""`--add-scram` of `odradek storage format` (KIP-900), with the syntax and errors of Kafka's
ScramParser: `MECHANISM=[name=N,password=P]`, or `salt` (base64) with `saltedpassword`
(base64) instead of `password`, and `iterations` (default 4096). Each becomes a
UserScramCredentialRecord holding the salt and the derived keys, never the password. Pure:
the random salt comes from the caller."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from odradek.metadata.records import UserScramCredentialRecord
from odradek.metadata.scram_control import credential_record
from odradek.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, salted_password

DEFAULT_ITERATIONS = 4096


class FormatterError(ValueError):
    """Kafka's FormatterException: the message is what the tool prints."""


def parse_add_scram(argument: str, random_salt: Callable[[], bytes]
                    ) -> UserScramCredentialRecord:
    """One `--add-scram` argument as its record; raises FormatterError."""
    mechanism, config = _per_mechanism(argument)
    components: dict[str, str] = {}
    for component in config.split(","):
        key, value = split_component(component)
        components[key] = value
    name = components.pop("name", None)
    if name is None:
        raise FormatterError("You must supply 'name' to add-scram")
    salt_text = components.pop("salt", None)
    salt = None if salt_text is None else _base64(salt_text, "salt")
    iterations_text = components.pop("iterations", None)
    try:
        iterations = DEFAULT_ITERATIONS if iterations_text is None else int(iterations_text)
    except ValueError:
        raise FormatterError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    salted = None
    if password is None:
        if salted_text is None:
            raise FormatterError("You must supply one of 'password' or 'saltedpassword' to "
                                 "add-scram")
        if salt is None:
            raise FormatterError("You must supply 'salt' with 'saltedpassword' to add-scram")
        salted = _base64(salted_text, "saltedPassword")
    if components:
        raise FormatterError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise FormatterError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for "
                             f"add-scram using {mechanism.name}")
    if iterations > MAX_ITERATIONS:
        raise FormatterError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for "
                             f"add-scram using {mechanism.name}")
    salt = random_salt() if salt is None else salt
    if salted is None:
        assert password is not None
        salted = salted_password(mechanism, password, salt, iterations)
    return credential_record(name, mechanism, salted, salt, iterations)


def _per_mechanism(argument: str) -> tuple[ScramMechanism, str]:
    text = argument.strip()
    mechanism_name, equals, config = text.partition("=")
    if not equals:
        raise FormatterError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = ScramMechanism.from_name(mechanism_name)
    if mechanism is None:
        raise FormatterError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise FormatterError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise FormatterError("Expected configuration string to end with ]")
    return mechanism, config[1:-1]


def split_component(component: str) -> tuple[str, str]:
    """`key=value`, the value's surrounding double quotes removed."""
    key, equals, value = component.partition("=")
    if not equals:
        raise FormatterError(f"No equals sign found in SCRAM component: {component}")
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        value = value[1:-1]
    return key, value


def _base64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise FormatterError(f"Failed to decode given {what}: {text}") from None
