"""Real clients against a real broker: confluent-kafka (librdkafka), kafka-python, aiokafka and
kcat, each producing and each reading back, with exact contents compared.

Records carry explicit CreateTime timestamps, so a read-back record must equal the acknowledged
one in partition, offset, key, value, timestamp and headers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import shutil
import subprocess
from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as ATopicPartition
from confluent_kafka import OFFSET_END, KafkaError, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kafka.errors import MessageSizeTooLargeError

from odradek.broker.apis import api_versions
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    CLIENTS,
    TIMEOUT,
    Headers,
    Out,
    Rec,
    confluent_consumer,
    confluent_rec,
    create_topic,
    now_ms,
    produce_confluent,
    produce_kafka_python,
    produce_with,
    read_confluent,
    read_with,
    stored_codecs,
    unique,
)

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""Kafka's compression codec ids, the low three bits of a batch's attributes."""
KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def values_of(records: Sequence[Rec], key: bytes) -> list[bytes | None]:
    return [r.value for r in records if r.key == key]


def digested(records: Sequence[Rec]) -> list[Rec]:
    """Values replaced by their SHA-256, so a mismatch of large records prints short."""
    return [r._replace(value=hashlib.sha256(r.value or b"").hexdigest().encode())
            for r in records]


# --- keyed produce and consume ---------------------------------------------------------------


@pytest.mark.parametrize("producer", CLIENTS)
def test_keyed_records_keep_per_key_order_for_every_reader(
    broker: BrokerProcess, producer: str
) -> None:
    topic = create_topic(broker.bootstrap, unique(f"keyed-{producer}"), partitions=3)
    keys = [f"key-{k}".encode() for k in range(6)]
    base = now_ms() - 60_000
    outs = [Out(key, f"{producer}:{key.decode()}:{i}".encode(), base + 10 * i + k)
            for i in range(15) for k, key in enumerate(keys)]

    acked = produce_with(producer, broker.bootstrap, topic, outs)

    for key in keys:
        assert len({r.partition for r in acked if r.key == key}) == 1
        assert values_of(acked, key) == [o.value for o in outs if o.key == key]
    for partition in range(3):
        offsets = sorted(r.offset for r in acked if r.partition == partition)
        assert offsets == list(range(len(offsets)))
    for reader in CLIENTS:
        read = read_with(reader, broker.bootstrap, topic, range(3))
        assert read == sorted(acked, key=lambda r: (r.partition, r.offset)), reader
        for key in keys:
            assert values_of(read, key) == [o.value for o in outs if o.key == key], reader


# --- headers ---------------------------------------------------------------------------------

HEADERS: Headers = (
    ("trace-id", b"4bf92f3577b34da6"),
    ("null", None),
    ("binary", bytes(range(256))),
    ("dup", b"first"),
    ("dup", b"second"),
    ("", b"empty key"),
    ("ключ", "значение".encode()),
)


@pytest.mark.parametrize("producer", CLIENTS)
def test_headers_round_trip(broker: BrokerProcess, producer: str) -> None:
    topic = create_topic(broker.bootstrap, unique(f"headers-{producer}"))
    headers: Headers = HEADERS
    if producer == "kafka-python":
        # kafka-python's producer refuses a None header value (TypeError); it reads them fine.
        headers = tuple((k, b"" if v is None else v) for k, v in HEADERS)
    base = now_ms() - 60_000
    outs = [
        Out(b"k0", b"with headers", base, headers, partition=0),
        Out(b"k1", b"no headers", base + 1, partition=0),
        Out(b"k2", None, base + 2, (("tombstone", b"\x00\xff"),), partition=0),
        Out(None, b"\x00\x01\xfe\xff", base + 3, headers[::-1], partition=0),
    ]

    acked = produce_with(producer, broker.bootstrap, topic, outs)

    assert [r.offset for r in acked] == [0, 1, 2, 3]
    for reader in CLIENTS:
        assert read_with(reader, broker.bootstrap, topic) == acked, reader


# --- compression -----------------------------------------------------------------------------


@pytest.mark.parametrize(("producer", "codec"), [
    pytest.param(producer, codec, id=f"{producer}-{codec}")
    for producer in CLIENTS for codec in CODECS
])
def test_compressed_batches_are_stored_as_sent_and_read_by_every_client(
    broker: BrokerProcess, producer: str, codec: str
) -> None:
    topic = create_topic(broker.bootstrap, unique(f"{codec}-{producer}"))
    base = now_ms() - 60_000
    outs = [
        Out(f"k{i % 4}".encode(), f"{codec} record {i} ".encode() + b"compressible " * 40,
            base + i, (("n", str(i).encode()),), partition=0)
        for i in range(40)
    ]

    acked = produce_with(producer, broker.bootstrap, topic, outs, compression=codec)

    assert [r.offset for r in acked] == list(range(40))
    codecs = stored_codecs(broker.data_dir, topic)
    assert codecs and set(codecs) == {CODECS[codec]}
    assert len(codecs) < 40  # batched, so the codec had more than one record to work on
    for reader in CLIENTS:
        assert read_with(reader, broker.bootstrap, topic) == acked, reader


