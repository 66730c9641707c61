"""read_committed beside Apache Kafka, for issue 28's anomaly B: a kafka-python group
committed offset 101 after receiving records at 102 and later, on a partition with an aborted
transaction.

The same three transactions (committed, aborted, committed; each record written before its
transaction ends) go to Odradek and to Apache Kafka 4.3.1, so both logs hold the same
offsets. Their read_committed Fetch answers agree at every offset and size that cuts through
the layout: the batches (offsets, counts, control and transactional flags, marker types), the
high watermark, the last stable offset and the aborted-transaction list. kafka-python 3.0.12
then reads both in groups with the anomaly's polling (`max_records` the records still
wanted) and commits: the same records and the same committed offsets on both, never at or
below a record it handed out. Last, the rebalance mechanism that can give the anomaly's shape:
a group member reads past the aborted transaction without committing, a second member joins
and takes the partition, re-reads it from the earliest offset and commits part-way, below
records already handed out; the same offsets on both brokers."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import CommitFailedError, RebalanceInProgressError
from kafka.protocol.consumer import FetchRequest, FetchResponse

from odradek.protocol.control import read_marker
from odradek.protocol.records import iter_batches
from tests.integration.apache_kafka import ApacheKafka
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import TIMEOUT, create_topic, kafka_python_subscriber
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

TOPIC = "orders"
PER_TRANSACTION = 50
TRANSACTIONS = ((False, "v"), (True, "aborted"), (False, "v"))
"""(aborted, value prefix) of each transaction, in order."""
LOG_END = 3 * (PER_TRANSACTION + 1)
"""0-49 committed, 50 its marker, 51-100 aborted, 101 its marker, 102-151, 152 its marker."""
READ_COMMITTED = 1
FETCH_VERSION = 11
FETCH_OFFSETS = (0, 49, 50, 51, 75, 100, 101, 102, 151, 152, 153)
WANTED = (1, 49, 50, 51, 60, 100)
"""Records each group reads before it commits: cuts before, at and after each marker."""
COMMITTED_RECORDS = [*range(PER_TRANSACTION), *range(2 * (PER_TRANSACTION + 1), LOG_END - 1)]
"""The offsets read_committed hands out: 0-49 and 102-151."""
REREAD = 25
"""Records the member that takes the partition over reads before it commits: within 0-49."""
FIRST_CLIENT_ID = "z-first-generation"
SECOND_CLIENT_ID = "a-second-generation"
"""Both brokers name a classic member by its client id, a dash and a UUID, and the range
assignor gives the one partition to the first member id in order: the second member takes it.
(kafka-python 3.0.12 keeps the position of a partition a member keeps across an eager
rebalance: only a member newly given the partition starts from the committed offset.)"""
KAFKA_START_TIMEOUT = 300.0
"""A JVM formatting and starting a KRaft node on the shared 2-core machine."""


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Odradek and Apache Kafka, each with the transactions written: name -> bootstrap."""
    root = tmp_path_factory.mktemp("brokers")
    odradek = BrokerProcess(root / "odradek", root / "odradek.log")
    kafka = ApacheKafka(root / "kafka", root / "kafka.log")
    try:
        odradek.start()
        kafka.start(KAFKA_START_TIMEOUT)
        both = {"odradek": odradek.bootstrap, "kafka": kafka.bootstrap}
        for bootstrap in both.values():
            write_transactions(bootstrap)
        yield both
    finally:
        for process in (odradek, kafka):
            if process.process is not None and process.alive():
                process.stop()


def write_transactions(bootstrap: str) -> None:
    create_topic(bootstrap, TOPIC)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "anomaly-b"})
    producer.init_transactions(TIMEOUT)
    for number, (aborted, prefix) in enumerate(TRANSACTIONS):
        producer.begin_transaction()
        for i in range(PER_TRANSACTION):
            producer.produce(TOPIC, f"{prefix}-{number}-{i}".encode(), partition=0)
        assert producer.flush(TIMEOUT) == 0  # written to the log before the transaction ends
        if aborted:
            producer.abort_transaction(TIMEOUT)
        else:
            producer.commit_transaction(TIMEOUT)
    client = RawClient(bootstrap)
    try:  # the last marker is written after EndTxn is answered
        wait_until(lambda: fetch(client, LOG_END)["last_stable_offset"] == LOG_END, TIMEOUT,
                   "the last marker written")
    finally:
        client.close()


