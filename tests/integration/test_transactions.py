"""Transactions with confluent-kafka against one broker: commit and abort under both isolation
levels, zombie fencing, coordinator timeouts, exactly-once consume-transform-produce across a
crash, and the transactions CLI and metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from kio.schema.errors import ErrorCode

from odradek.protocol.record_codec import build_batch
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import create_topic, read_confluent, unique
from tests.integration.cluster import scrape
from tests.integration.raw_client import RawClient, now_ms
from tests.waiting import wait_until

TXN_OVERRIDES = {
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("txn")
    process = BrokerProcess(root / "data", root / "broker.log", TXN_OVERRIDES)
    process.start()
    yield process
    if process.alive():
        process.stop()


def transactional(bootstrap: str, transactional_id: str, **extra: Any) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5, **extra})
    producer.init_transactions(30)
    return producer


def stable_offset(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                         "isolation.level": "read_committed"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1])
    finally:
        consumer.close()


def test_committed_and_aborted_transactions_under_both_isolation_levels(
        txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, unique("tx"), partitions=2)
    producer = transactional(bootstrap, f"ca-{topic}")
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, f"commit-{i}".encode(), partition=i % 2)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, f"abort-{i}".encode(), partition=i % 2)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"commit-last", partition=0)
    producer.commit_transaction(30)

    committed = read_confluent(bootstrap, topic, (0, 1))
    uncommitted = read_confluent(bootstrap, topic, (0, 1), isolation="read_uncommitted")
    values = sorted(r.value for r in committed)
    assert values == sorted([f"commit-{i}".encode() for i in range(10)] + [b"commit-last"])
    assert sorted(r.value for r in uncommitted) == sorted(
        values + [f"abort-{i}".encode() for i in range(10)]), "no markers, every data record"
    # 21 data records and 3 markers in each partition's offsets: markers take offsets
    assert max(r.offset for r in uncommitted if r.partition == 0) > 11


def test_a_second_producer_with_the_same_id_fences_the_first(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, unique("tx"), partitions=2)
    transactional_id = f"zombie-{topic}"
    zombie = transactional(bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic, b"from-the-zombie", partition=0)
    zombie.flush(10)
    successor = transactional(bootstrap, transactional_id)
    successor.begin_transaction()
    successor.produce(topic, b"from-the-successor", partition=0)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(10)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    values = [r.value for r in read_confluent(bootstrap, topic, (0, 1))]
    assert values == [b"from-the-successor"], "the zombie's open transaction was aborted"


def test_an_abandoned_transaction_is_aborted_at_its_timeout(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, unique("tx"), partitions=1)
    abandoned = transactional(bootstrap, f"abandon-{topic}", **{"transaction.timeout.ms": 2000})
    abandoned.begin_transaction()
    for i in range(5):
        abandoned.produce(topic, f"never-{i}".encode(), partition=0)
    abandoned.flush(10)
    assert stable_offset(bootstrap, topic, 0) == 0, "the open transaction holds the LSO"
    before = scrape(txn_broker.metrics_port)
    waited = wait_until(lambda: stable_offset(bootstrap, topic, 0) == 6, timeout=30,
                        what="the coordinator to abort the transaction", ignoring=Exception)
    print(f"\nabandoned transaction aborted {waited:.1f}s after the check started")
    after = scrape(txn_broker.metrics_port)
    name = "kafka_server_transaction_coordinator_metrics_timed_out_aborts_total"
    assert after[name] >= before.get(name, 0) + 1
    assert read_confluent(bootstrap, topic) == []


TRANSFORM = """
import sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, source, sink, crash_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "transformer",
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "transformer-" + sink})
producer.init_transactions(30)
partitions = [TopicPartition(source, p) for p in (0, 1)]
committed = consumer.committed(partitions, 30)
consumer.assign([TopicPartition(source, tp.partition, max(tp.offset, 0)) for tp in committed])
ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), 30)[1] for p in (0, 1)}
done = 0
while any(consumer.position([TopicPartition(source, p)])[0].offset < ends[p] for p in ends):
    batch = consumer.consume(20, 1.0)
    if not batch:
        continue
    producer.begin_transaction()
    for message in batch:
        assert message.error() is None, message.error()
        producer.produce(sink, message.value().upper(), partition=message.partition())
    done += len(batch)
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    if crash_after and done >= crash_after:
        producer.flush(30)
        print("crashing mid-transaction", flush=True)
        time.sleep(60)  # hangs mid-transaction until the test kills it
    producer.commit_transaction(30)