# --- record size -----------------------------------------------------------------------------


def test_900_kb_records_from_every_client_are_read_by_every_client(
    broker: BrokerProcess,
) -> None:
    topic = create_topic(broker.bootstrap, unique("large"))
    rng = random.Random(900)
    base = now_ms() - 60_000

    acked: list[Rec] = []
    for i, producer in enumerate(CLIENTS):
        out = Out(producer.encode(), rng.randbytes(900 * 1024), base + i, partition=0)
        acked += produce_with(producer, broker.bootstrap, topic, [out])

    assert [r.offset for r in acked] == [0, 1, 2]
    for reader in CLIENTS:
        assert digested(read_with(reader, broker.bootstrap, topic)) == digested(acked), reader


def test_two_megabyte_record_is_refused_with_message_too_large(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("too-large"))
    big = Out(b"big", b"x" * (2 * 1024 * 1024), now_ms(), partition=0)

    with pytest.raises(KafkaException) as excinfo:
        produce_confluent(broker.bootstrap, topic, [big], {"message.max.bytes": 3_000_000})
    with pytest.raises(MessageSizeTooLargeError):
        produce_kafka_python(broker.bootstrap, topic, [big], max_request_size=3_000_000)

    assert excinfo.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    # both were refused by the broker, not by a client-side size check
    assert broker.logs().count(f"rejected produce to {topic}-0: batch of") == 2
    small = produce_confluent(broker.bootstrap, topic, [big._replace(value=b"small")])
    assert [r.offset for r in small] == [0]
    assert read_confluent(broker.bootstrap, topic) == small


# --- ListOffsets -----------------------------------------------------------------------------


def test_list_offsets_by_timestamp_earliest_latest_and_max_timestamp(
    broker: BrokerProcess,
) -> None:
    topic = create_topic(broker.bootstrap, unique("times"))
    b = now_ms() - 100_000
    timestamps = [b, b + 10, b + 20, b + 20, b + 60, b + 30, b + 40]
    outs = [Out(b"k", f"v{i}".encode(), ts, partition=0) for i, ts in enumerate(timestamps)]
    produce_confluent(broker.bootstrap, topic, outs[:4])  # two batches
    produce_confluent(broker.bootstrap, topic, outs[4:])
    # target -> the first offset whose timestamp is >= target, None past the end
    expected = {b - 5: 0, b: 0, b + 5: 1, b + 20: 2, b + 21: 4, b + 35: 4, b + 60: 4,
                b + 61: None}

    consumer = confluent_consumer(broker.bootstrap)
    try:
        found = {
            target: consumer.offsets_for_times(
                [CTopicPartition(topic, 0, target)], TIMEOUT)[0].offset
            for target in expected
        }
    finally:
        consumer.close()
    tp = KTopicPartition(topic, 0)
    kconsumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        kfound = {target: kconsumer.offsets_for_times({tp: target})[tp] for target in expected}
        earliest, latest = kconsumer.beginning_offsets([tp]), kconsumer.end_offsets([tp])
    finally:
        kconsumer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    specs = {"max": OffsetSpec.max_timestamp(), "earliest": OffsetSpec.earliest(),
             "latest": OffsetSpec.latest()}
    listed = {
        name: next(iter(admin.list_offsets({CTopicPartition(topic, 0): spec}).values()))
        .result(TIMEOUT)
        for name, spec in specs.items()
    }

    assert found == {t: -1 if o is None else o for t, o in expected.items()}
    assert {t: None if r is None else (r.offset, r.timestamp) for t, r in kfound.items()} == {
        t: None if o is None else (o, timestamps[o]) for t, o in expected.items()
    }
    assert (earliest, latest) == ({tp: 0}, {tp: 7})
    assert (listed["max"].offset, listed["max"].timestamp) == (4, b + 60)
    assert (listed["earliest"].offset, listed["latest"].offset) == (0, 7)


# --- topic deletion --------------------------------------------------------------------------


