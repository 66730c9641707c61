"""The leader's checks of a batch before it is appended: every rule for a client's batch, the
structural ones only for the broker's own (coordinators, transaction markers)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from odradek.log.leader_validation import (
    ClientAppend,
    RecordsRefused,
    validate_leader_append,
)
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import ZSTD, InvalidRecordsError
from tests.log_config import make_config

NOW = 1_800_000_000_000
HOUR = 3_600_000
CLIENT = ClientAppend(produce_version=11)


def batch(keys: list[bytes | None], timestamp_ms: int = NOW, compression: int = 0) -> bytes:
    return build_batch([(key, b"v") for key in keys], timestamp_ms=timestamp_ms,
                       compression=compression)


def test_a_client_batch_within_the_rules_is_returned_with_its_header() -> None:
    (info,) = validate_leader_append(batch([b"k", None]), make_config(), ("t", 0), NOW, CLIENT)
    assert info.record_count == 2 and info.base_timestamp == NOW


def test_a_client_sends_one_batch_per_partition() -> None:
    with pytest.raises(InvalidRecordsError) as refused:
        validate_leader_append(batch([b"k"]) + batch([b"k"]), make_config(), ("t", 0), NOW, CLIENT)
    assert refused.value.error_code == ErrorCode.invalid_record
    assert not isinstance(refused.value, RecordsRefused)
    assert "exactly one record batch per partition, got 2" in refused.value.message


def test_zstd_needs_produce_v7() -> None:
    records = batch([b"k"], compression=ZSTD)
    with pytest.raises(InvalidRecordsError) as refused:
        validate_leader_append(records, make_config(), ("t", 0), NOW, ClientAppend(6))
    assert refused.value.error_code == ErrorCode.unsupported_compression_type
    assert validate_leader_append(records, make_config(), ("t", 0), NOW, ClientAppend(7))


def test_a_compacted_topic_names_each_record_without_a_key() -> None:
    with pytest.raises(RecordsRefused) as refused:
        validate_leader_append(batch([b"k", None, b"k", None]),
                               make_config(cleanup_policy="compact"), ("t", 3), NOW, CLIENT)
    assert refused.value.error_code == ErrorCode.invalid_record
    problem = "Compacted topic cannot accept message without key in topic partition t-3"
    assert refused.value.record_errors == [(1, problem), (3, problem)]
    assert "due to 2 record errors in total" in refused.value.message


@pytest.mark.parametrize(("timestamp_ms", "overrides"), [
    (NOW + HOUR + 1, {}),
    (NOW - 10, {"message_timestamp_before_max_ms": 5}),
])
def test_create_times_out_of_bounds_are_refused(timestamp_ms: int,
                                                overrides: dict[str, object]) -> None:
    with pytest.raises(RecordsRefused) as refused:
        validate_leader_append(batch([b"k"], timestamp_ms), make_config(**overrides), ("t", 0),
                               NOW, CLIENT)
    assert refused.value.error_code == ErrorCode.invalid_timestamp
    assert refused.value.record_errors == []


def test_log_append_time_topics_take_any_create_time() -> None:
    config = make_config(message_timestamp_type="LogAppendTime")
    assert validate_leader_append(batch([b"k"], NOW + 10 * HOUR), config, ("t", 0), NOW, CLIENT)


def test_the_brokers_own_batches_get_the_structural_checks_only() -> None:
    """A coordinator's batch: no key rule, no time bounds, no size limit; still its CRC."""
    config = make_config(cleanup_policy="compact", max_message_bytes=10)
    records = batch([None, None], NOW + 10 * HOUR)
    assert validate_leader_append(records, config, ("t", 0), NOW, client=None)
    corrupt = bytearray(records)
    corrupt[-1] ^= 0xFF
    with pytest.raises(InvalidRecordsError) as refused:
        validate_leader_append(corrupt, config, ("t", 0), NOW, client=None)
    assert refused.value.error_code == ErrorCode.corrupt_message
