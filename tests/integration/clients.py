"""Produce and read back with confluent-kafka, kafka-python and aiokafka, in one record shape.

Consumers use explicit assignment only (consumer groups are not implemented yet): librdkafka
insists on a `group.id`, so it gets one, but never joins or commits. Readers first ask the
broker for the end offsets, then read every partition up to them, so a record too many is
caught as surely as a record too few.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as ATopicPartition
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from tests.waiting import wait_until

TIMEOUT = 20.0
PARTITION_UA = -1
"""librdkafka's 'unassigned': its partitioner chooses."""
Headers = tuple[tuple[str, bytes | None], ...]
KAFKA_PYTHON_METADATA_MAX_AGE_MS = 5000


def kafka_python_subscriber(topic: str, **config: Any) -> KafkaConsumer:
    """A kafka-python consumer subscribed to `topic` once its metadata holds the topic's
    partitions. kafka-python 3.0.12's group leader assigns from the metadata it holds as it
    joins: without the partitions it assigns nothing ("No partition metadata for topic"), and
    twice in CI it did not rejoin for 60 s, although metadata.max.age.ms (5 s here, not 300)
    refreshed it. It also forgets an update asked for while another is in flight."""
    consumer = KafkaConsumer(metadata_max_age_ms=KAFKA_PYTHON_METADATA_MAX_AGE_MS, **config)
    wait_until(lambda: consumer.partitions_for_topic(topic), TIMEOUT,
               f"kafka-python's metadata of {topic}")
    consumer.subscribe([topic])
    return consumer


class Out(NamedTuple):
    """A record to produce; `partition` None lets the client's partitioner choose."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = ()
    partition: int | None = None


class Rec(NamedTuple):
    """A record as stored: where it is and everything it holds."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = ()


def now_ms() -> int:
    return int(time.time() * 1000)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, *,
                 config: dict[str, str] | None = None, replication: int = 1,
                 assignment: list[list[int]] | None = None, timeout: float = TIMEOUT) -> str:
    """Creates topic `name` (with `partitions` of `replication` replicas, or the replicas of
    each partition in `assignment`) and waits for the controller's answer; returns `name`."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the future is done
    topic = (NewTopic(name, len(assignment), replica_assignment=assignment, config=config or {})
             if assignment else NewTopic(name, partitions, replication, config=config or {}))
    admin.create_topics([topic], request_timeout=timeout)[name].result(timeout)
    return name


def stored(out: Out, partition: int, offset: int) -> Rec:
    return Rec(partition, offset, out.key, out.value, out.timestamp, out.headers)


def _headers(raw: Any) -> Headers:
    """Each client's headers (list, tuple or None) as a tuple of (key, value) pairs."""
    return tuple((key, value) for key, value in raw or ())


def confluent_rec(message: Message) -> Rec:
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return Rec(partition, offset, message.key(), message.value(), message.timestamp()[1],
               _headers(message.headers()))


# --- producers -------------------------------------------------------------------------------


def produce_confluent(bootstrap: str, topic: str, outs: Sequence[Out],
                      config: dict[str, Any] | None = None) -> list[Rec]:
    """Produce with librdkafka; returns the acknowledged records in send order."""
    return deliver(Producer({"bootstrap.servers": bootstrap, **(config or {})}), topic, outs)


def produce_values(bootstrap: str, topic: str, values: Sequence[bytes],
                   partition: int | None = 0, **config: Any) -> list[Rec]:
    """Each of `values` as a record of `partition` (None: librdkafka's partitioner chooses),
    without a key, acknowledged (acks=all); the records as stored."""
    now = now_ms()
    return produce_confluent(bootstrap, topic, [Out(None, value, now, partition=partition)
                                                for value in values], config)


def numbered(count: int, size: int = 100) -> list[bytes]:
    """`count` distinct values of `size` bytes: each one's number, padded."""
    return [str(i).encode().rjust(size, b"x") for i in range(count)]


def deliver(producer: Producer, topic: str, outs: Sequence[Out],
            timeout: float = TIMEOUT) -> list[Rec]:
    """Produce with `producer` and flush; the acknowledged records in send order (raises
    the first delivery error)."""
    results: list[tuple[KafkaError | None, int, int] | None] = [None] * len(outs)

    def report(index: int) -> Any:
        def on_delivery(error: KafkaError | None, message: Any) -> None:
            results[index] = (error, message.partition(), message.offset())
        return on_delivery

    for index, out in enumerate(outs):
        producer.produce(topic, key=out.key, value=out.value, timestamp=out.timestamp,
                         partition=PARTITION_UA if out.partition is None else out.partition,
                         headers=list(out.headers) or None, on_delivery=report(index))
        producer.poll(0)
    assert producer.flush(timeout) == 0
    acked = []
    for out, result in zip(outs, results, strict=True):
        assert result is not None
        error, partition, offset = result
        if error is not None:
            raise KafkaException(error)
        acked.append(stored(out, partition, offset))
    return acked


