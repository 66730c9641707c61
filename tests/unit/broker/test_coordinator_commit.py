"""A coordinator answers only from committed state: on real broker shells over logs on disk,
with the follower's replication placed by the test, no response of the transaction
coordinator goes out before the records it rests on are committed (the high watermark past
them), and a new coordinator loading what the follower holds agrees with every answer.

Issue 28, anomaly A: after a broker was killed, a confluent-kafka transactional producer got
a fatal INVALID_TXN_STATE on EndTxn, and "appending to `__transaction_state-23` failed:
reloading" was logged around it. An AddPartitionsToTxn record timed out waiting for the ISR;
the shard was reloaded from its log, which holds that record (appended, not committed); the
producer's retry found the partition already in the transaction and was answered at once.
The leader died before its follower had the record, and the new coordinator found the
transaction Empty."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.coordinator_runtime import CoordinatorUnavailable
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from odradek.log.partition import PartitionLog
from odradek.metadata.image import TRANSACTION_STATE_TOPIC
from odradek.protocol.records import validate_batches
from odradek.runtime.clock import now_ms
from tests.unit.coordinator_shell import apply_transaction_state_topic, transaction_coordinator

LEADER, FOLLOWER = 1, 2
LEADER_EPOCH = 4
STATE_PARTITION = (TRANSACTION_STATE_TOPIC, 0)
TRANSACTIONAL_ID = "orders-app"
ORDERS = ("orders", 0)
QUICK_COMMIT_TIMEOUT = {"offsets.commit.timeout.ms": "300"}
"""The coordinator's commit wait, short so that an append the follower never fetches fails
within the test."""


async def leader_with_follower(log_dir: Path, configs: dict[str, str]
                               ) -> TransactionCoordinatorRuntime:
    """The leader of `__transaction_state-0`, with the follower in its ISR and
    min.insync.replicas 2 (`transaction.state.log.min.isr`); the follower fetches only when
    the test says (`replicate`)."""
    txns, applier = transaction_coordinator(log_dir, LEADER, configs)
    txns.broker.caught_up = True
    await apply_transaction_state_topic(applier, LEADER, LEADER_EPOCH, (LEADER, FOLLOWER),
                                        (LEADER, FOLLOWER), min_insync_replicas=2)
    await txns.ensure_loaded()
    return txns


def state_log(txns: TransactionCoordinatorRuntime) -> PartitionLog:
    log_ = txns.broker.partition(*STATE_PARTITION)
    assert log_ is not None
    return log_


def replicate(txns: TransactionCoordinatorRuntime) -> None:
    """The follower fetches the leader's whole log."""
    txns.replicas.record_follower_fetch(STATE_PARTITION, FOLLOWER,
                                        state_log(txns).log_end_offset, 0, now_ms())


async def new_coordinator(leader: TransactionCoordinatorRuntime, log_dir: Path
                          ) -> TransactionCoordinatorRuntime:
    """The leader dies: the follower leads in the next epoch and loads what it replicated,
    the leader's log up to its high watermark."""
    source = state_log(leader)
    committed = bytearray(source.read(0, 1 << 20, max_offset=source.high_watermark).records)
    txns, applier = transaction_coordinator(log_dir, FOLLOWER)
    txns.broker.caught_up = True
    log_ = txns.broker.logs.create(*STATE_PARTITION, now_ms())
    if committed:
        log_.append_as_follower(committed, validate_batches(committed, len(committed),
                                                            from_client=False), now_ms())
    await apply_transaction_state_topic(applier, FOLLOWER, LEADER_EPOCH + 1,
                                        (LEADER, FOLLOWER), (FOLLOWER,))
    await txns.ensure_loaded()
    leader.close()
    return txns


async def request(txns: TransactionCoordinatorRuntime, handler: Any) -> dict[str, Any]:
    """A request as its handler runs it; COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR as
    the error code the client gets."""
    try:
        response: dict[str, Any] = await txns.run_deferred(TRANSACTIONAL_ID, handler)
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code}
    return response


def init_producer_id(txns: TransactionCoordinatorRuntime) -> asyncio.Task[dict[str, Any]]:
    ids = iter(range(1000, 2000))
    return asyncio.ensure_future(request(txns, lambda shard, token, now: shard.init_producer_id(
        token, TRANSACTIONAL_ID, 60000, -1, -1, now, lambda: next(ids))))