def fetch(client: RawClient, offset: int, max_bytes: int = 1 << 20) -> dict[str, Any]:
    """A read_committed Fetch of the partition, with its batches' headers, the producer id
    left out (each broker assigns its own)."""
    partition = FetchRequest[FETCH_VERSION].FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
        partition_max_bytes=max_bytes)
    request = FetchRequest[FETCH_VERSION](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
        isolation_level=READ_COMMITTED, session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[partition])],
        forgotten_topics_data=[], rack_id="")
    response = client.request(request, FetchResponse, FETCH_VERSION)
    (answer,) = response.responses[0].partitions
    records = bytes(answer.records or b"")
    return {
        "error_code": answer.error_code, "high_watermark": answer.high_watermark,
        "last_stable_offset": answer.last_stable_offset,
        "log_start_offset": answer.log_start_offset,
        "aborted_transactions": None if answer.aborted_transactions is None else sorted(
            a.first_offset for a in answer.aborted_transactions),
        "batches": [(b.base_offset, b.next_offset, b.is_transactional, b.is_control,
                     read_marker(records[b.position:b.end])[0] if b.is_control else None)
                    for b in iter_batches(records)],
    }


def test_the_logs_have_the_same_layout(brokers: dict[str, str]) -> None:
    layouts = {}
    for name, bootstrap in brokers.items():
        client = RawClient(bootstrap)
        try:
            layouts[name] = fetch(client, 0)["batches"]
        finally:
            client.close()
    assert [(base, end) for base, end, *_ in layouts["kafka"]] == [
        (0, 50), (50, 51), (51, 101), (101, 102), (102, 152), (152, 153)]
    assert layouts["odradek"] == layouts["kafka"]


@pytest.mark.parametrize("max_bytes", [1 << 20, 1], ids=["whole", "one-batch"])
def test_read_committed_fetch_answers_as_kafka(brokers: dict[str, str], max_bytes: int) -> None:
    """Every field a read_committed consumer acts on, at offsets around each marker."""
    answers: dict[str, list[dict[str, Any]]] = {}
    for name, bootstrap in brokers.items():
        client = RawClient(bootstrap)
        try:
            answers[name] = [fetch(client, offset, max_bytes) for offset in FETCH_OFFSETS]
        finally:
            client.close()
    for offset, ours, kafkas in zip(FETCH_OFFSETS, answers["odradek"], answers["kafka"],
                                    strict=True):
        assert ours == kafkas, f"fetch at {offset} ({max_bytes} bytes)"
    assert answers["kafka"][FETCH_OFFSETS.index(51)]["aborted_transactions"] == [51]


def group_reader(bootstrap: str, group: str, **config: Any) -> KafkaConsumer:
    """A kafka-python member of `group` as the anomaly's: read_committed, committing only
    when told, from the earliest offset while the group has none."""
    return kafka_python_subscriber(TOPIC, bootstrap_servers=bootstrap, group_id=group,
                                   enable_auto_commit=False, auto_offset_reset="earliest",
                                   isolation_level="read_committed", **config)


def read_then_commit(bootstrap: str, group: str, wanted: int) -> tuple[list[int], int]:
    """kafka-python reads `wanted` records in a group as the anomaly's consumer did, then
    commits its position: (offsets handed out, offset committed)."""
    consumer = group_reader(bootstrap, group)
    offsets: list[int] = []
    try:
        def poll() -> None:
            for records in consumer.poll(200, max_records=wanted - len(offsets)).values():
                offsets.extend(record.offset for record in records)

        wait_until(lambda: len(offsets) >= wanted, TIMEOUT, f"{wanted} records", between=poll)
        consumer.commit()
        committed = consumer.committed(TopicPartition(TOPIC, 0))
        assert committed is not None
        return offsets, committed
    finally:
        consumer.close()


_groups = itertools.count()


