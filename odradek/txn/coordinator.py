"""The transaction coordinator of one `__transaction_state` partition as a state machine
without IO, after Kafka's TransactionCoordinator and TransactionMetadata.

Handlers take the request and `now_ms` and return an `Output`: records to append, the
responses those records release once committed, and the marker jobs to start then. Durable
state changes only in `replay`, which handlers call on the records they emit, so serving and
loading take one path. A handler's transition is visible at once (a request racing an
EndTxn sees PrepareCommit and gets CONCURRENT_TRANSACTIONS); the shell releases no
response, with records or without, before the shard's records are committed, and rebuilds
the shard from the log if an append fails, so Kafka's pending states are not needed.

The coordinator runs as Kafka 4 does at `transaction.version` 2: the value records are
version 1, and aborts the coordinator starts itself (fencing a producer in InitProducerId, a
timed-out transaction) bump the epoch twice, once to fence and once more to end the
transaction as transaction version 2 does. EndTxn from a version 2 client (EndTxn v5+,
KIP-890 part 2) bumps the epoch at every transaction's end, rotating to a new producer id
when the epoch runs out; older clients keep Kafka's original rules.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.txn.log_records import TransactionLogValue, TxnState, check_transition

Token = Hashable
TopicPartition = tuple[str, int]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
"""Short.MAX_VALUE: only the coordinator uses it, to fence or end a transaction."""
TV2 = 2
"""The transaction version that bumps the epoch at each transaction's end (EndTxn v5+)."""
SERVER_TRANSACTION_VERSION = TV2
"""The version of the aborts the coordinator starts itself."""

_PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
_COMPLETE = frozenset({TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
_EXPIRABLE = _COMPLETE | {TxnState.EMPTY}


def epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps Short.MAX_VALUE for the coordinator: past MAX-1 a producer needs a new id."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnConfig:
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    abort_timed_out_check_interval_ms: int = 10000
    """transaction.abort.timed.out.transaction.cleanup.interval.ms"""
    remove_expired_interval_ms: int = 3600000
    """transaction.remove.expired.transaction.cleanup.interval.ms"""


@dataclass(frozen=True, slots=True)
class MarkerJob:
    """Markers to write to every partition of a transaction being completed; once all are
    written the shell calls `markers_written` with its transactional id, id and epoch."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[TopicPartition, ...]


@dataclass(slots=True)
class Output:
    """What a handler produced: records to append, then (once committed) the responses to
    release and the marker jobs to start."""

    records: list[tuple[str, TransactionLogValue | None]] = field(default_factory=list)
    responses: list[tuple[Token, dict[str, Any]]] = field(default_factory=list)
    markers: list[MarkerJob] = field(default_factory=list)
    timed_out: int = 0
    """Transactions this output aborts for running past their timeout (also counted in
    `TransactionCoordinatorShard.timed_out_aborts`)."""


def _producer_response(code: ErrorCode, producer_id: int = NO_PRODUCER_ID,
                       producer_epoch: int = NO_PRODUCER_EPOCH) -> dict[str, Any]:
    return {"error_code": code, "producer_id": producer_id, "producer_epoch": producer_epoch}


def _producer_responder(out: Output, token: Token) -> Callable[..., Output]:
    """`answer(code, producer_id, epoch)`: add the response for `token` to `out`, return it."""

    def answer(code: ErrorCode, producer_id: int = NO_PRODUCER_ID,
               epoch: int = NO_PRODUCER_EPOCH) -> Output:
        out.responses.append((token, _producer_response(code, producer_id, epoch)))
        return out

    return answer


class _AllocationFailed(Exception):
    """A version 2 EndTxn needs a new producer id and has no way to allocate one."""


class TransactionCoordinatorShard:
    """The transactional ids of one `__transaction_state` partition."""

    def __init__(self, config: TxnConfig, coordinator_epoch: int) -> None:
        self.config = config
        self.coordinator_epoch = coordinator_epoch
        """The partition's leader epoch: markers carry it so that brokers refuse a deposed
        coordinator's late markers."""
        self.transactions: dict[str, TransactionLogValue] = {}
        self.timed_out_aborts = 0
        """Transactions aborted for running past their timeout, for metrics."""
        self._last_epochs: dict[str, int] = {}
        """Kafka's lastProducerEpoch: volatile, lost (-1) on load like Kafka's."""
        self._next_abort_check = 0
        self._next_expiry_check = 0

    # -- durable state ----------------------------------------------------------------------

    def replay(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Apply one record of the log (None: the transactional id expired)."""
        self._last_epochs.pop(transactional_id, None)
        if value is None:
            self.transactions.pop(transactional_id, None)
        else:
            self.transactions[transactional_id] = value

    def _emit_record(self, out: Output, transactional_id: str,
                     value: TransactionLogValue | None, last_epoch: int | None = None) -> None:
        """Add a record to `out` (the shell appends it) and apply it to this shard now;
        `last_epoch` replaces the volatile last epoch (None keeps it). A move the state table
        does not list raises instead (log_records.TRANSITIONS)."""
        before = self.transactions.get(transactional_id)
        check_transition(TxnState.EMPTY if before is None else before.state,
                         TxnState.DEAD if value is None else value.state)
        kept = self._last_epochs.get(transactional_id, NO_PRODUCER_EPOCH)
        out.records.append((transactional_id, value))
        self.replay(transactional_id, value)
        last = kept if last_epoch is None else last_epoch
        if value is not None and last != NO_PRODUCER_EPOCH:
            self._last_epochs[transactional_id] = last

    def loaded(self, now_ms: int) -> Output:
        """After a load: transactions caught between prepare and complete get their markers
        sent again (Kafka's loadTransactionsForTxnTopicPartition)."""
        self._next_abort_check = now_ms + self.config.abort_timed_out_check_interval_ms
        self._next_expiry_check = now_ms + self.config.remove_expired_interval_ms
        out = Output()
        for transactional_id, txn in sorted(self.transactions.items()):
            if txn.state in _PREPARED:
                self._send_markers(out, transactional_id, txn, now_ms)
        return out

    def _prepare(self, out: Output, transactional_id: str, prepared: TransactionLogValue,
                 last_epoch: int | None, now_ms: int) -> None:
        self._emit_record(out, transactional_id, prepared, last_epoch)
        self._send_markers(out, transactional_id, prepared, now_ms)

    def _send_markers(self, out: Output, transactional_id: str, txn: TransactionLogValue,
                      now_ms: int) -> None:
        """Markers for a prepared transaction; one without partitions completes at once."""
        if txn.partitions:
            out.markers.append(MarkerJob(
                transactional_id, txn.producer_id, txn.producer_epoch, self.coordinator_epoch,
                txn.state == TxnState.PREPARE_COMMIT, txn.partitions))
        else:
            self._complete(out, transactional_id, txn, now_ms)

    def _complete(self, out: Output, transactional_id: str, txn: TransactionLogValue,
                  now_ms: int) -> None:
        """Kafka's prepareComplete: an overflowed epoch moves to the next producer id."""
        state = (TxnState.COMPLETE_COMMIT if txn.state == TxnState.PREPARE_COMMIT
                 else TxnState.COMPLETE_ABORT)
        complete = replace(txn, state=state, partitions=(), last_update_ms=now_ms,
                           next_producer_id=NO_PRODUCER_ID)
        if txn.client_transaction_version >= TV2 and txn.next_producer_id != NO_PRODUCER_ID:
            complete = replace(complete, producer_id=txn.next_producer_id, producer_epoch=0,
                               previous_producer_id=txn.producer_id)
        self._emit_record(out, transactional_id, complete)

    # -- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(self, token: Token, transactional_id: str, timeout_ms: int,
                         expected_producer_id: int, expected_epoch: int, now_ms: int,
                         allocate_producer_id: Callable[[], int]) -> Output:
        """InitProducerId with a transactional id. Response: {"error_code", "producer_id",
        "producer_epoch"}. `expected_*` (KIP-360, -1 when absent) let a producer recover
        its own id and epoch without fencing itself."""
        out = Output()

        answer = _producer_responder(out, token)

        if not transactional_id:
            return answer(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return answer(ErrorCode.invalid_transaction_timeout)
        if (expected_producer_id == NO_PRODUCER_ID) != (expected_epoch == NO_PRODUCER_EPOCH):
            return answer(ErrorCode.invalid_request)
        expecting = expected_producer_id != NO_PRODUCER_ID
        txn = self.transactions.get(transactional_id)
        if txn is None:
            fresh = TransactionLogValue(allocate_producer_id(), 0, timeout_ms, TxnState.EMPTY,
                                        (), now_ms)
            self._emit_record(out, transactional_id, fresh)
            return answer(ErrorCode.none, fresh.producer_id, 0)
        if expecting and not (
                expected_producer_id == txn.producer_id
                or (expected_producer_id == txn.previous_producer_id
                    and epoch_exhausted(expected_epoch))):
            return answer(ErrorCode.producer_fenced)
        if txn.state in _PREPARED:
            return answer(ErrorCode.concurrent_transactions)
        if txn.state == TxnState.ONGOING:
            # Abort the previous incarnation's transaction under a fencing epoch; the client
            # retries, and its retry bumps the epoch again (or rotates an exhausted id).
            self._abort_by_coordinator(out, transactional_id, txn, now_ms)
            return answer(ErrorCode.concurrent_transactions)
        if txn.state not in _EXPIRABLE:
            return answer(ErrorCode.invalid_txn_state)
        last_epoch = self._last_epochs.get(transactional_id, NO_PRODUCER_EPOCH)
        ready = replace(txn, timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=(),
                        start_ms=-1, last_update_ms=now_ms)
        if epoch_exhausted(txn.producer_epoch) and (
                not expecting or expected_epoch == txn.producer_epoch):
            ready = replace(ready, producer_id=allocate_producer_id(), producer_epoch=0,
                            previous_producer_id=txn.producer_id)
            last_epoch = txn.producer_epoch if expecting else NO_PRODUCER_EPOCH
        elif not expecting or expected_epoch == txn.producer_epoch:
            ready = replace(ready, producer_epoch=txn.producer_epoch + 1)
            last_epoch = txn.producer_epoch if expecting else NO_PRODUCER_EPOCH
        elif expected_epoch != last_epoch:  # else a retry of a bump that succeeded
            return answer(ErrorCode.producer_fenced)
        self._emit_record(out, transactional_id, ready, last_epoch)
        return answer(ErrorCode.none, ready.producer_id, ready.producer_epoch)

    def _abort_by_coordinator(self, out: Output, transactional_id: str,
                              txn: TransactionLogValue, now_ms: int) -> None:
        """Kafka 4.3's prepareFenceProducerEpoch then endTransaction(ABORT) at the server's
        transaction version 2: the fence is only a pending transition, so the abort bumps
        the epoch once, from the producer's, and its markers fence the producer."""
        aborting = replace(txn, producer_epoch=min(txn.producer_epoch + 1, MAX_EPOCH),
                           state=TxnState.PREPARE_ABORT, last_update_ms=now_ms,
                           client_transaction_version=SERVER_TRANSACTION_VERSION)
        self._prepare(out, transactional_id, aborting, txn.producer_epoch, now_ms)

    # -- AddPartitionsToTxn -----------------------------------------------------------------

    def add_partitions(self, token: Token, transactional_id: str, producer_id: int,
                       producer_epoch: int, partitions: list[TopicPartition], now_ms: int,
                       verify_only: bool) -> Output:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's `__consumer_offsets`
        partition). Response: {"error_code": the transaction's error, "results":
        {partition: code}}, every partition carrying the transaction's error if it has one.

        `verify_only` is a partition leader's KIP-890 check (AddPartitionsToTxn v4+): nothing
        is written, and each partition is NONE if it is in the ongoing transaction, else
        TRANSACTION_ABORTABLE (Kafka's handleVerifyPartitionsInTransaction)."""
        out = Output()

        def answer(code: ErrorCode,
                   results: dict[TopicPartition, ErrorCode] | None = None) -> Output:
            out.responses.append((token, {
                "error_code": code,
                "results": dict.fromkeys(partitions, code) if results is None else results}))
            return out

        if not transactional_id:
            return answer(ErrorCode.invalid_request)
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return answer(ErrorCode.invalid_producer_id_mapping)
        if txn.producer_epoch != producer_epoch:
            return answer(ErrorCode.producer_fenced)
        if txn.state in _PREPARED:
            return answer(ErrorCode.concurrent_transactions)
        if verify_only:
            return answer(ErrorCode.none, {
                key: ErrorCode.none if key in txn.partitions else ErrorCode.transaction_abortable
                for key in partitions})
        if txn.state == TxnState.ONGOING:
            if set(partitions) <= set(txn.partitions):
                return answer(ErrorCode.none)
            start_ms = txn.start_ms
        elif txn.state in _EXPIRABLE:
            start_ms = now_ms
        else:
            return answer(ErrorCode.invalid_txn_state)
        self._emit_record(out, transactional_id, replace(
            txn, state=TxnState.ONGOING, partitions=tuple(sorted({*txn.partitions, *partitions})),
            start_ms=start_ms, last_update_ms=now_ms))
        return answer(ErrorCode.none)

    # -- EndTxn -----------------------------------------------------------------------------

    def end_txn(self, token: Token, transactional_id: str, producer_id: int,
                producer_epoch: int, commit: bool, now_ms: int, client_version: int,
                allocate_producer_id: Callable[[], int] | None = None) -> Output:
        """EndTxn. Response: {"error_code", "producer_id", "producer_epoch"}; with
        `client_version` 2 (EndTxn v5+) a success carries the producer's next id and epoch,
        otherwise -1s as in Kafka. A version 2 end at an exhausted epoch needs
        `allocate_producer_id` for the next producer id (without it the answer is
        COORDINATOR_LOAD_IN_PROGRESS, Kafka's when it has no id to give)."""
        out = Output()
        bumping = client_version >= TV2

        answer = _producer_responder(out, token)

        if not transactional_id:
            return answer(ErrorCode.invalid_request)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return answer(ErrorCode.invalid_producer_id_mapping)
        if bumping:
            try:
                code = self._end_v2(out, transactional_id, txn, producer_id, producer_epoch,
                                    commit, now_ms, allocate_producer_id)
            except _AllocationFailed:
                return answer(ErrorCode.coordinator_load_in_progress)
            if code != ErrorCode.none:
                return answer(code)
            current = self.transactions[transactional_id]
            if current.state in _PREPARED and current.next_producer_id != NO_PRODUCER_ID:
                # The epoch overflowed: the client goes on with the next producer id.
                return answer(code, current.next_producer_id, 0)
            return answer(code, current.producer_id, current.producer_epoch)
        return answer(self._end_v1(out, transactional_id, txn, producer_id, producer_epoch,
                                   commit, now_ms))

    def _end_v1(self, out: Output, transactional_id: str, txn: TransactionLogValue,
                producer_id: int, producer_epoch: int, commit: bool, now_ms: int) -> ErrorCode:
        """Kafka's endTransactionWithTV1: the epoch stays, a retry is recognised by state."""
        if txn.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if producer_epoch != txn.producer_epoch:
            return ErrorCode.producer_fenced
        if txn.state == TxnState.ONGOING:
            prepared = replace(txn, state=_prepare_state(commit), last_update_ms=now_ms,
                               client_transaction_version=0)
            self._prepare(out, transactional_id, prepared, None, now_ms)
            return ErrorCode.none
        return _repeated_end(txn.state, commit, retry=True)

    def _end_v2(self, out: Output, transactional_id: str, txn: TransactionLogValue,
                producer_id: int, producer_epoch: int, commit: bool, now_ms: int,
                allocate_producer_id: Callable[[], int] | None) -> ErrorCode:
        """Kafka's endTransaction at transaction version 2: every end bumps the epoch, so a
        retry carries the epoch before the bump."""
        retry_on_overflow = (txn.previous_producer_id == producer_id
                             and producer_epoch == MAX_EPOCH - 1 and txn.producer_epoch == 0)
        retry_on_bump = txn.producer_epoch == producer_epoch + 1
        if txn.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.invalid_producer_id_mapping
        if txn.state in _PREPARED:
            valid_epoch = retry_on_bump
        elif txn.state in _COMPLETE:
            valid_epoch = retry_on_bump or retry_on_overflow or (
                producer_epoch == txn.producer_epoch)
        else:
            valid_epoch = producer_epoch == txn.producer_epoch
        if not valid_epoch:
            return ErrorCode.producer_fenced
        retry = retry_on_bump or retry_on_overflow
        if txn.state == TxnState.ONGOING:
            no_partition_added = False
        elif txn.state in _EXPIRABLE and not commit and not retry:
            no_partition_added = True  # an abort without a transaction (its start is now)
        else:
            return _repeated_end(txn.state, commit, retry)
        next_producer_id = NO_PRODUCER_ID
        if epoch_exhausted(txn.producer_epoch):
            if allocate_producer_id is None:
                raise _AllocationFailed
            next_producer_id = allocate_producer_id()
        prepared = replace(
            txn, producer_epoch=txn.producer_epoch + 1, state=_prepare_state(commit),
            start_ms=now_ms if no_partition_added else txn.start_ms, last_update_ms=now_ms,
            next_producer_id=next_producer_id, client_transaction_version=TV2)
        self._prepare(out, transactional_id, prepared, txn.producer_epoch, now_ms)
        return ErrorCode.none

    def markers_written(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        now_ms: int) -> Output:
        """Every partition of the transaction has its marker: PrepareCommit becomes
        CompleteCommit (PrepareAbort, CompleteAbort) and its partitions are cleared. A job
        that no longer matches the transaction (it was fenced or reloaded) writes nothing."""
        out = Output()
        txn = self.transactions.get(transactional_id)
        if (txn is not None and txn.state in _PREPARED and txn.producer_id == producer_id
                and txn.producer_epoch == producer_epoch):
            self._complete(out, transactional_id, txn, now_ms)
        return out

    # -- time -------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When `tick` has work next: the abort check while a transaction is ongoing, the
        expiry check while some transactional id could expire."""
        states = {txn.state for txn in self.transactions.values()}
        deadlines = []
        if TxnState.ONGOING in states:
            deadlines.append(self._next_abort_check)
        if states & _EXPIRABLE:
            deadlines.append(self._next_expiry_check)
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> Output:
        """Abort transactions past their timeout (Kafka's abortTimedOutTransactions) and
        tombstone transactional ids idle past transactional.id.expiration.ms, each on its
        own interval."""
        out = Output()
        config = self.config
        if now_ms >= self._next_abort_check:
            self._next_abort_check = now_ms + config.abort_timed_out_check_interval_ms
            for transactional_id, txn in sorted(self.transactions.items()):
                if txn.state == TxnState.ONGOING and txn.start_ms + txn.timeout_ms < now_ms:
                    self._abort_by_coordinator(out, transactional_id, txn, now_ms)
                    out.timed_out += 1
            self.timed_out_aborts += out.timed_out
        if now_ms >= self._next_expiry_check:
            self._next_expiry_check = now_ms + config.remove_expired_interval_ms
            for transactional_id, txn in sorted(self.transactions.items()):
                if (txn.state in _EXPIRABLE and txn.last_update_ms
                        <= now_ms - config.transactional_id_expiration_ms):
                    self._emit_record(out, transactional_id, None)
        return out

    # -- inspection -------------------------------------------------------------------------

    def ongoing_count(self) -> int:
        return sum(txn.state == TxnState.ONGOING for txn in self.transactions.values())

    def describe(self, transactional_id: str) -> dict[str, Any] | None:
        """DescribeTransactions' fields for this transactional id; None if unknown."""
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.state == TxnState.DEAD:
            return None
        topics: dict[str, list[int]] = {}
        for topic, partition in txn.partitions:
            topics.setdefault(topic, []).append(partition)
        return {"transaction_state": txn.state.kafka_name,
                "transaction_timeout_ms": txn.timeout_ms,
                "transaction_start_time_ms": txn.start_ms,
                "producer_id": txn.producer_id, "producer_epoch": txn.producer_epoch,
                "topics": sorted(topics.items())}

    def list_transactions(self, states: set[str], producer_ids: set[int],
                          duration_filter_ms: int, now_ms: int) -> list[dict[str, Any]]:
        """ListTransactions: filtered by state names and producer ids (empty: all) and, when
        `duration_filter_ms` >= 0, to transactions started more than that long ago."""
        listed = []
        for transactional_id, txn in sorted(self.transactions.items()):
            if txn.state == TxnState.DEAD:
                continue
            if states and txn.state.kafka_name not in states:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            if duration_filter_ms >= 0 and now_ms - txn.start_ms <= duration_filter_ms:
                continue
            listed.append({"transactional_id": transactional_id,
                           "producer_id": txn.producer_id,
                           "transaction_state": txn.state.kafka_name})
        return listed


def _prepare_state(commit: bool) -> TxnState:
    return TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT


def _repeated_end(state: TxnState, commit: bool, retry: bool) -> ErrorCode:
    """EndTxn on a transaction that is not ongoing. While one is prepared its markers are
    being written, Kafka's pending transition to Complete, and any end waits, an abort of a
    commit included: Kafka answers CONCURRENT_TRANSACTIONS before it looks at the result
    asked for. Once complete, a retry of the same end succeeds and anything else is an
    invalid transition."""
    if state in _PREPARED:
        return ErrorCode.concurrent_transactions
    if state == (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT) and retry:
        return ErrorCode.none
    return ErrorCode.invalid_txn_state
