"""The per-partition producer state: deduplication, sequence and epoch checks, transactions,
snapshots, retention and expiry."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.protocol.records import BatchInfo
from odradek.txn.producer_state import (
    INT32_MAX,
    CorruptSnapshotError,
    ProducerStateError,
    ProducerStateManager,
    last_sequence,
)

TRANSACTIONAL = 0x10
CONTROL = 0x20


def batch(producer_id: int, epoch: int, sequence: int, count: int = 1, offset: int = 0,
          *, transactional: bool = False, control: bool = False,
          timestamp: int = 1000) -> BatchInfo:
    attributes = (TRANSACTIONAL if transactional or control else 0) | (CONTROL if control else 0)
    return BatchInfo(0, 100, offset, count - 1, 0, 2, 0, attributes, timestamp, timestamp,
                     producer_id, epoch, sequence, count)


class Partition:
    """A log of producer batches driven the way the broker drives the state."""

    def __init__(self) -> None:
        self.state = ProducerStateManager()
        self.end = 0
        self.appended: list[BatchInfo] = []

    def produce(self, info: BatchInfo) -> int:
        duplicate = self.state.check(info)
        if duplicate is not None:
            return duplicate.first_offset
        placed = batch(info.producer_id, info.producer_epoch, info.base_sequence,
                       info.record_count, self.end, transactional=info.is_transactional,
                       timestamp=info.max_timestamp)
        self.state.record(placed)
        self.appended.append(placed)
        self.end = placed.next_offset
        return placed.base_offset

    def marker(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int = 0):
        placed = batch(producer_id, epoch, -1, 1, self.end, control=True)
        self.end += 1
        return self.state.record(placed, (commit, coordinator_epoch))


def test_a_retried_batch_gets_its_original_offset_and_is_not_appended_again() -> None:
    log = Partition()
    assert log.produce(batch(7, 0, 0, count=3)) == 0
    assert log.produce(batch(7, 0, 3, count=2)) == 3
    assert log.produce(batch(7, 0, 0, count=3)) == 0
    assert log.produce(batch(7, 0, 3, count=2)) == 3
    assert log.end == 5 and len(log.appended) == 2


def test_only_the_last_five_batches_are_remembered() -> None:
    log = Partition()
    for sequence in range(6):
        log.produce(batch(7, 0, sequence))
    assert log.produce(batch(7, 0, 1)) == 1
    with pytest.raises(ProducerStateError) as raised:
        log.produce(batch(7, 0, 0))
    assert raised.value.error_code == ErrorCode.out_of_order_sequence_number


def test_a_sequence_gap_is_out_of_order() -> None:
    log = Partition()
    log.produce(batch(7, 0, 0))
    with pytest.raises(ProducerStateError) as raised:
        log.produce(batch(7, 0, 2))
    assert raised.value.error_code == ErrorCode.out_of_order_sequence_number
    assert log.end == 1


def test_an_older_epoch_is_refused_and_a_newer_one_starts_at_sequence_zero() -> None:
    log = Partition()
    log.produce(batch(7, 3, 0))
    with pytest.raises(ProducerStateError) as stale:
        log.produce(batch(7, 2, 1))
    assert stale.value.error_code == ErrorCode.invalid_producer_epoch
    with pytest.raises(ProducerStateError) as unsequenced:
        log.produce(batch(7, 4, 5))
    assert unsequenced.value.error_code == ErrorCode.out_of_order_sequence_number
    assert log.produce(batch(7, 4, 0)) == 1


def test_an_unknown_producer_may_start_at_any_sequence() -> None:
    """As Kafka since KIP-360: state lost to retention must not wedge the producer."""
    log = Partition()
    assert log.produce(batch(7, 0, 42)) == 0
    assert log.produce(batch(7, 0, 43)) == 1


def test_sequences_wrap_after_int32_max() -> None:
    log = Partition()
    log.produce(batch(7, 0, INT32_MAX - 1, count=2))
    assert last_sequence(batch(7, 0, INT32_MAX, count=3)) == 1
    assert log.produce(batch(7, 0, 0)) == 2


def test_a_plain_write_inside_a_transaction_is_an_invalid_state() -> None:
    log = Partition()
    log.produce(batch(7, 0, 0, transactional=True))
    with pytest.raises(ProducerStateError) as raised:
        log.produce(batch(7, 0, 1))
    assert raised.value.error_code == ErrorCode.invalid_txn_state


def test_markers_end_transactions_and_move_the_first_unstable_offset() -> None:
    log = Partition()
    log.produce(batch(1, 0, 0))
    log.produce(batch(7, 0, 0, transactional=True))
    log.produce(batch(8, 0, 0, transactional=True))
    log.produce(batch(7, 0, 1, transactional=True))
    assert log.state.first_unstable_offset() == 1
    aborted = log.marker(7, 0, commit=False)
    assert aborted is not None
    assert (aborted.first_offset, aborted.last_offset, aborted.aborted) == (1, 4, True)
    assert aborted.last_stable_offset == 2, "producer 8's transaction is still open at 2"
    assert log.state.first_unstable_offset() == 2
    committed = log.marker(8, 0, commit=True)
    assert committed is not None and not committed.aborted
    assert committed.last_stable_offset == 6
    assert log.state.first_unstable_offset() is None
    assert log.marker(8, 0, commit=True) is None, "a marker without data completes nothing"


def test_markers_from_a_stale_epoch_or_coordinator_are_refused() -> None:
    log = Partition()
    log.produce(batch(7, 2, 0, transactional=True))
    log.marker(7, 2, commit=True, coordinator_epoch=5)
    with pytest.raises(ProducerStateError) as epoch:
        log.state.check_marker(7, 1, 5)
    assert epoch.value.error_code == ErrorCode.invalid_producer_epoch
    with pytest.raises(ProducerStateError) as coordinator:
        log.state.check_marker(7, 2, 4)
    assert coordinator.value.error_code == ErrorCode.transaction_coordinator_fenced
    log.state.check_marker(7, 3, 5)


def test_a_coordinator_write_from_an_epoch_fenced_by_a_marker_is_refused() -> None:
    """The campaign's lost offsets: a TxnOffsetCommit delayed past its transaction's abort
    (written with the bumped epoch) must not open a transaction the next commit applies."""
    log = Partition()
    log.state.check_coordinator_write(1000, 1)  # unknown producer: accepted
    log.produce(batch(1000, 1, -1, transactional=True))
    log.marker(1000, 3, commit=False)
    with pytest.raises(ProducerStateError) as refused:
        log.state.check_coordinator_write(1000, 1)
    assert refused.value.error_code == ErrorCode.invalid_producer_epoch
    log.state.check_coordinator_write(1000, 3)
    log.state.check_coordinator_write(1000, 4)


def test_an_ongoing_transaction_is_matched_by_producer_and_epoch() -> None:
    log = Partition()
    log.produce(batch(9, 2, -1, transactional=True))
    assert log.state.in_transaction(9) and log.state.in_transaction(9, 2)
    assert not log.state.in_transaction(9, 1) and not log.state.in_transaction(8)
    log.marker(9, 2, commit=True)
    assert not log.state.in_transaction(9) and not log.state.in_transaction(9, 2)


def test_verifications_in_flight_share_a_guard_that_any_append_invalidates() -> None:
    log = Partition()
    first = log.state.start_verification(5)
    assert log.state.start_verification(5) is first
    assert log.state.still_verified(5, first)
    log.produce(batch(5, 0, 0, transactional=True))
    assert not log.state.still_verified(5, first)
    assert log.state.start_verification(5) is not first


def test_a_snapshot_restores_deduplication_and_open_transactions() -> None:
    log = Partition()
    log.produce(batch(7, 1, 0, count=4))
    log.produce(batch(9, 0, 10, count=2, transactional=True))
    restored = ProducerStateManager.from_snapshot(log.state.snapshot())
    assert restored.check(batch(7, 1, 0, count=4)) is not None
    assert restored.first_unstable_offset() == 4
    with pytest.raises(ProducerStateError):
        restored.check(batch(7, 1, 5))
    assert restored.check(batch(7, 1, 4)) is None


def test_the_snapshot_layout_is_kafkas() -> None:
    state = ProducerStateManager()
    state.record(batch(7, 1, 0, count=4, offset=10, timestamp=99))
    data = state.snapshot()
    assert data[:2] == b"\x00\x01"
    assert len(data) == 2 + 4 + 4 + 46
    assert data[10:18] == (7).to_bytes(8, "big")


@pytest.mark.parametrize("damage", ["crc", "version", "truncated"])
def test_a_damaged_snapshot_is_refused(damage: str) -> None:
    state = ProducerStateManager()
    state.record(batch(7, 1, 0))
    data = bytearray(state.snapshot())
    if damage == "crc":
        data[-1] ^= 1
    elif damage == "version":
        data[1] = 9
    else:
        data = data[:-3]
    with pytest.raises(CorruptSnapshotError):
        ProducerStateManager.from_snapshot(bytes(data))


def test_producers_below_the_log_start_or_idle_too_long_are_forgotten() -> None:
    log = Partition()
    log.produce(batch(7, 0, 0, timestamp=100))
    log.produce(batch(8, 0, 0, timestamp=5000))
    log.produce(batch(9, 0, 0, transactional=True, timestamp=100))
    log.state.forget_before(1)
    assert set(log.state.producers) == {8, 9}
    assert log.state.expire(now_ms=6000, expiration_ms=1000) == 1
    assert set(log.state.producers) == {9}, "an open transaction keeps its producer"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(1, 3)),
                max_size=60))
def test_retries_in_any_order_never_duplicate_or_reorder(sends) -> None:
    """Three producers send batches and retry any of their last five in flight: every
    sequence is in the log at most once, in order, and a retry gets the original offset."""
    log = Partition()
    sent: dict[int, list[tuple[int, int]]] = {0: [], 1: [], 2: []}
    offsets: dict[tuple[int, int], int] = {}
    for producer, retry_back, count in sends:
        history = sent[producer]
        if retry_back and retry_back <= min(len(history), 5):
            sequence, size = history[-retry_back]
            assert log.produce(batch(producer, 0, sequence, size)) == offsets[producer, sequence]
            continue
        sequence = sum(size for _, size in history)
        offsets[producer, sequence] = log.produce(batch(producer, 0, sequence, count))
        history.append((sequence, count))
    for producer in sent:
        sequences = [b.base_sequence for b in log.appended if b.producer_id == producer]
        assert sequences == [sequence for sequence, _ in sent[producer]]
