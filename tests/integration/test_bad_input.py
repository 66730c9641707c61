"""Bad input over real sockets against one running broker.

After every bad input: the bad connection was closed (with a log line naming the peer and the
reason) or got Kafka's documented error, a healthy client whose connections were opened before
it is still served, and the broker process is alive.
"""

from __future__ import annotations

import random
import struct
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.record_codec import build_batch, decode_records
from odradek.protocol.records import ZSTD, iter_batches
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.raw_client import RawClient, batch_of, frame, header_v1, now_ms

MAX_REQUEST_BYTES = 1_048_576
TIMEOUT = 15.0

OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
INVALID_REQUIRED_ACKS = 21
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
INVALID_RECORD = 87


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("bad-input")
    process = BrokerProcess(root / "data", root / "broker.log",
                            overrides={"socket.request.max.bytes": str(MAX_REQUEST_BYTES)})
    process.start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


class HealthyClients:
    """Connections opened before any bad input and kept open: a raw socket that asks
    ApiVersions and Metadata, and a librdkafka producer whose every message must land at the
    next offset of its topic."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.topic = create_topic(broker.bootstrap, unique("bad-input"))
        self.raw = RawClient(broker.bootstrap)
        self.producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                                  "acks": "all"})
        self.sent = 0
        self.check()

    def check(self) -> None:
        versions = self.raw.api_versions()
        assert versions.error_code == 0
        assert {api.api_key for api in versions.api_keys} >= {0, 1, 3, 18}
        metadata = self.raw.metadata([self.topic])
        (topic,) = metadata.topics
        assert (topic.name, topic.error_code) == (self.topic, 0)

        delivered: list[tuple[KafkaError | None, Message]] = []
        self.producer.produce(self.topic, f"healthy-{self.sent}".encode(), partition=0,
                              on_delivery=lambda error, message: delivered.append((error, message)))
        assert self.producer.flush(TIMEOUT) == 0
        ((error, message),) = delivered
        assert error is None, error
        assert message.offset() == self.sent
        self.sent += 1

    def close(self) -> None:
        self.raw.close()
        self.producer.close()


@pytest.fixture(scope="module")
def healthy(broker: BrokerProcess) -> Iterator[HealthyClients]:
    clients = HealthyClients(broker)
    yield clients
    clients.close()


def assert_still_served(broker: BrokerProcess, healthy: HealthyClients) -> None:
    assert broker.alive(), broker.logs()
    healthy.check()


def close_reason(broker: BrokerProcess, port: int) -> str | None:
    """The reason the broker logged for closing the connection from `port`."""
    marker = f"closing connection from 127.0.0.1:{port}: "
    for line in broker.logs().splitlines():
        if marker in line:
            return line.split(marker, 1)[1]
    return None


def assert_closed(broker: BrokerProcess, data: bytes, reason: str) -> None:
    client = RawClient(broker.bootstrap)
    try:
        client.send_raw(data)
        assert client.closed_by_peer(), "the broker kept the connection open"
        logged = close_reason(broker, client.local_port)
        assert logged is not None, "no log line for the closed connection"
        assert reason in logged
    finally:
        client.close()


# --- bad framing and headers: the connection is closed ---------------------------------------


def produce_request(version: int, records: bytes, topic: str = "t",
                    acks: int = 1) -> ProduceRequest:
    partition_data = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
    topic_data = (ProduceRequest.TopicProduceData(name=topic, partition_data=[partition_data])
                  if version < 13 else
                  ProduceRequest.TopicProduceData(topic_id=uuid.uuid4(),
                                                  partition_data=[partition_data]))
    request = ProduceRequest[version](transactional_id=None, acks=acks, timeout_ms=1000,
                                      topic_data=[topic_data])
    request.with_header(correlation_id=1, client_id="raw")
    return request


def truncated_produce() -> bytes:
    """A Produce v9 request whose header is whole and whose body stops halfway."""
    request = produce_request(9, batch_of([(b"key", b"value" * 20)]))
    whole = request.encode(header=True)
    body = request.encode(header=False)
    return frame(whole[: len(whole) - len(body) // 2])


BAD_STREAMS: dict[str, tuple[bytes, str]] = {
    "random garbage": (random.Random(511).randbytes(4096), "frame size"),
    "an HTTP request": (b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n",
                        "frame size 1195725856 outside"),
    "framed garbage": (frame(b"\x7f\x00" + random.Random(7).randbytes(200)),
                       "unknown API key 32512"),
    "a negative frame length": (struct.pack(">i", -2) + header_v1(18, 0, 1),
                                "frame size -2 outside"),
    "a frame above socket.request.max.bytes": (struct.pack(">i", 2 << 20) + header_v1(18, 0, 1),
                                               f"frame size {2 << 20} outside 0..1048576"),
    "an unknown API key": (frame(header_v1(9999, 0, 1) + b"\x00" * 8), "unknown API key 9999"),
    "a truncated request body": (truncated_produce(), "malformed request: produce v9"),
    "a client id longer than the frame": (frame(struct.pack(">hhih", 3, 1, 1, 500) + b"raw"),
                                          "truncated client id"),
    "a header shorter than 10 bytes": (frame(b"\x00\x03\x00\x01"), "header needs 10 bytes"),
    "Metadata v99 (no schema)": (frame(header_v1(3, 99, 1) + b"\x00" * 8),
                                 "Metadata v99 unsupported"),
    "Produce v13 (response has no error code)": (
        produce_request(13, batch_of([(None, b"v")])).encode(header=True, framed=True),
        "Produce v13 unsupported (supported 3-12)"),
    # listed in ApiVersions for old librdkafka's sake (KAFKA-18659), but never served
    "Produce v2 (listed, refused)": (
        frame(header_v1(0, 2, 1) + b"\x00\x01\x00\x00\x75\x30\x00\x00\x00\x00"),
        "Produce v2 unsupported (supported 3-12)"),
}


@pytest.mark.parametrize("data, reason", BAD_STREAMS.values(), ids=BAD_STREAMS.keys())
def test_bad_stream_closes_only_its_connection(
    broker: BrokerProcess, healthy: HealthyClients, data: bytes, reason: str
) -> None:
    assert_closed(broker, data, reason)
    assert_still_served(broker, healthy)


def test_many_random_garbage_streams(broker: BrokerProcess, healthy: HealthyClients) -> None:
    for seed in range(20):
        assert_closed(broker, random.Random(seed).randbytes(16 + seed * 97), "")
        assert_still_served(broker, healthy)


def test_partial_frame_then_disconnect(broker: BrokerProcess, healthy: HealthyClients) -> None:
    client = RawClient(broker.bootstrap)
    client.send_raw(struct.pack(">i", 1000) + header_v1(3, 12, 1))
    assert not client.closed_by_peer(timeout=0.5)  # waits for the rest of the frame
    client.close()
    assert_still_served(broker, healthy)


# --- unsupported versions: Kafka's documented answers ------------------------------------


def test_api_versions_at_an_unknown_version_answers_v0_with_the_full_table(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    expected = [(a.api_key, a.min_version, a.max_version)
                for a in healthy.raw.api_versions().api_keys]
    client = RawClient(broker.bootstrap)
    try:
        client.send_raw(frame(header_v1(18, 99, 42) + b"\x00" * 6))
        response = ApiVersionsResponse.decode(client.recv_frame(), version=0, header=True)

        assert response.header.correlation_id == 42
        assert response.error_code == UNSUPPORTED_VERSION
        assert [(a.api_key, a.min_version, a.max_version) for a in response.api_keys] == expected
        assert client.api_versions().error_code == 0  # the client retries on the same connection
    finally:
        client.close()
    assert_still_served(broker, healthy)


def test_versions_beyond_ours_answer_unsupported_version(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    """Fetch v18 and Metadata v13 have schemas and a top-level error code; we serve up to 17
    and 12."""
    fetch_partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
        partition_max_bytes=1000)
    fetch = FetchRequest[18](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1000, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[FetchRequest.FetchTopic(topic_id=uuid.uuid4(), partitions=[fetch_partition])])
    metadata = MetadataRequest[13](topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)
    client = RawClient(broker.bootstrap)
    try:
        assert client.request(fetch, FetchResponse, 18).error_code == UNSUPPORTED_VERSION
        assert client.request(metadata, MetadataResponse, 13).error_code == UNSUPPORTED_VERSION
        assert client.api_versions().error_code == 0
    finally:
        client.close()
    assert_still_served(broker, healthy)


# --- bad records: per-partition errors, nothing appended --------------------------------


def corrupt_crc(batch: bytes) -> bytes:
    """Flip one bit of the last record's value; the CRC in the header no longer matches."""
    corrupted = bytearray(batch)
    corrupted[-2] ^= 0x01
    return bytes(corrupted)


