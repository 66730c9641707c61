"""AlterUserScramCredentials on the controller (Kafka's ScramControlManager rules), and the
credential records in the metadata image and its snapshot."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    decode_batch,
    encode_batch,
)
from odradek.metadata.scram_control import Deletion, Upsertion, alter_credentials
from odradek.security.scram import ScramMechanism, credential, salted_password, stored_credential

SHA512 = ScramMechanism.SCRAM_SHA_512


def upsertion(name: str, password: str = "pw", iterations: int = 4096,
              mechanism: int = 2) -> Upsertion:
    salted = salted_password(SHA512, password, b"salt", max(iterations, 1))
    return Upsertion(name, mechanism, iterations, b"salt", salted)


def applied(metadata: ClusterMetadata, deletions: list[Deletion],
            upsertions: list[Upsertion]) -> dict[str, ErrorCode]:
    records, results = alter_credentials(metadata, deletions, upsertions)
    for record in decode_batch(encode_batch(records)):
        metadata.replay(record)
    return {user: code for user, code, _ in results}


def test_upsert_stores_keys_not_the_password_and_delete_removes_them() -> None:
    metadata = ClusterMetadata()
    assert applied(metadata, [], [upsertion("alice", "secret")]) == {"alice": ErrorCode.none}
    record = metadata.scram_credentials[("alice", 2)]
    assert "secret" not in repr(record)
    assert stored_credential(record) == credential(SHA512, "secret", b"salt", 4096)
    rebuilt = ClusterMetadata()
    for snapshot_record in metadata.to_records():
        rebuilt.replay(snapshot_record)
    assert rebuilt.scram_credentials == metadata.scram_credentials
    assert applied(metadata, [Deletion("alice", 2)], []) == {"alice": ErrorCode.none}
    assert metadata.scram_credentials == {}


@pytest.mark.parametrize(("deletions", "upsertions", "user", "code"), [
    ([], [upsertion("")], "", ErrorCode.unacceptable_credential),
    ([], [upsertion("a", mechanism=9)], "a", ErrorCode.unsupported_sasl_mechanism),
    ([], [upsertion("a", iterations=4095)], "a", ErrorCode.unacceptable_credential),
    ([], [upsertion("a", iterations=16385)], "a", ErrorCode.unacceptable_credential),
    ([Deletion("ghost", 1)], [], "ghost", ErrorCode.resource_not_found),
    ([], [upsertion("a"), upsertion("a", mechanism=1)], "a", ErrorCode.duplicate_resource),
    ([Deletion("alice", 2)], [upsertion("alice")], "alice", ErrorCode.duplicate_resource),
])
def test_refusals(deletions: list[Deletion], upsertions: list[Upsertion], user: str,
                  code: ErrorCode) -> None:
    metadata = ClusterMetadata()
    applied(metadata, [], [upsertion("alice")])
    before = dict(metadata.scram_credentials)
    assert applied(metadata, deletions, upsertions)[user] == code
    assert metadata.scram_credentials == before


def test_records_round_trip_through_the_log_encoding() -> None:
    records = [UserScramCredentialRecord("a", 1, "c2FsdA==", "AA==", "AQ==", 4096),
               RemoveUserScramCredentialRecord("a", 1)]
    assert decode_batch(encode_batch(records)) == records
