"""What a partition's leader checks of the batches it is asked to append, before it assigns
their offsets: Kafka's UnifiedLog.analyzeAndValidateRecords and LogValidator. Every leader
append passes through `validate_leader_append`: a client's (a Produce request's batch) with
every rule, and the broker's own writers' (group, share and transaction coordinators,
transaction markers) with the structural ones, as Kafka's origins other than CLIENT. Records
are walked where a rule needs it, never decoded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from odradek.log.config import CREATE_TIME, LogConfig
from odradek.protocol.record_codec import keyless_records
from odradek.protocol.records import (
    ZSTD,
    BatchInfo,
    Buffer,
    InvalidRecordsError,
    validate_batches,
)

FIRST_ZSTD_VERSION = 7
"""Produce v7 is the first whose batches may be zstd-compressed."""


@dataclass(frozen=True, slots=True)
class ClientAppend:
    """A client's batch, from a Produce request of `produce_version`."""

    produce_version: int


class RecordsRefused(InvalidRecordsError):
    """Records whose contents the log refuses (not their framing): answered with the log's
    start offset, and with the records at fault (KIP-467: batch index, message)."""

    def __init__(self, error_code: ErrorCode, message: str,
                 record_errors: Sequence[tuple[int, str]] = ()) -> None:
        super().__init__(error_code, message)
        self.record_errors = list(record_errors)


def validate_leader_append(records: Buffer, config: LogConfig, partition: tuple[str, int],
                           now_ms: int, client: ClientAppend | None) -> list[BatchInfo]:
    """The batches of `records` for the leader of `partition` (topic, index) to append;
    InvalidRecordsError (RecordsRefused for contents) with Kafka's error code for the first
    rule broken. `client` None: the broker's own batch."""
    if client is None:
        return validate_batches(records, len(records), from_client=False)
    batches = validate_batches(records, config.max_message_bytes)
    _check_request_rules(batches, client.produce_version)
    if config.compact_enabled:
        _check_keys(records, batches[0], partition)
    _check_timestamps(batches, config, now_ms)
    return batches


def _check_request_rules(batches: list[BatchInfo], version: int) -> None:
    """One batch per partition (v3 and later: all this broker serves), zstd only from v7."""
    if len(batches) != 1:
        raise InvalidRecordsError(ErrorCode.invalid_record, (
            "Produce requests with version 3 and above must contain exactly one record batch "
            f"per partition, got {len(batches)}"))
    if batches[0].compression == ZSTD and version < FIRST_ZSTD_VERSION:
        raise InvalidRecordsError(ErrorCode.unsupported_compression_type, (
            f"zstd-compressed batches need Produce v{FIRST_ZSTD_VERSION} or later"))


def _check_keys(records: Buffer, batch: BatchInfo, partition: tuple[str, int]) -> None:
    """Compacted topics refuse records without a key, naming each of them (KIP-467); only
    here are a client's records walked on the produce path."""
    with memoryview(records) as view:
        keyless = keyless_records(view[batch.position:batch.end])
    if not keyless:
        return
    problem = ("Compacted topic cannot accept message without key in topic partition "
               f"{partition[0]}-{partition[1]}")
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{problem}')" for i in keyless[:3])
    raise RecordsRefused(ErrorCode.invalid_record, (
        f"One or more records have been rejected due to {len(keyless)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"),
        [(i, problem) for i in keyless])


def _check_timestamps(batches: list[BatchInfo], config: LogConfig, now_ms: int) -> None:
    """Kafka's CreateTime bounds: message.timestamp.before.max.ms and .after.max.ms."""
    if config.message_timestamp_type != CREATE_TIME:
        return
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    for batch in batches:
        if batch.max_timestamp - now_ms > after or 0 <= batch.base_timestamp < now_ms - before:
            raise RecordsRefused(ErrorCode.invalid_timestamp, (
                f"Timestamp of a batch ({batch.base_timestamp}..{batch.max_timestamp}) is out of "
                f"the range allowed by message.timestamp.before.max.ms/after.max.ms"))