def truncated_batch(batch: bytes) -> bytes:
    return batch[:-5]


def magic_1_message(key: bytes, value: bytes) -> bytes:
    """A legacy message set entry: offset, size, crc (CRC-32 of the rest), magic 1,
    attributes, timestamp, key, value."""
    body = struct.pack(">bbq", 1, 0, now_ms())
    body += struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


BAD_RECORDS: dict[str, tuple[Callable[[], bytes], int]] = {
    "a corrupted CRC": (lambda: corrupt_crc(batch_of([(b"k", b"v" * 50)] * 3)),
                        CORRUPT_MESSAGE),
    "a truncated batch": (lambda: truncated_batch(batch_of([(b"k", b"v" * 50)])),
                          CORRUPT_MESSAGE),
    "a magic 1 message set": (lambda: magic_1_message(b"k", b"v" * 50), INVALID_RECORD),
    # produce v3+ carries exactly one batch per partition (Kafka's ProduceRequest rule)
    "two batches in one partition": (
        lambda: batch_of([(b"k", b"one")]) + batch_of([(b"k", b"two")]), INVALID_RECORD),
}


@pytest.mark.parametrize("make_records, error_code", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_bad_records_are_rejected_and_not_appended(
    broker: BrokerProcess, healthy: HealthyClients,
    make_records: Callable[[], bytes], error_code: int,
) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"))
    client = RawClient(broker.bootstrap)
    try:
        good = client.produce_partition(topic, 0, batch_of([(b"k", b"good")]))
        assert (good.error_code, good.base_offset) == (0, 0)

        response = client.produce_partition(topic, 0, make_records())

        assert (response.error_code, response.base_offset) == (error_code, -1)
        assert client.latest_offset(topic, 0) == 1
        fetched = client.fetch_partition(topic, 0, 0)
        assert [(r.offset, r.value) for r in decode_records(fetched.records)] == [(0, b"good")]
        assert client.api_versions().error_code == 0  # the connection stays usable
    finally:
        client.close()
    assert_still_served(broker, healthy)


def test_invalid_acks_is_refused_before_anything_is_appended(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"))
    client = RawClient(broker.bootstrap)
    try:
        response = client.produce_partition(topic, 0, batch_of([(None, b"v")]), acks=2)
        assert (response.error_code, response.base_offset) == (INVALID_REQUIRED_ACKS, -1)
        assert client.latest_offset(topic, 0) == 0
    finally:
        client.close()


def test_zstd_before_produce_v7_is_unsupported_compression_type(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"))
    client = RawClient(broker.bootstrap)
    try:
        zstd = build_batch([(b"k", b"z" * 100)], timestamp_ms=now_ms(), compression=ZSTD)
        assert client.produce_partition(topic, 0, zstd, version=6).error_code == 76
        assert client.latest_offset(topic, 0) == 0
        assert client.produce_partition(topic, 0, zstd, version=7).error_code == 0
    finally:
        client.close()


def test_batch_above_max_message_bytes_is_message_too_large(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"),
                         config={"max.message.bytes": "1024"})
    client = RawClient(broker.bootstrap)
    try:
        fits = batch_of([(None, b"x" * 900)])
        too_large = batch_of([(None, b"x" * 2000)])

        assert client.produce_partition(topic, 0, fits).error_code == 0
        response = client.produce_partition(topic, 0, too_large)

        assert response.error_code == MESSAGE_TOO_LARGE
        assert client.latest_offset(topic, 0) == 1
    finally:
        client.close()
    assert_still_served(broker, healthy)


def test_produce_to_unknown_topic_or_partition(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"), partitions=2)
    batch = batch_of([(None, b"v")])
    client = RawClient(broker.bootstrap)
    try:
        unknown_topic = client.produce_partition(f"no-such-{uuid.uuid4().hex}", 0, batch)
        unknown_partition = client.produce_partition(topic, 2, batch)

        assert unknown_topic.error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert unknown_partition.error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert client.latest_offset(topic, 0) == client.latest_offset(topic, 1) == 0
    finally:
        client.close()
    assert_still_served(broker, healthy)


def test_fetch_beyond_the_log_end_is_offset_out_of_range(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"))
    client = RawClient(broker.bootstrap)
    try:
        batch = batch_of([(None, b"a"), (None, b"b")])
        assert client.produce_partition(topic, 0, batch).error_code == 0

        at_end = client.fetch_partition(topic, 0, 2)
        beyond = client.fetch_partition(topic, 0, 3)

        assert (at_end.error_code, at_end.high_watermark) == (0, 2)
        assert not at_end.records
        # as Kafka (the conformance suite): an error's offsets are all -1
        assert (beyond.error_code, beyond.high_watermark) == (OFFSET_OUT_OF_RANGE, -1)
    finally:
        client.close()
    assert_still_served(broker, healthy)


# --- CreateTopics errors through librdkafka ----------------------------------------------


def existing_topic(bootstrap: str) -> NewTopic:
    return NewTopic(create_topic(bootstrap, unique("bad-input")), 1, 1)


BAD_TOPICS: dict[str, tuple[Callable[[str], NewTopic], int]] = {
    "a bad name": (lambda _: NewTopic("bad/name", 1, 1), INVALID_TOPIC_EXCEPTION),
    "a duplicate": (existing_topic, TOPIC_ALREADY_EXISTS),
    "0 partitions": (lambda _: NewTopic(unique("zero"), 0, 1),
                     INVALID_PARTITIONS),
    "replication factor 3": (lambda _: NewTopic(unique("rf"), 1, 3),
                             INVALID_REPLICATION_FACTOR),
    "a bad config value": (lambda _: NewTopic(unique("cfg"), 1, 1,
                                              config={"retention.ms": "soon"}),
                           INVALID_CONFIG),
    "an unknown config": (lambda _: NewTopic(unique("cfg"), 1, 1,
                                             config={"no.such.config": "1"}),
                          INVALID_CONFIG),
}


@pytest.mark.parametrize("make_topic, error_code", BAD_TOPICS.values(), ids=BAD_TOPICS.keys())
def test_create_topics_errors(
    broker: BrokerProcess, admin: AdminClient, healthy: HealthyClients,
    make_topic: Callable[[str], NewTopic],
    error_code: int,
) -> None:
    topic = make_topic(broker.bootstrap)
    with pytest.raises(KafkaException) as excinfo:
        admin.create_topics([topic])[topic.topic].result(TIMEOUT)
    assert excinfo.value.args[0].code() == error_code  # librdkafka keeps Kafka's numbers
    if error_code != TOPIC_ALREADY_EXISTS:
        assert topic.topic not in admin.list_topics(timeout=TIMEOUT).topics
    assert_still_served(broker, healthy)


# --- healthy clients under a stream of garbage connections -------------------------------

HEALTHY_CLIENTS = 20
MIN_ROUNDS = 10
MAX_ROUNDS = 1000
RECORDS_PER_BATCH = 8
GARBAGE_CONNECTIONS = 50


def garbage(seed: int) -> tuple[bytes, str]:
    """Bad input number `seed`, of one of several kinds, and the reason logged for it."""
    rng = random.Random(seed)
    kinds = [
        (rng.randbytes(rng.randint(16, 4096)), ""),
        (struct.pack(">i", -rng.randint(1, 1 << 30)), "frame size -"),
        (struct.pack(">i", MAX_REQUEST_BYTES + rng.randint(1, 1 << 20)), "frame size"),
        (frame(header_v1(rng.randint(1000, 30000), 0, seed)), "unknown API key"),
        (truncated_produce(), "malformed request"),
    ]
    return kinds[seed % len(kinds)]


def stream_and_verify(
    bootstrap: str, topic: str, partition: int, garbage_done: threading.Event
) -> list[bytes]:
    """Produce batches to one partition, fetching each back right after it lands, until the
    garbage is all sent (and at least MIN_ROUNDS times); returns the values produced."""
    client = RawClient(bootstrap)
    values: list[bytes] = []
    try:
        for round_ in range(MAX_ROUNDS):
            if round_ >= MIN_ROUNDS and garbage_done.is_set():
                break
            batch_values = [f"{partition}-{round_}-{i}".encode() * 4
                            for i in range(RECORDS_PER_BATCH)]
            batch = batch_of([(str(partition).encode(), v) for v in batch_values])
            produced = client.produce_partition(topic, partition, batch)
            assert (produced.error_code, produced.base_offset) == (0, len(values))
            fetched = client.fetch_partition(topic, partition, len(values))
            assert fetched.error_code == 0
            records = [r for info in iter_batches(fetched.records)
                       for r in decode_records(fetched.records[info.position:info.end])]
            assert [(r.offset, r.value) for r in records] == list(
                enumerate(batch_values, start=len(values)))
            values += batch_values
    finally:
        client.close()
    return values


def send_garbage(broker: BrokerProcess, count: int, closed: list[int]) -> None:
    for seed in range(count):
        data, reason = garbage(seed)
        assert_closed(broker, data, reason)
        closed.append(seed)


def test_healthy_clients_are_exact_while_garbage_connections_come_and_go(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    topic = create_topic(broker.bootstrap, unique("bad-input"), partitions=HEALTHY_CLIENTS)
    closed: list[int] = []
    garbage_done = threading.Event()

    with ThreadPoolExecutor(HEALTHY_CLIENTS + 1) as pool:
        futures = [pool.submit(stream_and_verify, broker.bootstrap, topic, p, garbage_done)
                   for p in range(HEALTHY_CLIENTS)]
        sender = pool.submit(send_garbage, broker, GARBAGE_CONNECTIONS, closed)
        try:
            sender.result(timeout=60)
        finally:
            garbage_done.set()
        results = [future.result(timeout=60) for future in futures]

    assert closed == list(range(GARBAGE_CONNECTIONS))
    check = RawClient(broker.bootstrap)
    try:
        for partition, values in enumerate(results):
            assert len(values) >= MIN_ROUNDS * RECORDS_PER_BATCH
            assert check.latest_offset(topic, partition) == len(values)
            fetched = check.fetch_partition(topic, partition, 0)
            stored = [r.value for info in iter_batches(fetched.records)
                      for r in decode_records(fetched.records[info.position:info.end])]
            assert stored == values
    finally:
        check.close()
    assert_still_served(broker, healthy)


def test_failed_acks_0_produce_closes_the_connection(
    broker: BrokerProcess, healthy: HealthyClients
) -> None:
    """An acks=0 producer gets no response; Kafka closes the connection so it notices."""
    topic = create_topic(broker.bootstrap, unique("bad-input"))
    client = RawClient(broker.bootstrap)
    try:
        ok = produce_request(9, batch_of([(None, b"fine")]), acks=0, topic=topic)
        client.send_raw(ok.encode(header=True, framed=True))
        assert client.api_versions().error_code == 0
        bad = produce_request(9, corrupt_crc(batch_of([(None, b"bad")])), acks=0, topic=topic)
        client.send_raw(bad.encode(header=True, framed=True))
        assert client.closed_by_peer()
    finally:
        client.close()
    assert_still_served(broker, healthy)
