"""AlterUserScramCredentials on the active controller, as Kafka's ScramControlManager: each
user changes at most once per request, upsertions become UserScramCredentialRecords holding
the salt and the keys derived from the salted password (never the password), deletions of
credentials that do not exist fail. Pure: returns the records and a result per user."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import (
    MetadataRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from odradek.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    credential_from_salted,
)


@dataclass(frozen=True, slots=True)
class Deletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


UserResult = tuple[str, ErrorCode, str | None]
DUPLICATE = "A user credential cannot be altered twice in the same request"


def _check_user(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if ScramMechanism.from_type(mechanism) is None:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def alter_credentials(metadata: ClusterMetadata, deletions: Sequence[Deletion],
                      upsertions: Sequence[Upsertion]
                      ) -> tuple[list[MetadataRecord], list[UserResult]]:
    errors: dict[str, tuple[ErrorCode, str]] = {}
    deleting: dict[str, Deletion] = {}
    upserting: dict[str, Upsertion] = {}
    for deletion in deletions:
        if deletion.name in errors:
            continue
        if deleting.pop(deletion.name, None) is not None:
            errors[deletion.name] = (ErrorCode.duplicate_resource, DUPLICATE)
            continue
        problem = _check_user(deletion.name, deletion.mechanism)
        if problem is None and (deletion.name, deletion.mechanism) not in \
                metadata.scram_credentials:
            problem = (ErrorCode.resource_not_found,
                       "Attempt to delete a user credential that does not exist")
        if problem is not None:
            errors[deletion.name] = problem
        else:
            deleting[deletion.name] = deletion
    for upsertion in upsertions:
        if upsertion.name in errors:
            continue
        if (deleting.pop(upsertion.name, None) is not None
                or upserting.pop(upsertion.name, None) is not None):
            errors[upsertion.name] = (ErrorCode.duplicate_resource, DUPLICATE)
            continue
        problem = _check_user(upsertion.name, upsertion.mechanism)
        if problem is None and upsertion.iterations < MIN_ITERATIONS:
            problem = (ErrorCode.unacceptable_credential, "Too few iterations")
        elif problem is None and upsertion.iterations > MAX_ITERATIONS:
            problem = (ErrorCode.unacceptable_credential, "Too many iterations")
        if problem is not None:
            errors[upsertion.name] = problem
        else:
            upserting[upsertion.name] = upsertion
    records: list[MetadataRecord] = []
    results: list[UserResult] = []
    for deletion in deleting.values():
        records.append(RemoveUserScramCredentialRecord(deletion.name, deletion.mechanism))
        results.append((deletion.name, ErrorCode.none, None))
    for upsertion in upserting.values():
        mechanism = ScramMechanism.from_type(upsertion.mechanism)
        assert mechanism is not None
        records.append(credential_record(upsertion.name, mechanism, upsertion.salted_password,
                                         upsertion.salt, upsertion.iterations))
        results.append((upsertion.name, ErrorCode.none, None))
    results += [(name, code, message) for name, (code, message) in errors.items()]
    return records, results


def credential_record(name: str, mechanism: ScramMechanism, salted_password: bytes,
                      salt: bytes, iterations: int) -> UserScramCredentialRecord:
    """The record of a user's salted password: the salt and the derived keys."""
    stored = credential_from_salted(mechanism, salted_password, salt, iterations)
    return UserScramCredentialRecord(name, mechanism.type_id, _b64(stored.salt),
                                     _b64(stored.stored_key), _b64(stored.server_key),
                                     stored.iterations)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
