"""The transaction coordinator shard: Kafka's InitProducerId, AddPartitionsToTxn, EndTxn
and timeout rules, KIP-360 and KIP-890, loading and replay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.txn.coordinator import (
    MAX_EPOCH,
    MarkerJob,
    Output,
    TransactionCoordinatorShard,
    TxnConfig,
)
from odradek.txn.log_records import IllegalTxnTransition, TransactionLogValue, TxnState

TID = "tx"
TIMEOUT = 60000
CONFIG = TxnConfig(transaction_max_timeout_ms=900000, transactional_id_expiration_ms=100000,
                   abort_timed_out_check_interval_ms=1000, remove_expired_interval_ms=5000)
A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


class Ids:
    """A producer id allocator that counts up from 1000."""

    def __init__(self) -> None:
        self._ids: Iterator[int] = iter(range(1000, 2000))
        self.taken: list[int] = []

    def __call__(self) -> int:
        self.taken.append(next(self._ids))
        return self.taken[-1]


class Harness:
    """A shard plus every record it emitted, to check replay equivalence."""

    def __init__(self, coordinator_epoch: int = 7) -> None:
        self.shard = TransactionCoordinatorShard(CONFIG, coordinator_epoch)
        self.ids = Ids()
        self.records: list[tuple[str, TransactionLogValue | None]] = []

    def _run(self, out: Output) -> Output:
        self.records += out.records
        return out

    def response(self, out: Output) -> dict[str, Any]:
        [(token, body)] = out.responses
        assert token == "t"
        return body

    def init(self, now: int = 0, expected: tuple[int, int] = (-1, -1), tid: str = TID,
             timeout: int = TIMEOUT) -> Output:
        return self._run(self.shard.init_producer_id("t", tid, timeout, *expected, now,
                                                     self.ids))

    def add(self, pid: int, epoch: int, partitions: list[tuple[str, int]], now: int = 0,
            verify_only: bool = False, tid: str = TID) -> Output:
        return self._run(self.shard.add_partitions("t", tid, pid, epoch, partitions, now,
                                                   verify_only))

    def end(self, pid: int, epoch: int, commit: bool, now: int = 0, version: int = 1,
            allocate: bool = True) -> Output:
        return self._run(self.shard.end_txn("t", TID, pid, epoch, commit, now, version,
                                            self.ids if allocate else None))

    def written(self, job: MarkerJob, now: int = 0) -> Output:
        return self._run(self.shard.markers_written(job.transactional_id, job.producer_id,
                                                    job.producer_epoch, now))

    def tick(self, now: int) -> Output:
        return self._run(self.shard.tick(now))

    @property
    def txn(self) -> TransactionLogValue:
        return self.shard.transactions[TID]

    def replayed(self) -> TransactionCoordinatorShard:
        fresh = TransactionCoordinatorShard(CONFIG, 7)
        for transactional_id, value in self.records:
            fresh.replay(transactional_id, value)
        return fresh


def started(h: Harness, partitions: tuple[tuple[str, int], ...] = (A0, A1), now: int = 0
            ) -> tuple[int, int]:
    body = h.response(h.init(now))
    pid, epoch = body["producer_id"], body["producer_epoch"]
    assert h.response(h.add(pid, epoch, list(partitions), now))["error_code"] == ErrorCode.none
    return pid, epoch


def loaded_with(value: TransactionLogValue, coordinator_epoch: int = 7) -> Harness:
    h = Harness(coordinator_epoch)
    h.shard.replay(TID, value)
    h.shard.loaded(0)
    return h


# -- InitProducerId -----------------------------------------------------------------------


def test_a_new_transactional_id_gets_a_new_producer_id_at_epoch_zero() -> None:
    h = Harness()
    out = h.init(now=5)
    assert h.response(out) == {"error_code": ErrorCode.none, "producer_id": 1000,
                               "producer_epoch": 0}
    assert out.records == [(TID, TransactionLogValue(1000, 0, TIMEOUT, TxnState.EMPTY, (), 5))]
    assert h.response(h.init(now=6, timeout=30000)) == {
        "error_code": ErrorCode.none, "producer_id": 1000, "producer_epoch": 1}
    assert h.txn.timeout_ms == 30000 and h.txn.last_update_ms == 6


@pytest.mark.parametrize("timeout", [0, -1, CONFIG.transaction_max_timeout_ms + 1])
def test_timeouts_outside_the_maximum_are_refused(timeout: int) -> None:
    h = Harness()
    out = h.init(timeout=timeout)
    assert h.response(out) == {"error_code": ErrorCode.invalid_transaction_timeout,
                               "producer_id": -1, "producer_epoch": -1}
    assert out.records == []


@pytest.mark.parametrize("tid, expected", [("", (-1, -1)), (TID, (5, -1)), (TID, (-1, 0))])
def test_invalid_requests(tid: str, expected: tuple[int, int]) -> None:
    h = Harness()
    assert h.response(h.init(tid=tid, expected=expected))["error_code"] == \
        ErrorCode.invalid_request


def test_an_ongoing_transaction_is_aborted_to_fence_the_previous_incarnation() -> None:
    h = Harness()
    pid, epoch = started(h)
    out = h.init(now=10)
    assert h.response(out)["error_code"] == ErrorCode.concurrent_transactions
    # Kafka 4.3: the fence is a pending transition; the abort at transaction version 2
    # bumps the producer's epoch once, and its markers carry the bumped epoch.
    assert h.txn.state == TxnState.PREPARE_ABORT and h.txn.producer_epoch == epoch + 1
    assert out.markers == [MarkerJob(TID, pid, epoch + 1, 7, False, (A0, A1))]
    # The old incarnation is fenced; the new one waits for the abort.
    assert h.response(h.add(pid, epoch, [B0]))["error_code"] == ErrorCode.producer_fenced
    assert h.response(h.end(pid, epoch, True))["error_code"] == ErrorCode.producer_fenced
    assert h.response(h.init())["error_code"] == ErrorCode.concurrent_transactions
    h.written(out.markers[0])
    assert h.txn.state == TxnState.COMPLETE_ABORT and h.txn.partitions == ()
    assert h.response(h.init()) == {"error_code": ErrorCode.none, "producer_id": pid,
                                    "producer_epoch": epoch + 2}


def test_a_producer_whose_epoch_is_exhausted_gets_a_new_producer_id() -> None:
    h = loaded_with(TransactionLogValue(500, MAX_EPOCH - 2, TIMEOUT, TxnState.COMPLETE_COMMIT,
                                        (), 0, 0))
    assert h.response(h.init()) == {"error_code": ErrorCode.none, "producer_id": 500,
                                    "producer_epoch": MAX_EPOCH - 1}
    assert h.response(h.init()) == {"error_code": ErrorCode.none, "producer_id": 1000,
                                    "producer_epoch": 0}
    assert h.txn.previous_producer_id == 500


def test_fencing_at_the_last_epoch_stops_at_short_max() -> None:
    h = loaded_with(TransactionLogValue(500, MAX_EPOCH - 1, TIMEOUT, TxnState.ONGOING, (A0,),
                                        0, 0))
    out = h.init()
    assert out.markers[0].producer_epoch == MAX_EPOCH
    h.written(out.markers[0])
    assert h.response(h.init())["producer_id"] == 1000


def test_kip_360_a_producer_recovers_its_own_epoch() -> None:
    h = Harness()
    pid = h.response(h.init())["producer_id"]
    h.init()
    assert h.response(h.init(expected=(pid, 1))) == {
        "error_code": ErrorCode.none, "producer_id": pid, "producer_epoch": 2}
    # A retry of that call (its response was lost) gets the same epoch, without a bump.
    out = h.init(expected=(pid, 1))
    assert h.response(out)["producer_epoch"] == 2 and h.txn.producer_epoch == 2
    # Any other epoch or producer id is fenced.
    assert h.response(h.init(expected=(pid, 0)))["error_code"] == ErrorCode.producer_fenced
    assert h.response(h.init(expected=(pid + 1, 2)))["error_code"] == \
        ErrorCode.producer_fenced
    # A new incarnation (no expected epoch) forgets the last epoch.
    h.init()
    assert h.response(h.init(expected=(pid, 2)))["error_code"] == ErrorCode.producer_fenced


def test_kip_360_a_retried_rotation_returns_the_new_producer_id() -> None:
    h = loaded_with(TransactionLogValue(500, MAX_EPOCH - 1, TIMEOUT, TxnState.COMPLETE_ABORT,
                                        (), 0, 0))
    first = h.response(h.init(expected=(500, MAX_EPOCH - 1)))
    assert (first["producer_id"], first["producer_epoch"]) == (1000, 0)
    assert h.response(h.init(expected=(500, MAX_EPOCH - 1))) == first
    assert h.ids.taken == [1000]


def test_kip_360_is_checked_before_a_pending_transaction() -> None:
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch, True)
    assert h.response(h.init(expected=(pid + 5, 0)))["error_code"] == \
        ErrorCode.producer_fenced
    assert h.response(h.init(expected=(pid, epoch)))["error_code"] == \
        ErrorCode.concurrent_transactions


# -- AddPartitionsToTxn ---------------------------------------------------------------------


def test_adding_partitions_starts_and_grows_a_transaction() -> None:
    h = Harness()
    body = h.response(h.init())
    pid, epoch = body["producer_id"], body["producer_epoch"]
    out = h.add(pid, epoch, [A1, A0], now=100)
    assert h.response(out) == {"error_code": ErrorCode.none,
                               "results": {A1: ErrorCode.none, A0: ErrorCode.none}}
    assert h.txn.state == TxnState.ONGOING and h.txn.partitions == (A0, A1)
    assert h.txn.start_ms == 100
    assert h.add(pid, epoch, [A0], now=150).records == []  # already in the transaction
    h.add(pid, epoch, [B0], now=200)
    assert h.txn.partitions == (A0, A1, B0) and h.txn.start_ms == 100
    assert h.txn.last_update_ms == 200
    assert h.shard.ongoing_count() == 1


@pytest.mark.parametrize("tid, pid_delta, epoch_delta, code", [
    ("other", 0, 0, ErrorCode.invalid_producer_id_mapping),
    (TID, 1, 0, ErrorCode.invalid_producer_id_mapping),
    (TID, 0, -1, ErrorCode.producer_fenced),
    (TID, 0, 1, ErrorCode.producer_fenced),
    ("", 0, 0, ErrorCode.invalid_request),
])
def test_adding_partitions_checks_the_producer(tid: str, pid_delta: int, epoch_delta: int,
                                               code: ErrorCode) -> None:
    h = Harness()
    h.init()
    h.init()
    out = h.add(h.txn.producer_id + pid_delta, h.txn.producer_epoch + epoch_delta, [A0, B0],
                tid=tid)
    assert h.response(out) == {"error_code": code, "results": {A0: code, B0: code}}
    assert out.records == []


def test_no_partitions_join_while_the_transaction_ends() -> None:
    h = Harness()
    pid, epoch = started(h)
    h.end(pid, epoch, commit=True)
    assert h.response(h.add(pid, epoch, [B0]))["error_code"] == \
        ErrorCode.concurrent_transactions


def test_verification_writes_nothing_and_answers_per_partition() -> None:
    h = Harness()
    pid, epoch = started(h, (A0,))
    out = h.add(pid, epoch, [A0, B0], verify_only=True)
    assert out.records == []
    assert h.response(out) == {"error_code": ErrorCode.none, "results": {
        A0: ErrorCode.none, B0: ErrorCode.transaction_abortable}}
    assert h.txn.partitions == (A0,)
    assert h.response(h.add(pid, epoch + 1, [A0], verify_only=True))["results"] == {
        A0: ErrorCode.producer_fenced}
    h.end(pid, epoch, commit=False)
    assert h.response(h.add(pid, epoch, [A0], verify_only=True))["results"] == {
        A0: ErrorCode.concurrent_transactions}


def test_verifying_an_empty_transaction_finds_no_partition() -> None:
    h = Harness()
    pid = h.response(h.init())["producer_id"]
    assert h.response(h.add(pid, 0, [A0], verify_only=True))["results"] == {
        A0: ErrorCode.transaction_abortable}


# -- EndTxn, transaction version 1 ------------------------------------------------------------


def test_a_commit_writes_prepare_then_complete() -> None:
    h = Harness()
    pid, epoch = started(h)
    out = h.end(pid, epoch, commit=True, now=50)
    assert h.response(out) == {"error_code": ErrorCode.none, "producer_id": -1,
                               "producer_epoch": -1}
    assert out.records == [(TID, h.txn)]
    assert h.txn.state == TxnState.PREPARE_COMMIT and h.txn.producer_epoch == epoch
    assert out.markers == [MarkerJob(TID, pid, epoch, 7, True, (A0, A1))]
    done = h.written(out.markers[0], now=60)
    assert [value.state for _, value in done.records if value] == [TxnState.COMPLETE_COMMIT]
    assert h.txn.partitions == () and h.txn.last_update_ms == 60 and h.txn.start_ms == 0
    assert done.markers == [] and done.responses == []


@pytest.mark.parametrize("commit", [True, False])
def test_ends_are_retried_and_checked_in_every_state(commit: bool) -> None:
    """While the markers are written any end waits, the opposite one too (Kafka's pending
    Complete transition); then only a retry of the same end succeeds."""
    h = Harness()
    pid, epoch = started(h)
    out = h.end(pid, epoch, commit)
    assert h.response(h.end(pid, epoch, commit))["error_code"] == \
        ErrorCode.concurrent_transactions
    assert h.response(h.end(pid, epoch, not commit))["error_code"] == \
        ErrorCode.concurrent_transactions
    h.written(out.markers[0])
    retry = h.end(pid, epoch, commit)
    assert h.response(retry)["error_code"] == ErrorCode.none and retry.records == []
    assert h.response(h.end(pid, epoch, not commit))["error_code"] == \
        ErrorCode.invalid_txn_state


def test_ending_checks_the_producer_and_the_state() -> None:
    h = Harness()
    assert h.response(h.end(1, 0, True))["error_code"] == ErrorCode.invalid_producer_id_mapping
    pid = h.response(h.init())["producer_id"]
    assert h.response(h.end(pid, 0, True))["error_code"] == ErrorCode.invalid_txn_state
    assert h.response(h.end(pid, 0, False))["error_code"] == ErrorCode.invalid_txn_state
    assert h.response(h.end(pid + 1, 0, True))["error_code"] == \
        ErrorCode.invalid_producer_id_mapping
    assert h.response(h.end(pid, 1, True))["error_code"] == ErrorCode.producer_fenced


def test_markers_of_another_epoch_complete_nothing() -> None:
    h = Harness()
    pid, epoch = started(h)
    job = h.end(pid, epoch, True).markers[0]
    assert h.written(replace(job, producer_epoch=epoch + 1)).records == []
    assert h.written(replace(job, transactional_id="other")).records == []
    assert h.txn.state == TxnState.PREPARE_COMMIT


# -- EndTxn, transaction version 2 (KIP-890 part 2) ------------------------------------------


def test_kip_890_every_end_bumps_the_epoch() -> None:
    h = Harness()
    pid, epoch = started(h)
    out = h.end(pid, epoch, True, version=2)
    assert h.response(out) == {"error_code": ErrorCode.none, "producer_id": pid,
                               "producer_epoch": epoch + 1}
    assert h.txn.state == TxnState.PREPARE_COMMIT and h.txn.producer_epoch == epoch + 1
    assert h.txn.client_transaction_version == 2
    assert out.markers == [MarkerJob(TID, pid, epoch + 1, 7, True, (A0, A1))]
    # A retry carries the epoch before the bump.
    assert h.response(h.end(pid, epoch, True, version=2))["error_code"] == \
        ErrorCode.concurrent_transactions
    assert h.response(h.end(pid, epoch + 1, True, version=2))["error_code"] == \
        ErrorCode.producer_fenced
    h.written(out.markers[0])
    assert h.response(h.end(pid, epoch, True, version=2)) == {
        "error_code": ErrorCode.none, "producer_id": pid, "producer_epoch": epoch + 1}
    assert h.response(h.end(pid, epoch, False, version=2))["error_code"] == \
        ErrorCode.invalid_txn_state
    # The next transaction runs at the bumped epoch; the old one can add nothing.
    assert h.response(h.add(pid, epoch, [B0]))["error_code"] == ErrorCode.producer_fenced
    assert h.response(h.add(pid, epoch + 1, [B0]))["error_code"] == ErrorCode.none


def test_kip_890_an_abort_without_a_transaction_bumps_the_epoch() -> None:
    h = Harness()
    pid = h.response(h.init(now=1))["producer_id"]
    assert h.response(h.end(pid, 0, True, version=2))["error_code"] == \
        ErrorCode.invalid_txn_state
    assert h.response(h.end(pid, -1, False, version=2))["error_code"] == \
        ErrorCode.producer_fenced
    out = h.end(pid, 0, False, now=9, version=2)
    assert h.response(out)["producer_epoch"] == 1
    # No partition needs a marker: the abort completes at once.
    assert [value.state for _, value in out.records if value] == [
        TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT]
    assert out.markers == [] and h.txn.start_ms == 9
    # Aborting again (a new, empty transaction) bumps again; the old epoch is a retry.
    assert h.response(h.end(pid, 0, False, version=2))["producer_epoch"] == 1
    assert h.response(h.end(pid, 1, False, version=2))["producer_epoch"] == 2


def test_kip_890_an_exhausted_epoch_moves_to_the_next_producer_id() -> None:
    h = loaded_with(TransactionLogValue(500, MAX_EPOCH - 1, TIMEOUT, TxnState.ONGOING, (A0,),
                                        0, 0, client_transaction_version=2))
    out = h.end(500, MAX_EPOCH - 1, True, version=2)
    assert h.response(out) == {"error_code": ErrorCode.none, "producer_id": 1000,
                               "producer_epoch": 0}
    assert h.txn.producer_epoch == MAX_EPOCH and h.txn.next_producer_id == 1000
    assert out.markers == [MarkerJob(TID, 500, MAX_EPOCH, 7, True, (A0,))]
    h.written(out.markers[0])
    assert (h.txn.producer_id, h.txn.producer_epoch, h.txn.previous_producer_id,
            h.txn.next_producer_id) == (1000, 0, 500, -1)
    retry = h.end(500, MAX_EPOCH - 1, True, version=2)
    assert h.response(retry) == {"error_code": ErrorCode.none, "producer_id": 1000,
                                 "producer_epoch": 0}
    assert h.response(h.add(1000, 0, [B0]))["error_code"] == ErrorCode.none


def test_kip_890_without_an_allocator_an_exhausted_end_is_retriable() -> None:
    h = loaded_with(TransactionLogValue(500, MAX_EPOCH - 1, TIMEOUT, TxnState.ONGOING, (A0,),
                                        0, 0))
    out = h.end(500, MAX_EPOCH - 1, True, version=2, allocate=False)
    assert h.response(out)["error_code"] == ErrorCode.coordinator_load_in_progress
    assert out.records == [] and h.txn.state == TxnState.ONGOING


# -- time -----------------------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch() -> None:
    h = Harness()
    h.shard.loaded(0)
    pid, epoch = started(h, now=100)
    assert h.shard.next_deadline() == 1000
    assert h.tick(1000).records == []  # started at 100, times out after 60100
    assert h.shard.next_deadline() == 2000
    assert h.tick(60100).records == []
    assert h.tick(61000).records == []  # the next check is at 61100
    out = h.tick(61100)
    assert out.timed_out == 1 and h.shard.timed_out_aborts == 1
    assert h.txn.state == TxnState.PREPARE_ABORT and h.txn.producer_epoch == epoch + 1
    assert out.markers == [MarkerJob(TID, pid, epoch + 1, 7, False, (A0, A1))]
    assert h.shard.ongoing_count() == 0
    h.written(out.markers[0])
    assert h.response(h.end(pid, epoch, False))["error_code"] == ErrorCode.producer_fenced
    # At transaction version 2 the producer's own abort reads as a retry of the
    # coordinator's (Kafka 4.3's retryOnEpochBump); its commit cannot happen.
    assert h.response(h.end(pid, epoch, False, version=2))["error_code"] == ErrorCode.none
    assert h.response(h.end(pid, epoch, True, version=2))["error_code"] == \
        ErrorCode.invalid_txn_state


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    h = Harness()
    h.shard.loaded(0)
    assert h.shard.next_deadline() is None
    h.init(now=10)
    h.init(now=10, tid="busy", timeout=900000)
    h.add(1001, 0, [A0], now=10, tid="busy")
    assert h.shard.next_deadline() == 1000  # the abort check, while "busy" is ongoing
    assert h.tick(5000).records == []
    out = h.tick(100010)
    assert out.records == [(TID, None)]
    assert set(h.shard.transactions) == {"busy"}


def test_loading_resends_the_markers_of_prepared_transactions() -> None:
    h = Harness(coordinator_epoch=3)
    h.shard.replay("c", TransactionLogValue(1, 2, TIMEOUT, TxnState.PREPARE_COMMIT, (A0,), 5, 1))
    h.shard.replay("a", TransactionLogValue(2, 0, TIMEOUT, TxnState.PREPARE_ABORT, (B0,), 5, 1))
    h.shard.replay("n", TransactionLogValue(3, 0, TIMEOUT, TxnState.PREPARE_ABORT, (), 5, 1))
    h.shard.replay("o", TransactionLogValue(4, 0, TIMEOUT, TxnState.ONGOING, (A1,), 5, 1))
    out = h.shard.loaded(100)
    assert out.markers == [MarkerJob("a", 2, 0, 3, False, (B0,)),
                           MarkerJob("c", 1, 2, 3, True, (A0,))]
    assert [(tid, value.state) for tid, value in out.records if value] == [
        ("n", TxnState.COMPLETE_ABORT)]
    assert h.shard.next_deadline() == 1100


def test_replaying_the_records_rebuilds_the_same_state() -> None:
    h = Harness()
    h.shard.loaded(0)
    pid, epoch = started(h)
    h.written(h.end(pid, epoch, True).markers[0])
    h.init(now=5)
    h.add(pid, epoch + 1, [B0], now=6)
    h.written(h.end(pid, epoch + 1, False, version=2).markers[0])
    h.init(tid="other")
    h.add(1001, 0, [A0], tid="other")
    h.init(tid="other")  # fences "other"
    h.tick(100000)
    h.tick(200000)
    assert h.replayed().transactions == h.shard.transactions
    assert len(h.shard.transactions) == 1  # TID expired; "other" is still aborting


# -- inspection -----------------------------------------------------------------------------


def test_describe_reports_kafkas_fields() -> None:
    h = Harness()
    assert h.shard.describe(TID) is None
    pid, epoch = started(h, (B0, A1, A0), now=42)
    assert h.shard.describe(TID) == {
        "transaction_state": "Ongoing", "transaction_timeout_ms": TIMEOUT,
        "transaction_start_time_ms": 42, "producer_id": pid, "producer_epoch": epoch,
        "topics": [("a", [0, 1]), ("b", [0])]}


@pytest.mark.parametrize("states, pids, duration, expected", [
    (set(), set(), -1, ["done", "empty", "open"]),
    ({"Ongoing"}, set(), -1, ["open"]),
    ({"Empty", "CompleteCommit"}, set(), -1, ["done", "empty"]),
    (set(), {1001}, -1, ["open"]),
    ({"Ongoing"}, {1000}, -1, []),
    (set(), set(), 500, ["done", "empty", "open"]),  # Empty's start is -1
    (set(), set(), 900, ["done", "empty"]),
])
def test_listing_filters_as_kafka_does(states: set[str], pids: set[int], duration: int,
                                       expected: list[str]) -> None:
    h = Harness()
    h.init(tid="empty")
    h.init(tid="open")
    h.add(1001, 0, [A0], now=300, tid="open")
    h.init(tid="done")
    h.add(1002, 0, [A0], now=50, tid="done")
    h.shard.end_txn("t", "done", 1002, 0, True, 60, 1)
    h.shard.markers_written("done", 1002, 0, 70)
    listed = h.shard.list_transactions(states, pids, duration, 1000)
    assert [item["transactional_id"] for item in listed] == expected
    names = {item["transactional_id"]: item["transaction_state"] for item in listed}
    assert names.get("done", "CompleteCommit") == "CompleteCommit"


# -- the state table ----------------------------------------------------------------------


def test_a_move_the_table_does_not_list_raises() -> None:
    h = loaded_with(TransactionLogValue(5, 3, TIMEOUT, TxnState.PREPARE_COMMIT, (A0,), 0, 0))
    with pytest.raises(IllegalTxnTransition, match="from PrepareCommit to Ongoing"):
        h.shard._emit_record(Output(), TID, replace(h.txn, state=TxnState.ONGOING))


OPERATION = st.one_of(
    st.tuples(st.just("init"), st.sampled_from([(-1, -1), (0, 0), (1000, 0), (1000, 1)])),
    st.tuples(st.just("add"), st.lists(st.sampled_from([A0, A1, B0]), min_size=1, max_size=2)),
    st.tuples(st.just("end"), st.booleans(), st.sampled_from([1, 2]), st.sampled_from([0, -1])),
    st.tuples(st.just("markers")),
    st.tuples(st.just("tick"),
              st.sampled_from([1, TIMEOUT + 1, CONFIG.transactional_id_expiration_ms * 2])),
)


@settings(max_examples=300, deadline=None)
@given(operations=st.lists(OPERATION, max_size=25))
def test_every_move_a_client_can_cause_is_in_the_table(operations: list[tuple[Any, ...]]
                                                        ) -> None:
    """Clients that retry, restart and stall (epochs one behind, stale ids, time jumps) drive
    the shard only through moves the table lists, and replay reaches the same state."""
    h = Harness()
    now = 0
    pid, epoch = -1, -1
    for operation in operations:
        kind = operation[0]
        if kind == "init":
            body = h.response(h.init(now, expected=operation[1]))
            if body["error_code"] == ErrorCode.none:
                pid, epoch = body["producer_id"], body["producer_epoch"]
        elif kind == "add" and pid >= 0:
            h.add(pid, epoch, operation[1], now)
        elif kind == "end" and pid >= 0:
            _, commit, version, lag = operation
            body = h.response(h.end(pid, epoch + lag, commit, now, version))
            if body["error_code"] == ErrorCode.none and version == 2:
                pid, epoch = body["producer_id"], body["producer_epoch"]
        elif kind == "markers" and TID in h.shard.transactions:
            txn = h.txn
            h._run(h.shard.markers_written(TID, txn.producer_id, txn.producer_epoch, now))
        elif kind == "tick":
            now += operation[1]
            h.tick(now)
    assert h.replayed().transactions == h.shard.transactions