def produce_transactions(bootstrap: str, topic: str, transactions: Sequence[Sequence[Out]],
                         aborted: Sequence[bool]) -> None:
    """Each group of records in a transaction of one librdkafka transactional producer, in
    order; transaction i is aborted (its records written, then an abort marker) when
    `aborted[i]`, committed otherwise."""
    writer = TransactionalWriter(bootstrap, unique("audit-txn"))
    for outs, abort in zip(transactions, aborted, strict=True):
        writer.write(topic, outs, commit=not abort)


class TransactionalWriter:
    """One librdkafka transactional producer writing groups of records, each in a
    transaction it commits or aborts (after the records were written to the log).

    `write_recovering` recovers as an application does when a broker kill fails a
    transaction: an abortable error aborts it, a fatal one (the coordinator's
    INVALID_TXN_STATE after its broker was killed) starts a new producer under the same
    transactional id, which fences the old one and aborts its transaction. Either way
    nothing of that transaction is committed; `recoveries` counts them."""

    def __init__(self, bootstrap: str, transactional_id: str, timeout: float = TIMEOUT,
                 **config: Any) -> None:
        self.config = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                       **config}
        self.timeout = timeout
        self.recoveries = 0
        self.producer = self._new_producer()

    def _new_producer(self) -> Producer:
        producer = Producer(self.config)
        producer.init_transactions(self.timeout)
        return producer

    def write(self, topic: str, outs: Sequence[Out], commit: bool) -> None:
        """One transaction of `outs`, committed or aborted; raises KafkaException."""
        self.producer.begin_transaction()
        for out in outs:
            self.producer.produce(
                topic, key=out.key, value=out.value, timestamp=out.timestamp,
                partition=PARTITION_UA if out.partition is None else out.partition,
                headers=list(out.headers) or None)
        if commit:
            self.producer.commit_transaction(self.timeout)
        else:
            assert self.producer.flush(self.timeout) == 0  # written to the log, then aborted
            self.producer.abort_transaction(self.timeout)

    def write_recovering(self, topic: str, outs: Sequence[Out], commit: bool) -> bool:
        """`write`; whether the transaction was committed (False: aborted, on purpose or to
        recover). An error that is neither abortable nor fatal is raised."""
        try:
            self.write(topic, outs, commit)
        except KafkaException as failure:
            error: KafkaError = failure.args[0]
            self.recoveries += 1
            if error.txn_requires_abort():
                self.producer.abort_transaction(self.timeout)
            elif error.fatal():
                self.producer = self._new_producer()
            else:
                raise
            return False
        return commit


