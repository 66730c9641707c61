"""The transaction coordinator's records in `__transaction_state`, laid out as Kafka writes
them (transaction-coordinator/src/main/resources/common/message/TransactionLog*.json,
version-prefixed as in MessageUtil).

A key is int16 version 0 and TransactionLogKey v0: the transactional id as an int16-length
string. A value is an int16 version and TransactionLogValue; a null value is a tombstone
(the transactional id expired). Version 0 is non-flexible; version 1 is flexible (compact
strings and arrays, tagged fields 0 PreviousProducerId, 1 NextProducerId and
2 ClientTransactionVersion, each written only when it differs from its default). Kafka 4
writes version 1 whenever the `transaction.version` feature is 1 or more, which a new
cluster finalizes at 2: so do we. An Empty transaction's partition array is null, and a
reader ignores an Empty record's partitions, as Kafka's does.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from odradek.protocol.coordinator_serde import RecordFormatError, RecordReader, RecordWriter

KEY_VERSION = 0
WRITTEN_VALUE_VERSION = 1
_LAST_VALUE_VERSION = 1
_PREVIOUS_PRODUCER_ID_TAG = 0
_NEXT_PRODUCER_ID_TAG = 1
_CLIENT_TRANSACTION_VERSION_TAG = 2
_I16, _I64 = struct.Struct(">h"), struct.Struct(">q")


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
    try:
        key = RecordWriter(flexible=False)
        key.int16(KEY_VERSION)
        key.string(transactional_id)
        if value is None:
            return key.getvalue(), None
        return key.getvalue(), _encode_value(value)
    except struct.error as exc:
        raise ValueError(f"record field out of range: {exc}") from None


def _encode_value(value: TransactionLogValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.int16(WRITTEN_VALUE_VERSION)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.timeout_ms)
    w.int8(value.state)
    if value.state == TxnState.EMPTY:
        w.uvarint(0)  # a null compact array
    else:
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(set(value.partitions)):
            topics.setdefault(topic, []).append(partition)

        def write_topic(item: tuple[str, list[int]]) -> None:
            w.string(item[0])
            w.array(item[1], w.int32)
            w.end_struct()

        w.array(list(topics.items()), write_topic)
    w.int64(value.last_update_ms)
    w.int64(value.start_ms)
    tagged = []
    if value.previous_producer_id != -1:
        tagged.append((_PREVIOUS_PRODUCER_ID_TAG, _I64.pack(value.previous_producer_id)))
    if value.next_producer_id != -1:
        tagged.append((_NEXT_PRODUCER_ID_TAG, _I64.pack(value.next_producer_id)))
    if value.client_transaction_version != 0:
        tagged.append((_CLIENT_TRANSACTION_VERSION_TAG,
                       _I16.pack(value.client_transaction_version)))
    w.end_struct(tagged)
    return w.getvalue()


def decode(key: bytes, value: bytes | None) -> tuple[str, TransactionLogValue | None]:
    """The transactional id and metadata (None: tombstone) in these bytes.

    Raises TxnRecordFormatError for bytes that do not hold exactly one key (or value) of a
    version Kafka writes: truncated, unknown version or state, trailing bytes."""
    try:
        r = RecordReader(key)
        version = r.int16()
        if version != KEY_VERSION:
            raise TxnRecordFormatError(f"TransactionLogKey has no version {version}")
        transactional_id = r.string()
        r.end()
        return transactional_id, None if value is None else _decode_value(RecordReader(value))
    except RecordFormatError as exc:
        raise TxnRecordFormatError(str(exc)) from None


def _decode_value(r: RecordReader) -> TransactionLogValue:
    version = r.int16()
    if not 0 <= version <= _LAST_VALUE_VERSION:
        raise TxnRecordFormatError(f"TransactionLogValue has no version {version}")
    r.flexible = version >= 1
    producer_id = r.int64()
    producer_epoch = r.int16()
    timeout_ms = r.int32()
    status = r.int8()
    try:
        state = TxnState(status)
    except ValueError:
        raise TxnRecordFormatError(f"unknown transaction status {status}") from None
    partitions = _read_partitions(r)
    last_update_ms = r.int64()
    start_ms = r.int64()
    tagged = r.tagged_fields()
    r.end()
    return TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state,
        () if state == TxnState.EMPTY else partitions, last_update_ms, start_ms,
        previous_producer_id=_tag(tagged, _PREVIOUS_PRODUCER_ID_TAG, _I64, -1),
        next_producer_id=_tag(tagged, _NEXT_PRODUCER_ID_TAG, _I64, -1),
        client_transaction_version=_tag(tagged, _CLIENT_TRANSACTION_VERSION_TAG, _I16, 0),
    )


def _read_partitions(r: RecordReader) -> tuple[tuple[str, int], ...]:
    """TransactionPartitions, a nullable array (null reads as no partitions)."""
    count = r.uvarint() - 1 if r.flexible else r.int32()
    if count < 0:
        return ()

    def topic() -> list[tuple[str, int]]:
        name = r.string()
        ids = r.array(r.int32)
        r.end_struct()
        return [(name, partition) for partition in ids]

    found: set[tuple[str, int]] = set()
    for _ in range(count):
        found.update(topic())
    return tuple(sorted(found))


def _tag(tagged: dict[int, bytes], tag: int, shape: struct.Struct, default: int) -> int:
    data = tagged.get(tag)
    if data is None:
        return default
    if len(data) != shape.size:
        raise TxnRecordFormatError(f"tagged field {tag} has {len(data)} bytes")
    value: int = shape.unpack(data)[0]
    return value