def test_deleted_and_recreated_topic_is_empty_with_a_new_topic_id(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = create_topic(broker.bootstrap, unique("recreated"), partitions=2)
    base = now_ms() - 60_000
    old = [Out(b"old", f"old {i}".encode(), base + i, partition=i % 2) for i in range(10)]
    produce_confluent(broker.bootstrap, topic, old)
    old_id = admin.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT).topic_id

    admin.delete_topics([topic])[topic].result(TIMEOUT)
    create_topic(broker.bootstrap, topic, partitions=2)

    new_id = admin.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT).topic_id
    assert str(new_id) != str(old_id)
    for reader in CLIENTS:
        assert read_with(reader, broker.bootstrap, topic, [0, 1]) == [], reader
    fresh = produce_confluent(broker.bootstrap, topic, [Out(b"new", b"new", base + 100,
                                                              partition=1)])
    assert [(r.partition, r.offset) for r in fresh] == [(1, 0)]
    for reader in CLIENTS:
        assert read_with(reader, broker.bootstrap, topic, [0, 1]) == fresh, reader


# --- auto.offset.reset=latest ----------------------------------------------------------------


def _confluent_from_latest(bootstrap: str, topic: str, produce_new: Sequence[Out]) -> list[Rec]:
    """Assigned at OFFSET_END; a partition-EOF event says the consumer is positioned."""
    consumer = confluent_consumer(bootstrap, **{"enable.partition.eof": True,
                                                "auto.offset.reset": "latest"})
    try:
        consumer.assign([CTopicPartition(topic, 0, OFFSET_END)])
        acked: list[Rec] = []
        records: list[Rec] = []
        while True:
            message = consumer.poll(TIMEOUT)
            assert message is not None, "no partition EOF"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                if not acked:
                    acked = produce_confluent(bootstrap, topic, produce_new)
                elif message.offset() == acked[-1].offset + 1:
                    return records
                continue
            records.append(confluent_rec(message))
    finally:
        consumer.close()


def _kafka_python_from_latest(bootstrap: str, topic: str, produce_new: Sequence[Out]
                              ) -> list[Rec]:
    """No seek and no committed offset: `position` waits for auto_offset_reset to resolve."""
    tp = KTopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="latest", enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.position(tp)
        acked = produce_confluent(bootstrap, topic, produce_new)
        records: list[Rec] = []
        while consumer.position(tp) <= acked[-1].offset:
            for batch in consumer.poll(TIMEOUT * 1000).values():
                records.extend(Rec(r.partition, r.offset, r.key, r.value, r.timestamp)
                               for r in batch)
        return records
    finally:
        consumer.close()


def _aiokafka_from_latest(bootstrap: str, topic: str, produce_new: Sequence[Out]) -> list[Rec]:
    async def run() -> list[Rec]:
        tp = ATopicPartition(topic, 0)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                    auto_offset_reset="latest", enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            await consumer.position(tp)
            acked = await asyncio.to_thread(produce_confluent, bootstrap, topic, produce_new)
            records: list[Rec] = []
            while await consumer.position(tp) <= acked[-1].offset:
                for batch in (await consumer.getmany(timeout_ms=int(TIMEOUT * 1000))).values():
                    records.extend(Rec(r.partition, r.offset, r.key, r.value, r.timestamp)
                                   for r in batch)
            return records
        finally:
            await consumer.stop()

    return asyncio.run(run())


FROM_LATEST = {"confluent": _confluent_from_latest, "kafka-python": _kafka_python_from_latest,
               "aiokafka": _aiokafka_from_latest}


@pytest.mark.parametrize("consumer", CLIENTS)
def test_consumer_at_latest_sees_only_records_produced_after_it_positioned(
    broker: BrokerProcess, consumer: str
) -> None:
    topic = create_topic(broker.bootstrap, unique(f"latest-{consumer}"))
    base = now_ms() - 60_000
    produce_confluent(broker.bootstrap, topic,
                      [Out(b"old", f"old {i}".encode(), base + i, partition=0)
                       for i in range(5)])
    new = [Out(b"new", f"new {i}".encode(), base + 10 + i, partition=0) for i in range(3)]

    records = FROM_LATEST[consumer](broker.bootstrap, topic, new)

    assert records == [Rec(0, 5 + i, o.key, o.value, o.timestamp) for i, o in enumerate(new)]


# --- acks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_with_acks(broker: BrokerProcess, acks: str) -> None:
    topic = create_topic(broker.bootstrap, unique(f"acks-{acks}"))
    base = now_ms() - 60_000
    outs = [Out(f"k{i}".encode(), f"acks={acks} #{i}".encode(), base + i, partition=0)
            for i in range(50)]

    acked = produce_confluent(broker.bootstrap, topic, outs, {"acks": acks, "linger.ms": 0})

    expected = [Rec(0, i, o.key, o.value, o.timestamp) for i, o in enumerate(outs)]
    if acks != "0":  # acks=0 gets no offsets back
        assert acked == expected
    assert read_confluent(broker.bootstrap, topic) == expected


# --- auto topic creation ---------------------------------------------------------------------


