"""An abort of a commit whose markers wait, beside Apache Kafka: the fatal INVALID_TXN_STATE
the long fault campaigns show, explained.

In the hour-long campaigns a transactional producer of the workload got a fatal
INVALID_TXN_STATE from EndTxn now and then, always right after one of its commits had sat in
PrepareCommit for more than 30 s (the workload's `transaction.timeout.ms` and
`message.timeout.ms`) while the faults kept a partition's leader from taking its marker:

1. The coordinator answers EndTxn(commit) once PrepareCommit is written, so the
   application's commit succeeds; the markers are written after.
2. The next transaction's AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS while they are
   pending, so its records are never sent and time out: an abortable error.
3. The application aborts. When an AddPartitionsToTxn was unanswered at that moment,
   librdkafka cannot tell whether the partition was added and sends EndTxn(abort) (else it
   aborts locally), although the coordinator's transaction is the committed one.

Kafka answers that abort CONCURRENT_TRANSACTIONS while the markers are written (its pending
transition to CompleteCommit is checked before the result asked for), so the client waits;
once the commit is complete, aborting it is an invalid transition: INVALID_TXN_STATE, which
librdkafka treats as fatal. Odradek answered INVALID_TXN_STATE at once, before the markers
were written; it now waits as Kafka does (`_repeated_end` in `odradek/txn/coordinator.py`).
The fatal error itself is Kafka's answer too.

Here, on three brokers of each system, a confluent-kafka producer commits one record while
the leader of its partition is frozen (SIGSTOP; sessions outlast the freeze, so it stays
the leader and the marker waits), and EndTxn(abort) is sent raw, as librdkafka's would be,
before and after the leader runs again."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.admin import DescribeTransactionsRequest, DescribeTransactionsResponse
from kafka.protocol.producer import EndTxnRequest, EndTxnResponse
from kio.schema.errors import ErrorCode

from bench.sidebyside import kafka_cluster
from odradek.cli.cluster.layout import free_port
from tests.integration.clients import TIMEOUT, create_topic, read_confluent
from tests.integration.cluster import running_cluster
from tests.integration.raw_client import RawClient
from tests.integration.test_share_offsets import coordinator_of
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]
"""Three JVMs and a controller start within the test's setup, beside the other layers."""

TRANSACTIONAL_ID = "held-markers"
HELD = "held"
"""The committed transaction's topic, whose leader is frozen."""
SETTINGS = {"broker.session.timeout.ms": "60000", "replica.lag.time.max.ms": "2000"}
"""Sessions outlast the freeze; the frozen broker leaves the ISR of `__transaction_state`
soon, so PrepareCommit is committed without it."""

Freeze = Callable[[int, bool], None]
"""freeze(node id, frozen): SIGSTOP or SIGCONT one broker."""


@pytest.fixture(params=["odradek", "kafka"])
def system(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Freeze]]:
    """Three brokers and one controller of Odradek or of Apache Kafka: (bootstrap, freeze)."""
    if request.param == "odradek":
        with running_cluster(tmp_path / "odradek", 1, 3, SETTINGS) as cluster:
            yield cluster.bootstrap, lambda node, frozen: (
                cluster.pause if frozen else cluster.resume)(f"broker-{node}")
        return
    data, port = tmp_path / "kafka", free_port()
    kafka_cluster.up(data, port, [f"{key}={value}" for key, value in SETTINGS.items()])

    def freeze(node: int, frozen: bool) -> None:
        pid = int((data / f"broker-{node}.pid").read_text())
        os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    try:
        yield f"127.0.0.1:{port}", freeze
    finally:
        kafka_cluster.down(data)


def transactional(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID,
                         "acks": "all", "log_level": 0})
    producer.init_transactions(TIMEOUT)
    return producer


def describe(client: RawClient) -> Any:
    response = client.request(DescribeTransactionsRequest[0](
        transactional_ids=[TRANSACTIONAL_ID]), DescribeTransactionsResponse, 0)
    (state,) = response.transaction_states
    return state


def end_txn(client: RawClient, state: Any, committed: bool) -> ErrorCode:
    """EndTxn v3 (transaction version 1, librdkafka's) for the described producer."""
    response = client.request(EndTxnRequest[3](
        transactional_id=TRANSACTIONAL_ID, producer_id=state.producer_id,
        producer_epoch=state.producer_epoch, committed=committed), EndTxnResponse, 3)
    return ErrorCode(response.error_code)


def test_an_abort_of_a_commit_waits_for_its_markers_then_is_invalid(
        system: tuple[str, Freeze]) -> None:
    bootstrap, freeze = system
    producer = transactional(bootstrap)
    coordinator, port = coordinator_of(bootstrap, TRANSACTIONAL_ID, key_type=1)
    frozen, other = [node for node in (1, 2, 3) if node != coordinator]
    create_topic(bootstrap, HELD, assignment=[[frozen, other, coordinator]])
    producer.begin_transaction()
    producer.produce(HELD, b"committed")
    assert producer.flush(TIMEOUT) == 0
    with RawClient(f"127.0.0.1:{port}", timeout=TIMEOUT) as client:
        freeze(frozen, True)
        try:
            producer.commit_transaction(TIMEOUT)  # answered once PrepareCommit is committed
            prepared = describe(client)
            assert prepared.transaction_state == "PrepareCommit"
            assert end_txn(client, prepared, committed=False) == \
                ErrorCode.concurrent_transactions
            assert end_txn(client, prepared, committed=True) == \
                ErrorCode.concurrent_transactions
        finally:
            freeze(frozen, False)
        wait_until(lambda: describe(client).transaction_state == "CompleteCommit", TIMEOUT,
                   "the markers written")
        assert end_txn(client, prepared, committed=False) == ErrorCode.invalid_txn_state
        assert end_txn(client, prepared, committed=True) == ErrorCode.none
    assert [r.value for r in read_confluent(bootstrap, HELD)] == [b"committed"]
