"""`__transaction_state` records: Kafka's byte layout (TransactionLogKey v0,
TransactionLogValue v0 and v1), tombstones and malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.txn.log_records import (
    TransactionLogValue,
    TxnRecordFormatError,
    TxnState,
    decode,
    encode,
)
from tests.unit.packing import i8, i16, i32, i64

KEY = b"\x00\x00" + b"\x00\x03" + b"tx1"


ONGOING = TransactionLogValue(
    producer_id=1000, producer_epoch=5, timeout_ms=60000, state=TxnState.ONGOING,
    partitions=(("a", 0), ("a", 1), ("b", 2)), last_update_ms=1700000000123,
    start_ms=1700000000000, client_transaction_version=2)

ONGOING_V1 = (
    i16(1) + i64(1000) + i16(5) + i32(60000) + i8(1)
    + b"\x03"  # two topics, compact
    + b"\x02a" + b"\x03" + i32(0) + i32(1) + b"\x00"
    + b"\x02b" + b"\x02" + i32(2) + b"\x00"
    + i64(1700000000123) + i64(1700000000000)
    + b"\x01" + b"\x02" + b"\x02" + i16(2)  # one tagged field: ClientTransactionVersion
)

ONGOING_V0 = (
    i16(0) + i64(1000) + i16(5) + i32(60000) + i8(1)
    + i32(2)
    + i16(1) + b"a" + i32(2) + i32(0) + i32(1)
    + i16(1) + b"b" + i32(1) + i32(2)
    + i64(1700000000123) + i64(1700000000000)
)


def test_the_key_is_version_zero_and_an_int16_length_string() -> None:
    assert encode("tx1", None) == (KEY, None)
    assert decode(KEY, None) == ("tx1", None)


def test_values_are_written_as_kafka_4_writes_them() -> None:
    assert encode("tx1", ONGOING) == (KEY, ONGOING_V1)
    assert decode(KEY, ONGOING_V1) == ("tx1", ONGOING)


def test_an_empty_transaction_has_a_null_partition_array_and_no_default_tags() -> None:
    empty = TransactionLogValue(7, 0, 60000, TxnState.EMPTY, (), 10)
    expected = (i16(1) + i64(7) + i16(0) + i32(60000) + i8(0) + b"\x00" + i64(10) + i64(-1)
                + b"\x00")
    assert encode("tx1", empty) == (KEY, expected)
    assert decode(KEY, expected) == ("tx1", empty)


def test_previous_and_next_producer_ids_are_tags_zero_and_one() -> None:
    value = TransactionLogValue(9, 32767, 100, TxnState.PREPARE_ABORT, (("t", 3),), 5, 4,
                                previous_producer_id=8, next_producer_id=10,
                                client_transaction_version=2)
    _, data = encode("tx1", value)
    assert data is not None
    assert data.endswith(i64(5) + i64(4) + b"\x03" + b"\x00\x08" + i64(8) + b"\x01\x08"
                         + i64(10) + b"\x02\x02" + i16(2))
    assert decode(KEY, data) == ("tx1", value)


def test_version_zero_values_decode() -> None:
    old = TransactionLogValue(1000, 5, 60000, TxnState.ONGOING, ONGOING.partitions,
                              1700000000123, 1700000000000)
    assert decode(KEY, ONGOING_V0) == ("tx1", old)
    empty = i16(0) + i64(7) + i16(0) + i32(60000) + i8(0) + i32(-1) + i64(10) + i64(-1)
    assert decode(KEY, empty) == ("tx1", TransactionLogValue(7, 0, 60000, TxnState.EMPTY, (),
                                                            10))


def test_partitions_of_an_empty_record_are_ignored_as_kafka_does() -> None:
    value = (i16(0) + i64(7) + i16(0) + i32(1) + i8(0) + i32(1) + i16(1) + b"a" + i32(1)
             + i32(0) + i64(10) + i64(-1))
    assert decode(KEY, value)[1] == TransactionLogValue(7, 0, 1, TxnState.EMPTY, (), 10)


def test_unknown_tags_are_skipped() -> None:
    data = ONGOING_V1[:-5] + b"\x02" + b"\x02\x02" + i16(2) + b"\x07\x01\xff"
    assert decode(KEY, data) == ("tx1", ONGOING)


@pytest.mark.parametrize("state, name", [
    (TxnState.EMPTY, "Empty"), (TxnState.ONGOING, "Ongoing"),
    (TxnState.PREPARE_COMMIT, "PrepareCommit"), (TxnState.PREPARE_ABORT, "PrepareAbort"),
    (TxnState.COMPLETE_COMMIT, "CompleteCommit"), (TxnState.COMPLETE_ABORT, "CompleteAbort"),
    (TxnState.DEAD, "Dead"), (TxnState.PREPARE_EPOCH_FENCE, "PrepareEpochFence"),
])
def test_state_names_and_bytes_are_kafkas(state: TxnState, name: str) -> None:
    assert state.kafka_name == name
    assert list(TxnState).index(state) == state.value


@pytest.mark.parametrize("key, value", [
    (b"", None),
    (KEY[:-1], None),
    (KEY + b"x", None),
    (b"\x00\x01" + KEY[2:], None),
    (KEY, b""),
    (KEY, ONGOING_V1[:-1]),
    (KEY, ONGOING_V1 + b"\x00"),
    (KEY, ONGOING_V0[:-3]),
    (KEY, ONGOING_V0 + b"\x00"),
    (KEY, i16(2) + ONGOING_V1[2:]),
    (KEY, i16(-1) + ONGOING_V1[2:]),
    (KEY, ONGOING_V1[:16] + i8(8) + ONGOING_V1[17:]),  # no state 8
    (KEY, ONGOING_V1[:-5] + b"\x01\x02\x01\x02"),  # an int16 tag of one byte
    (KEY, ONGOING_V0[:15] + i32(1_000_000) + ONGOING_V0[19:]),
    (KEY, i16(1) + i64(1) + i16(0) + i32(1) + i8(1) + b"\x02" + b"\x00"),  # null topic name
])
def test_malformed_records_are_refused(key: bytes, value: bytes | None) -> None:
    with pytest.raises(TxnRecordFormatError):
        decode(key, value)


def test_the_error_is_a_value_error() -> None:
    assert issubclass(TxnRecordFormatError, ValueError)


def test_values_kafka_cannot_write_are_refused() -> None:
    with pytest.raises(ValueError, match="Empty"):
        encode("tx1", TransactionLogValue(1, 0, 1, TxnState.EMPTY, (("a", 0),), 1))
    with pytest.raises(ValueError, match="out of range"):
        encode("tx1", TransactionLogValue(1, 40000, 1, TxnState.ONGOING, (), 1))


_partitions = st.lists(
    st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)), max_size=6,
).map(lambda items: tuple(sorted(set(items))))


@st.composite
def _values(draw: st.DrawFn) -> TransactionLogValue:
    state = draw(st.sampled_from(TxnState))
    return TransactionLogValue(
        producer_id=draw(st.integers(0, 2**63 - 1)),
        producer_epoch=draw(st.integers(-1, 32767)),
        timeout_ms=draw(st.integers(1, 2**31 - 1)),
        state=state,
        partitions=() if state == TxnState.EMPTY else draw(_partitions),
        last_update_ms=draw(st.integers(-1, 2**62)),
        start_ms=draw(st.integers(-1, 2**62)),
        previous_producer_id=draw(st.integers(-1, 2**63 - 1)),
        next_producer_id=draw(st.integers(-1, 2**63 - 1)),
        client_transaction_version=draw(st.integers(0, 2)),
    )


@given(st.text(max_size=30), _values())
def test_records_round_trip(transactional_id: str, value: TransactionLogValue) -> None:
    key, data = encode(transactional_id, value)
    assert decode(key, data) == (transactional_id, value)