def add_orders(txns: TransactionCoordinatorRuntime, producer_id: int
               ) -> asyncio.Task[dict[str, Any]]:
    return asyncio.ensure_future(request(txns, lambda shard, token, now: shard.add_partitions(
        token, TRANSACTIONAL_ID, producer_id, 0, [ORDERS], now, verify_only=False)))


async def commit(txns: TransactionCoordinatorRuntime, producer_id: int) -> ErrorCode:
    response = await request(txns, lambda shard, token, now: shard.end_txn(
        token, TRANSACTIONAL_ID, producer_id, 0, True, now, client_version=1))
    return ErrorCode(response["error_code"])


async def initialized(txns: TransactionCoordinatorRuntime) -> int:
    """InitProducerId, its record replicated: the producer id."""
    init = init_producer_id(txns)
    await asyncio.sleep(0)  # the task runs up to its wait for the commit
    replicate(txns)
    response = await init
    assert response["error_code"] == ErrorCode.none
    return int(response["producer_id"])


def test_a_retry_after_a_timed_out_append_waits_for_the_commit(tmp_path: Path) -> None:
    """The anomaly's sequence: the append times out, the retry is not answered from the
    uncommitted record, and the producer's commit succeeds on the new coordinator."""
    async def scenario() -> None:
        leader = await leader_with_follower(tmp_path / "leader", QUICK_COMMIT_TIMEOUT)
        producer_id = await initialized(leader)
        # The follower never fetches the AddPartitionsToTxn record.
        first = await add_orders(leader, producer_id)
        assert first["error_code"] == ErrorCode.coordinator_not_available
        assert state_log(leader).high_watermark < state_log(leader).log_end_offset
        retry = await add_orders(leader, producer_id)
        coordinator = await new_coordinator(leader, tmp_path / "follower")
        if retry["error_code"] != ErrorCode.none:  # the producer retries, as librdkafka does
            assert (await add_orders(coordinator, producer_id))["error_code"] == ErrorCode.none
        # Before the fix the retry was answered NONE, and this commit INVALID_TXN_STATE.
        assert await commit(coordinator, producer_id) == ErrorCode.none
        assert retry["error_code"] == ErrorCode.coordinator_not_available
        coordinator.close()

    asyncio.run(scenario())


def test_a_request_on_state_being_replicated_waits_for_it(tmp_path: Path) -> None:
    """A second AddPartitionsToTxn (another connection's retry) finds the partition added by
    a record still being replicated: it is answered once that record is committed, not at
    once."""
    async def scenario() -> None:
        leader = await leader_with_follower(tmp_path / "leader", {})
        producer_id = await initialized(leader)
        first = add_orders(leader, producer_id)
        second = add_orders(leader, producer_id)
        await asyncio.sleep(0)  # both tasks run up to their waits
        assert not first.done()
        assert not second.done(), "answered before the follower has the record"
        replicate(leader)
        assert (await first)["error_code"] == ErrorCode.none
        assert (await second)["error_code"] == ErrorCode.none
        coordinator = await new_coordinator(leader, tmp_path / "follower")
        assert await commit(coordinator, producer_id) == ErrorCode.none
        coordinator.close()

    asyncio.run(scenario())


def test_a_shard_loaded_past_its_high_watermark_answers_once_committed(tmp_path: Path) -> None:
    """A reload (after a failed append) replays the log to its end: what it finds beyond the
    high watermark is not answered from until the follower has it."""
    async def scenario() -> None:
        leader = await leader_with_follower(tmp_path / "leader", QUICK_COMMIT_TIMEOUT)
        producer_id = await initialized(leader)
        first = await add_orders(leader, producer_id)
        assert first["error_code"] == ErrorCode.coordinator_not_available
        retry = add_orders(leader, producer_id)
        await asyncio.sleep(0)
        assert not retry.done(), "answered before the follower has the record"
        replicate(leader)
        assert (await retry)["error_code"] == ErrorCode.none
        coordinator = await new_coordinator(leader, tmp_path / "follower")
        assert await commit(coordinator, producer_id) == ErrorCode.none
        coordinator.close()

    asyncio.run(scenario())