def produce_kafka_python(bootstrap: str, topic: str, outs: Sequence[Out],
                         compression: str | None = None, **config: Any) -> list[Rec]:
    """kafka-python 3 defaults to idempotence, which needs InitProducerId: turned off."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False,
                             compression_type=compression, linger_ms=20, **config)
    try:
        futures = [
            producer.send(topic, key=out.key, value=out.value, partition=out.partition,
                          timestamp_ms=out.timestamp, headers=list(out.headers))
            for out in outs
        ]
        producer.flush(TIMEOUT)
        metadata = [future.get(TIMEOUT) for future in futures]
    finally:
        producer.close(TIMEOUT)
    return [stored(out, m.partition, m.offset) for out, m in zip(outs, metadata, strict=True)]


def produce_aiokafka(bootstrap: str, topic: str, outs: Sequence[Out],
                     compression: str | None = None, **config: Any) -> list[Rec]:
    async def run() -> list[Rec]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=compression,
                                    linger_ms=20, **config)
        await producer.start()
        try:
            futures = [
                await producer.send(topic, key=out.key, value=out.value,
                                    partition=out.partition, timestamp_ms=out.timestamp,
                                    headers=list(out.headers))
                for out in outs
            ]
            metadata = [await future for future in futures]
        finally:
            await producer.stop()
        return [stored(out, m.partition, m.offset) for out, m in zip(outs, metadata, strict=True)]

    return asyncio.run(run())


def produce_with(client: str, bootstrap: str, topic: str, outs: Sequence[Out],
                 compression: str | None = None) -> list[Rec]:
    if client == "confluent":
        config = {} if compression is None else {"compression.type": compression}
        return produce_confluent(bootstrap, topic, outs, config)
    if client == "kafka-python":
        return produce_kafka_python(bootstrap, topic, outs, compression)
    assert client == "aiokafka"
    return produce_aiokafka(bootstrap, topic, outs, compression)


# --- readers ---------------------------------------------------------------------------------


def in_order(records: list[Rec]) -> list[Rec]:
    """Checks that each partition came in offset order; sorts by (partition, offset)."""
    offsets: dict[int, list[int]] = {}
    for record in records:
        offsets.setdefault(record.partition, []).append(record.offset)
    assert all(o == sorted(o) for o in offsets.values()), offsets
    return sorted(records, key=lambda r: (r.partition, r.offset))


def confluent_consumer(bootstrap: str, **config: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": unique("unused"),
                     "enable.auto.commit": False, **config})


def receive(consumer: Consumer, count: int, timeout: float = TIMEOUT) -> list[Message]:
    """The next `count` records `consumer` delivers, skipping its error events; fails when
    fewer arrive within `timeout`."""
    messages: list[Message] = []

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            messages.append(message)

    wait_until(lambda: len(messages) >= count, timeout,
               lambda: f"{len(messages)} of {count} records", between=poll)
    return messages


def read_confluent(bootstrap: str, topic: str, partitions: Sequence[int] = (0,),
                   start: int = OFFSET_BEGINNING, isolation: str = "read_committed",
                   timeout: float = TIMEOUT) -> list[Rec]:
    """Every record of `partitions` from `start` (an offset or a logical one) to the end,
    sorted by (partition, offset), with `isolation` (librdkafka's default, read_committed,
    unless told). The end is the last stable offset, or with read_uncommitted the high
    watermark, as the partition's leader answers when the read starts. A
    partition is read once its last record is, or once the consumer reaches the end past
    control records (a transactional topic ends in a marker)."""
    consumer = confluent_consumer(bootstrap, **{"enable.partition.eof": True,
                                                "isolation.level": isolation})
    try:
        ends = {p: consumer.get_watermark_offsets(CTopicPartition(topic, p), timeout)[1]
                for p in partitions}
        consumer.assign([CTopicPartition(topic, p, start) for p in partitions])
        records: list[Rec] = []
        positions = {p: -1 for p in partitions}

        def consume() -> None:
            for message in consumer.consume(1000, 0.2):
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    positions[message.partition()] = max(positions[message.partition()],
                                                         message.offset() - 1)
                elif error is not None:
                    raise KafkaException(error)
                else:
                    record = confluent_rec(message)
                    records.append(record)
                    positions[record.partition] = record.offset

        wait_until(lambda: all(positions[p] + 1 >= ends[p] for p in partitions), timeout,
                   lambda: f"read {positions}, ends {ends}", between=consume)
        return in_order(records)
    finally:
        consumer.close()


def read_kafka_python(bootstrap: str, topic: str, partitions: Sequence[int] = (0,)) -> list[Rec]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tps = [KTopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        consumer.seek_to_beginning(*tps)
        records: list[Rec] = []

        def poll() -> None:
            for batch in consumer.poll(200).values():
                records.extend(Rec(r.partition, r.offset, r.key, r.value, r.timestamp,
                                   _headers(r.headers)) for r in batch)

        wait_until(lambda: all(consumer.position(tp) >= ends[tp] for tp in tps), TIMEOUT,
                   f"ends {ends}", between=poll)
        return in_order(records)
    finally:
        consumer.close()


def read_aiokafka(bootstrap: str, topic: str, partitions: Sequence[int] = (0,)) -> list[Rec]:
    async def run() -> list[Rec]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            tps = [ATopicPartition(topic, p) for p in partitions]
            consumer.assign(tps)
            ends = await consumer.end_offsets(tps)
            await consumer.seek_to_beginning(*tps)
            records: list[Rec] = []
            try:
                async with asyncio.timeout(TIMEOUT):
                    while any([await consumer.position(tp) < ends[tp] for tp in tps]):
                        for batch in (await consumer.getmany(timeout_ms=200)).values():
                            records.extend(Rec(r.partition, r.offset, r.key, r.value,
                                               r.timestamp, _headers(r.headers))
                                           for r in batch)
            except TimeoutError:
                raise AssertionError(f"not within {TIMEOUT}s: ends {ends}") from None
            return in_order(records)
        finally:
            await consumer.stop()

    return asyncio.run(run())


READERS = {"confluent": read_confluent, "kafka-python": read_kafka_python,
           "aiokafka": read_aiokafka}
CLIENTS = tuple(READERS)


def read_with(client: str, bootstrap: str, topic: str,
              partitions: Sequence[int] = (0,)) -> list[Rec]:
    return READERS[client](bootstrap, topic, partitions)


def stored_codecs(data_dir: Path, topic: str, partition: int = 0) -> list[int]:
    """The compression codec of every batch in the partition's segment files, read from the
    raw bytes (batch length at 8, attributes at 21) rather than through the broker's code."""
    codecs = []
    for path in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        data = path.read_bytes()
        position = 0
        while position + 23 <= len(data):
            length = int.from_bytes(data[position + 8 : position + 12], "big")
            codecs.append(int.from_bytes(data[position + 21 : position + 23], "big") & 0x7)
            position += 12 + length
    return codecs