print("transformed", done, flush=True)
consumer.close()
"""


def test_consume_transform_produce_is_exactly_once_across_a_crash(
        txn_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = txn_broker.bootstrap
    source, sink = (create_topic(bootstrap, unique("tx"), partitions=2) for _ in range(2))
    inputs = [f"record-{i:04d}".encode() for i in range(300)]
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i, value in enumerate(inputs):
        producer.produce(source, value, partition=i % 2)
    assert producer.flush(30) == 0
    script = tmp_path / "transform.py"
    script.write_text(TRANSFORM)
    crashing = subprocess.Popen([sys.executable, str(script), bootstrap, source, sink, "120"],
                                stdout=subprocess.PIPE, text=True)
    assert crashing.stdout is not None
    assert "crashing" in crashing.stdout.readline()
    crashing.kill()
    crashing.wait()
    finished = subprocess.run([sys.executable, str(script), bootstrap, source, sink, "0"],
                              capture_output=True, text=True, timeout=180, check=True)
    assert "transformed" in finished.stdout
    outputs = [r.value for r in read_confluent(bootstrap, sink, (0, 1))]
    assert sorted(outputs) == sorted(value.upper() for value in inputs), (
        f"{len(outputs)} outputs for {len(inputs)} inputs")


def test_the_transactions_cli_lists_describes_and_aborts(txn_broker: BrokerProcess) -> None:
    bootstrap = txn_broker.bootstrap
    topic = create_topic(bootstrap, unique("tx"), partitions=1)
    transactional_id = f"cli-{topic}"
    hanging = transactional(bootstrap, transactional_id)
    hanging.begin_transaction()
    hanging.produce(topic, b"hanging", partition=0)
    hanging.flush(10)

    def cli(*args: str) -> str:
        return subprocess.run([*ODRADEK, "transactions", "--bootstrap-server", bootstrap, *args],
                              capture_output=True, text=True, timeout=60, check=True).stdout

    metrics = scrape(txn_broker.metrics_port)
    assert metrics["kafka_server_transaction_coordinator_metrics_ongoing_transactions"] >= 1
    assert metrics["kafka_server_transaction_coordinator_metrics_producer_ids_allocated_total"] >= 1
    assert metrics["kafka_server_replicamanager_produceridcount"] >= 1
    listed = cli("list")
    assert transactional_id in listed and "Ongoing" in listed
    described = cli("describe", "--transactional-id", transactional_id)
    assert "Ongoing" in described and f"{topic}-0" in described
    producers = cli("describe-producers", "--topic", topic, "--partition", "0")
    assert "CurrentTransactionStartOffset" in producers and "0" in producers
    (producer,) = json.loads(cli("--json", "describe-producers", "--topic", topic,
                                 "--partition", "0"))
    assert producer["CurrentTransactionStartOffset"] == 0
    listed_json = json.loads(cli("--json", "list"))
    assert {"TransactionalId": transactional_id, "TransactionState": "Ongoing"}.items() <= next(
        row for row in listed_json if row["TransactionalId"] == transactional_id).items()
    cli("abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    wait_until(lambda: stable_offset(bootstrap, topic, 0) == 2, timeout=30,
               what="the hanging transaction to be aborted", ignoring=Exception)
    assert read_confluent(bootstrap, topic) == []


def _txn_batch(producer_id: int, epoch: int, sequence: int) -> bytes:
    return build_batch([(None, f"txn-{sequence}".encode())], timestamp_ms=now_ms(),
                       producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                       is_transactional=True)


def test_kip_890_a_late_transactional_write_cannot_start_a_transaction(
        txn_broker: BrokerProcess) -> None:
    """The leader asks the coordinator before a producer's first transactional batch in a
    partition: a batch for a partition never added, or one arriving after its transaction
    ended, is refused (INVALID_TXN_STATE) instead of opening a transaction no one ends."""
    topic = create_topic(txn_broker.bootstrap, unique("tx"), partitions=1)
    tid = f"kip890-{topic}"
    client = RawClient(txn_broker.bootstrap)
    try:
        def init() -> Any:
            return client.request(InitProducerIdRequest[4](
                transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1,
                producer_epoch=-1), InitProducerIdResponse, 4)

        wait_until(lambda: init().error_code == 0, what="InitProducerId", ignoring=Exception)
        started = init()
        pid, epoch = started.producer_id, started.producer_epoch
        unadded = client.produce_partition(topic, 0, _txn_batch(pid, epoch, 0), acks=-1,
                                           transactional_id=tid)
        assert unadded.error_code == ErrorCode.invalid_txn_state
        unadded_v11 = client.produce_partition(topic, 0, _txn_batch(pid, epoch, 0), acks=-1,
                                               transactional_id=tid, version=11)
        assert unadded_v11.error_code == ErrorCode.transaction_abortable, "KIP-890's new error"
        added = client.request(AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest[3].AddPartitionsToTxnTopic(
                name=topic, partitions=[0])]),
            AddPartitionsToTxnResponse, 3)
        (result,) = added.results_by_topic_v3_and_below[0].results_by_partition
        assert result.partition_error_code == 0
        first = client.produce_partition(topic, 0, _txn_batch(pid, epoch, 0), acks=-1,
                                         transactional_id=tid)
        assert (first.error_code, first.base_offset) == (0, 0)
        ended = client.request(EndTxnRequest[3](transactional_id=tid, producer_id=pid,
                                                producer_epoch=epoch, committed=True),
                               EndTxnResponse, 3)
        assert ended.error_code == 0
        wait_until(lambda: stable_offset(txn_broker.bootstrap, topic, 0) == 2,
                   what="the commit marker", ignoring=Exception)
        late = client.produce_partition(topic, 0, _txn_batch(pid, epoch, 1), acks=-1,
                                        transactional_id=tid)
        assert late.error_code == ErrorCode.invalid_txn_state
        assert client.latest_offset(topic, 0) == 2, "the late batch was not appended"
    finally:
        client.close()