@pytest.mark.parametrize("wanted", WANTED)
def test_kafka_python_commits_the_same_offsets(brokers: dict[str, str], wanted: int) -> None:
    results = {name: read_then_commit(bootstrap, f"anomaly-b-{next(_groups)}", wanted)
               for name, bootstrap in brokers.items()}
    offsets, committed = results["odradek"]
    assert len(offsets) == wanted
    assert not set(offsets) & set(range(51, 102)), "aborted records read"
    assert committed > max(offsets), f"committed {committed} after reading {max(offsets)}"
    assert results["odradek"] == results["kafka"]


def reread_after_rebalance(bootstrap: str, group: str) -> tuple[list[int], list[int], int]:
    """Member A reads every record and commits nothing; member B joins the group, takes the
    partition over, reads `REREAD` records and commits: (offsets A handed out, offsets B
    handed out, offset committed).

    Both are polled until the group settles, B with its partition paused once it has its
    records: kafka-python 3.0.12 drops a JoinGroup/SyncGroup that completes while its
    consumer is outside poll() and joins again, and the leader rejoining a stable group
    starts another rebalance (on either broker), which only completes once B rejoins too.
    B keeps the partition, its position and its pause through it."""
    partition = TopicPartition(TOPIC, 0)
    first: list[int] = []
    second: list[int] = []
    a = group_reader(bootstrap, group, client_id=FIRST_CLIENT_ID)
    b: KafkaConsumer | None = None
    try:
        def poll_a() -> None:
            for records in a.poll(200).values():
                first.extend(record.offset for record in records)

        wait_until(lambda: len(first) >= len(COMMITTED_RECORDS), TIMEOUT,
                   lambda: f"{group}: A's records {first}", between=poll_a)
        assert a.committed(partition) is None, f"{group}: A committed"
        b = group_reader(bootstrap, group, client_id=SECOND_CLIENT_ID)

        def poll_both() -> None:  # A rejoins as it polls, and B
            assert b is not None
            poll_a()
            for records in b.poll(200, max_records=max(REREAD - len(second), 1)).values():
                second.extend(record.offset for record in records)
            if len(second) >= REREAD and not b.paused():
                b.pause(partition)

        wait_until(lambda: (not a.assignment() and b.assignment() == {partition}
                            and len(second) >= REREAD), TIMEOUT,
                   lambda: (f"{group}: A assigned {a.assignment()}, B assigned "
                            f"{b.assignment()} and handed out {second}"), between=poll_both)
        # a rebalance B has not finished yet fails the commit: poll() finishes it (kafka-python)
        wait_until(lambda: b.commit() is None, TIMEOUT, f"{group}: B's commit", between=poll_both,
                   ignoring=(RebalanceInProgressError, CommitFailedError))
        committed = b.committed(partition)
        assert committed is not None, f"{group}: B's commit"
        return first, second, committed
    finally:
        if b is not None:
            b.close()
        a.close()


def test_a_rebalance_rereads_below_records_handed_out(brokers: dict[str, str]) -> None:
    """At-least-once across a rebalance: records one generation handed out and did not commit
    are handed out again from the committed offset (none: the earliest) in the next, so a
    commit part-way through the re-read is below records already handed out."""
    results = {name: reread_after_rebalance(bootstrap, f"anomaly-b-{name}-{next(_groups)}")
               for name, bootstrap in brokers.items()}
    for name in ("kafka", "odradek"):
        first, second, committed = results[name]
        assert first == COMMITTED_RECORDS, f"{name}: A handed out {first}"
        assert second == list(range(REREAD)), f"{name}: B, from the earliest, handed out {second}"
        assert set(second) <= set(first), (
            f"{name}: B handed out records A had not: {sorted(set(second) - set(first))}")
        assert committed == second[-1] + 1, f"{name}: B committed {committed} after {second[-1]}"
        assert committed < min(offset for offset in first if offset >= 102), (
            f"{name}: committed {committed}, not below A's records from 102 on: {first}")
    assert results["odradek"] == results["kafka"], (
        f"odradek (A's, B's, committed) {results['odradek']}, kafka {results['kafka']}")
