"""kafka-configs for the SCRAM credentials of `--entity-type users` (KIP-554):
`SCRAM-SHA-256=[iterations=8192,password=...]` added with AlterUserScramCredentials (the salt
and the salted password computed here, so the password never leaves this process), removed
by mechanism name, and described (mechanism and iterations, never a secret) with
DescribeUserScramCredentials, with kafka-configs' checks, lines and messages.

One difference: kafka-configs sends every SCRAM change of a command in one request, which a
KRaft controller refuses when it changes one user twice (both mechanisms of Kafka's own
documented example); this tool sends one request per mechanism, so that example works."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.quota_entities import SCRAM_MECHANISMS, QuotaEntity
from odradek.cli.tools.wire import WireClient, check
from odradek.net.kafka_client.request_versions import (
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
)
from odradek.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    salted_password,
)

DEFAULT_ITERATIONS = 4096
"""kafka-configs' iterations when a credential names none (or -1)."""
SALT_BYTES = 32
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)


@dataclass(frozen=True)
class Upsertion:
    mechanism: ScramMechanism
    iterations: int
    password: str


@dataclass(frozen=True)
class ScramChanges:
    """One user's credentials to add (or replace) and mechanisms to remove."""

    user: str
    upsertions: tuple[Upsertion, ...]
    deletions: tuple[ScramMechanism, ...]


def is_scram(name: str) -> bool:
    return name in SCRAM_MECHANISMS


def parse_credential(mechanism: ScramMechanism, text: str) -> Upsertion:
    """`[iterations=N,]password=P` as kafka-configs reads it."""
    match = _CREDENTIAL.fullmatch(text)
    if match is None or match[1] == "":
        raise ToolError(f"Invalid credential property {mechanism.mechanism_name}={text}")
    iterations = DEFAULT_ITERATIONS if match[1] in (None, "-1") else int(match[1])
    if iterations < MIN_ITERATIONS:
        raise ToolError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} "
                        f"required for {mechanism.mechanism_name}")
    if iterations > MAX_ITERATIONS:
        # the broker refuses it (UNACCEPTABLE_CREDENTIAL) after we would have spent the
        # iterations hashing the password
        raise ToolError(f"Too many iterations: {iterations} is more than the maximum "
                        f"{MAX_ITERATIONS} allowed for {mechanism.mechanism_name}")
    return Upsertion(mechanism, iterations, match[2])


def scram_changes(entity: QuotaEntity, additions: Mapping[str, str],
                  deletions: Sequence[str]) -> ScramChanges | None:
    """The SCRAM part of `--add-config`/`--delete-config` for a user (None when there is
    none), after the names were checked (`quota_entities.check_config_names`): kafka-configs
    refuses SCRAM for the default user and together with quota configs."""
    adding = {name: value for name, value in additions.items() if is_scram(name)}
    removing = [name for name in deletions if is_scram(name)]
    if not adding and not removing:
        return None
    ((_, user),) = entity.parts
    if not user:
        raise ToolError("The use of --entity-default or --user-defaults is not allowed with "
                        "User SCRAM Credentials using --bootstrap-server.")
    if len(adding) != len(additions) or len(removing) != len(deletions):
        raise ToolError("Cannot alter both quota and SCRAM credential configs simultaneously "
                        "for 'users' using --bootstrap-server.")
    return ScramChanges(
        user,
        tuple(parse_credential(_mechanism(name), value) for name, value in adding.items()),
        tuple(_mechanism(name) for name in removing))


def _mechanism(name: str) -> ScramMechanism:
    mechanism = ScramMechanism.from_name(name)
    assert mechanism is not None, name
    return mechanism


def alterations(changes: ScramChanges, salt: bytes | None = None
                ) -> list[tuple[ScramMechanism, dict[str, Any]]]:
    """AlterUserScramCredentials request bodies, one per mechanism (deletions first): a
    controller refuses a request that changes one user twice (DUPLICATE_RESOURCE, as Kafka's
    ScramControlManager does), so two mechanisms go in two requests. Each upsertion gets a
    new random salt (or `salt`) and the password salted with it."""
    bodies: list[tuple[ScramMechanism, dict[str, Any]]] = [
        (mechanism, {"deletions": [{"name": changes.user, "mechanism": mechanism.type_id}],
                     "upsertions": []})
        for mechanism in changes.deletions]
    for upsertion in changes.upsertions:
        chosen = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
        bodies.append((upsertion.mechanism, {"deletions": [], "upsertions": [{
            "name": changes.user, "mechanism": upsertion.mechanism.type_id,
            "iterations": upsertion.iterations, "salt": chosen,
            "salted_password": salted_password(upsertion.mechanism, upsertion.password,
                                               chosen, upsertion.iterations)}]}))
    return bodies


async def alter_credentials(client: WireClient, changes: ScramChanges) -> None:
    """The changes in order; the first refused one stops the rest (those before it stay)."""
    for mechanism, body in alterations(changes):
        response = await client.send(ALTER_USER_SCRAM_CREDENTIALS, body)
        for result in response.results:
            check(result.error_code, f"altering the {mechanism.mechanism_name} credential of "
                                     f"user {result.user}", result.error_message)


@dataclass(frozen=True)
class Described:
    user: str
    credentials: tuple[tuple[str, int], ...]
    """(mechanism name, iterations)"""
    error: str | None = None


async def describe_credentials(client: WireClient, user: str | None) -> list[Described]:
    """One user's credentials, or every user's (None). A user without any is left out, as
    Kafka's admin client leaves out RESOURCE_NOT_FOUND."""
    response = await client.send(DESCRIBE_USER_SCRAM_CREDENTIALS, {
        "users": None if user is None else [{"name": user}]})
    check(response.error_code, "describing SCRAM credentials", response.error_message)
    described = []
    for result in response.results:
        if result.error_code == ErrorCode.resource_not_found:
            continue
        if result.error_code != ErrorCode.none:
            error = f"{ErrorCode(result.error_code).name.upper()}: {result.error_message or ''}"
            described.append(Described(result.user, (), error.rstrip(": ")))
            continue
        described.append(Described(result.user, tuple(
            (_mechanism_name(info.mechanism), int(info.iterations))
            for info in result.credential_infos)))
    return described


def _mechanism_name(type_id: int) -> str:
    mechanism = ScramMechanism.from_type(int(type_id))
    return mechanism.mechanism_name if mechanism is not None else "UNKNOWN"


def describe_lines(described: Sequence[Described]) -> list[str]:
    """`SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192,
    ...`, as kafka-configs prints them."""
    lines = []
    for user in described:
        if user.error is not None:
            lines.append(f"Error retrieving SCRAM credential configs for user-principal "
                         f"'{user.user}': {user.error}")
            continue
        text = ", ".join(f"{name}=iterations={iterations}"
                         for name, iterations in user.credentials)
        lines.append(f"SCRAM credential configs for user-principal '{user.user}' are {text}")
    return lines


def describe_json(described: Sequence[Described]) -> list[dict[str, Any]]:
    return [{"entity": {"user": user.user},
             "scram_credentials": [{"mechanism": name, "iterations": iterations}
                                   for name, iterations in user.credentials],
             **({"error": user.error} if user.error is not None else {})}
            for user in described]
