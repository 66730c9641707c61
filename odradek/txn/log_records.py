"""The transaction coordinator's records in `__transaction_state`, laid out by the schema
generated from Kafka's TransactionLog*.json (`log_schema.py`), version-prefixed as in
MessageUtil.

A key is int16 version 0 and TransactionLogKey v0; a value is an int16 version and
TransactionLogValue; a null value is a tombstone (the transactional id expired). Kafka 4
writes version 1 (flexible) whenever the `transaction.version` feature is 1 or more, which a
new cluster finalizes at 2: so do we. An Empty transaction's partition array is null, and a
reader ignores an Empty record's partitions, as Kafka's does.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from odradek.protocol.coordinator_serde import RecordFormatError
from odradek.protocol.message_schema import (
    by_record_type,
    read_key,
    read_versioned,
    write_key,
    write_versioned,
)
from odradek.txn.log_schema import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE

WRITTEN_VALUE_VERSION = 1
_KEYS = by_record_type(TRANSACTION_LOG_KEY)


class TxnRecordFormatError(RecordFormatError):
    """Bytes that are not a `__transaction_state` record Kafka could have written."""


class TxnState(enum.IntEnum):
    """A transaction's state, numbered as TransactionStatus in the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report ("PrepareCommit")."""
        return "".join(part.capitalize() for part in self.name.split("_"))


_T = TxnState
TRANSITIONS: Mapping[TxnState, frozenset[TxnState]] = MappingProxyType({
    _T.EMPTY: frozenset({_T.EMPTY, _T.ONGOING, _T.PREPARE_ABORT, _T.DEAD}),
    _T.ONGOING: frozenset({_T.ONGOING, _T.PREPARE_COMMIT, _T.PREPARE_ABORT,
                           _T.PREPARE_EPOCH_FENCE}),
    _T.PREPARE_COMMIT: frozenset({_T.COMPLETE_COMMIT}),
    _T.PREPARE_ABORT: frozenset({_T.COMPLETE_ABORT}),
    _T.COMPLETE_COMMIT: frozenset({_T.EMPTY, _T.ONGOING, _T.PREPARE_ABORT, _T.DEAD}),
    _T.COMPLETE_ABORT: frozenset({_T.EMPTY, _T.ONGOING, _T.PREPARE_ABORT, _T.DEAD}),
    _T.PREPARE_EPOCH_FENCE: frozenset({_T.PREPARE_ABORT}),
    _T.DEAD: frozenset(),
})
"""State -> the states it may move to: Kafka 4.3's TransactionState.validPreviousStates, read
forwards. A new transactional id starts as EMPTY; expiry (a tombstone) is DEAD."""


class IllegalTxnTransition(Exception):
    """A move the table does not list: a coordinator bug."""


def check_transition(current: TxnState, new: TxnState) -> None:
    if new not in TRANSITIONS[current]:
        raise IllegalTxnTransition(f"a transaction cannot go from {current.kafka_name} to "
                                   f"{new.kafka_name}")


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """One transactional id's metadata, as the log holds it."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: tuple[tuple[str, int], ...]
    """(topic, partition), sorted; empty unless a transaction is under way."""
    last_update_ms: int
    start_ms: int = -1
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def encode(transactional_id: str, value: TransactionLogValue | None) -> tuple[bytes, bytes | None]:
    """The key and value bytes of this record (None value: a tombstone), value version 1."""
    if value is not None and value.state == TxnState.EMPTY and value.partitions:
        raise ValueError(f"an Empty transaction has no partitions: {value!r}")
    key = write_key(TRANSACTION_LOG_KEY, {"transactional_id": transactional_id})
    if value is None:
        return key, None
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(set(value.partitions)):
        topics.setdefault(topic, []).append(partition)
    return key, write_versioned(TRANSACTION_LOG_VALUE, WRITTEN_VALUE_VERSION, {
        "producer_id": value.producer_id,
        "previous_producer_id": value.previous_producer_id,
        "next_producer_id": value.next_producer_id,
        "producer_epoch": value.producer_epoch,
        "transaction_timeout_ms": value.timeout_ms,
        "transaction_status": value.state,
        "transaction_partitions": None if value.state == TxnState.EMPTY else tuple(
            {"topic": topic, "partition_ids": ids} for topic, ids in topics.items()),
        "transaction_last_update_timestamp_ms": value.last_update_ms,
        "transaction_start_timestamp_ms": value.start_ms,
        "client_transaction_version": value.client_transaction_version,
    })


def decode(key: bytes, value: bytes | None) -> tuple[str, TransactionLogValue | None]:
    """The transactional id and metadata (None: tombstone) in these bytes.

    Raises TxnRecordFormatError for bytes that do not hold exactly one key (or value) of a
    version Kafka writes: truncated, unknown version or state, trailing bytes."""
    try:
        _, fields = read_key(_KEYS, key)
        return fields["transactional_id"], None if value is None else _decode_value(value)
    except RecordFormatError as exc:
        raise TxnRecordFormatError(str(exc)) from None


def _decode_value(data: bytes) -> TransactionLogValue:
    _, fields = read_versioned(TRANSACTION_LOG_VALUE, data)
    status = fields["transaction_status"]
    try:
        state = TxnState(status)
    except ValueError:
        raise TxnRecordFormatError(f"unknown transaction status {status}") from None
    partitions = tuple(sorted({(topic["topic"], partition)
                               for topic in fields["transaction_partitions"] or ()
                               for partition in topic["partition_ids"]}))
    return TransactionLogValue(
        fields["producer_id"], fields["producer_epoch"], fields["transaction_timeout_ms"],
        state, () if state == TxnState.EMPTY else partitions,
        fields["transaction_last_update_timestamp_ms"], fields["transaction_start_timestamp_ms"],
        previous_producer_id=fields["previous_producer_id"],
        next_producer_id=fields["next_producer_id"],
        client_transaction_version=fields["client_transaction_version"],
    )