def test_producing_to_a_new_topic_creates_it_with_num_partitions(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.overrides["num.partitions"] = "3"
    fresh_broker.start()
    topic = unique("auto")
    out = Out(b"k", b"first", now_ms(), partition=2)

    acked = produce_confluent(fresh_broker.bootstrap, topic, [out])

    metadata = AdminClient({"bootstrap.servers": fresh_broker.bootstrap}).list_topics(
        topic, timeout=TIMEOUT)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2]
    assert acked == [Rec(2, 0, b"k", b"first", out.timestamp)]
    assert read_confluent(fresh_broker.bootstrap, topic, [0, 1, 2]) == acked


def test_without_auto_creation_an_unknown_topic_stays_unknown(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.overrides["auto.create.topics.enable"] = "false"
    fresh_broker.start()
    topic = unique("not-auto")

    with pytest.raises(KafkaException) as excinfo:
        produce_confluent(fresh_broker.bootstrap, topic, [Out(b"k", b"v", now_ms())],
                          {"topic.metadata.propagation.max.ms": 100})

    assert excinfo.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    metadata = AdminClient({"bootstrap.servers": fresh_broker.bootstrap}).list_topics(
        topic, timeout=TIMEOUT)
    error = metadata.topics[topic].error
    assert error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert not (fresh_broker.data_dir / f"{topic}-0").exists()


# --- kcat ------------------------------------------------------------------------------------


def kcat(broker: BrokerProcess, *args: str, stdin: str | None = None) -> tuple[str, str]:
    done = subprocess.run([KCAT, "-b", broker.bootstrap, *args], input=stdin,
                          capture_output=True, text=True, timeout=TIMEOUT, check=True)
    return done.stdout, done.stderr


def test_kcat_produces_consumes_and_lists_metadata(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("kcat"), partitions=2)
    lines = ["alpha:first value", "beta:second:with colon", "alpha:third"]

    kcat(broker, "-P", "-t", topic, "-p", "1", "-K:", "-H", "source=kcat",
         stdin="\n".join(lines) + "\n")
    consumed, _ = kcat(broker, "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e",
                       "-f", "%p|%o|%k|%s|%h\n")
    listed, _ = kcat(broker, "-L", "-t", topic, "-J")

    assert consumed.splitlines() == [
        "1|0|alpha|first value|source=kcat",
        "1|1|beta|second:with colon|source=kcat",
        "1|2|alpha|third|source=kcat",
    ]
    read = read_confluent(broker.bootstrap, topic, [1])
    assert [(r.offset, r.key, r.value, r.headers) for r in read] == [
        (0, b"alpha", b"first value", (("source", b"kcat"),)),
        (1, b"beta", b"second:with colon", (("source", b"kcat"),)),
        (2, b"alpha", b"third", (("source", b"kcat"),)),
    ]
    metadata = json.loads(listed)
    assert metadata["brokers"] == [{"id": 1, "name": broker.bootstrap}]
    assert metadata["topics"] == [{
        "topic": topic,
        "partitions": [
            {"partition": p, "leader": 1, "replicas": [{"id": 1}], "isrs": [{"id": 1}]}
            for p in (0, 1)
        ],
    }]


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_librdkafka_2_0_2_compresses_with_every_codec(
    broker: BrokerProcess, codec: str
) -> None:
    """librdkafka before 2.11 turns gzip, snappy and lz4 off unless ApiVersions lists Produce
    overlapping v0-v2 (KAFKA-18659): the broker lists them, so kcat really compresses."""
    topic = create_topic(broker.bootstrap, unique(f"kcat-{codec}"))
    lines = [f"kcat {codec} record {i} " + "compressible " * 20 for i in range(30)]
    kcat(broker, "-P", "-t", topic, "-p", "0", "-z", codec, stdin="\n".join(lines) + "\n")
    consumed, _ = kcat(broker, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e")
    assert consumed.splitlines() == lines
    assert set(stored_codecs(broker.data_dir, topic)) == {CODECS[codec]}


def test_kcat_librdkafka_2_0_2_parses_the_api_versions_response(broker: BrokerProcess) -> None:
    """librdkafka 2.0.2 drops ApiVersions v3 responses it cannot parse and falls back to
    guessed versions; its `feature` debug log lists the table it actually parsed."""
    _, debug = kcat(broker, "-L", "-d", "broker,feature")

    parsed = {
        int(key): (int(low), int(high))
        for key, low, high in re.findall(r"ApiKey \S+ \((\d+)\) Versions (\d+)\.\.(\d+)", debug)
    }
    assert parsed == {a["api_key"]: (a["min_version"], a["max_version"]) for a in api_versions()}
    assert re.search(r"Updated enabled protocol features to .*MsgVer2", debug)
    assert "ApiVersionRequest failed" not in debug
