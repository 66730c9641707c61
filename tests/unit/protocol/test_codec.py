"""The kio facade: request headers and bodies encoded by kafka-python 3.0.12 decode to what it
sent; responses projected from one mapping onto several versions decode in kafka-python."""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode

from odradek.protocol.codec import (
    RequestDecodeError,
    RequestHeader,
    build_response,
    decode_body,
    decode_header,
    encode_response,
    response_header,
)
from odradek.protocol.frames import FrameDecoder

METADATA, FETCH, API_VERSIONS = 3, 1, 18


def record_batch(*values: bytes) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for offset, value in enumerate(values):
        builder.append(offset, timestamp=1_700_000_000_000 + offset, key=b"k", value=value,
                       headers=[])
    return bytes(builder.build())


def kafka_python_frame(
    request: Any, correlation_id: int = 7, client_id: str | None = "cli"
) -> bytes | bytearray:
    """The request as kafka-python puts it on the wire, through our frame decoder."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    frames = FrameDecoder(1 << 20).feed(bytes(request.encode(header=True, framed=True)))
    assert len(frames) == 1
    return frames[0]


def decode(frame: bytes | bytearray) -> tuple[RequestHeader, Any]:
    header, offset = decode_header(frame)
    return header, decode_body(header, frame, offset)


# --- request headers ---------------------------------------------------------------------


def test_header_v1_for_a_non_flexible_version() -> None:
    frame = kafka_python_frame(MetadataRequest(topics=[], version=8), 123456, "my-client")
    header, offset = decode_header(frame)
    assert header == RequestHeader(METADATA, 8, 123456, "my-client")
    assert offset == 10 + len("my-client")


def test_header_v2_skips_the_empty_tagged_fields() -> None:
    frame = kafka_python_frame(MetadataRequest(topics=[], version=9), -5, "c")
    header, offset = decode_header(frame)
    assert header == RequestHeader(METADATA, 9, -5, "c")
    assert frame[offset - 1] == 0, "the tagged-field count closes the v2 header"
    assert offset == 10 + 1 + 1


def test_null_client_id() -> None:
    frame = kafka_python_frame(ApiVersionsRequest(version=0), client_id=None)
    assert decode_header(frame) == (RequestHeader(API_VERSIONS, 0, 7, None), 10)


def test_empty_client_id_is_not_null() -> None:
    frame = struct.pack(">hhih", METADATA, 1, 1, 0) + b"\x00\x00\x00\x00"
    assert decode_header(frame) == (RequestHeader(METADATA, 1, 1, ""), 10)


def test_v2_client_id_stays_a_legacy_string() -> None:
    """KIP-482: the header's client id is never compact, even in header v2."""
    frame = kafka_python_frame(ApiVersionsRequest(client_software_name="n",
                                                  client_software_version="1", version=3),
                               client_id="x" * 300)
    header, offset = decode_header(frame)
    assert header.client_id == "x" * 300
    assert offset == 10 + 300 + 1


def test_header_tagged_fields_with_content_are_skipped() -> None:
    body = b"\x02n\x021\x00"  # ApiVersions v3: compact "n", compact "1", no tags
    tags = b"\x02" + b"\x00\x03abc" + b"\x85\x01\x00"  # two tags: 0 (3 bytes), 133 (empty)
    frame = struct.pack(">hhih", API_VERSIONS, 3, 9, 2) + b"id" + tags + body
    header, offset = decode_header(frame)
    assert header == RequestHeader(API_VERSIONS, 3, 9, "id")
    assert frame[offset:] == body
    request = decode_body(header, frame, offset)
    assert (request.client_software_name, request.client_software_version) == ("n", "1")


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(API_VERSIONS, 99), (API_VERSIONS, -1), (9999, 0), (METADATA, 200)],
)
def test_unknown_api_or_version_still_yields_a_header(api_key: int, version: int) -> None:
    """So that ApiVersions can answer v0 and others UNSUPPORTED_VERSION; a v2 header's tag
    byte is not consumed because the version's flexibility is unknown."""
    frame = struct.pack(">hhih", api_key, version, 3, 1) + b"c" + b"\x00rest"
    assert decode_header(frame) == (RequestHeader(api_key, version, 3, "c"), 11)


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        struct.pack(">hhi", METADATA, 1, 1) + b"\x00",  # 9 bytes
        struct.pack(">hhih", METADATA, 1, 1, 5) + b"abc",  # client id cut short
        struct.pack(">hhih", METADATA, 1, 1, 2) + b"\xff\xfe",  # not UTF-8
        struct.pack(">hhih", METADATA, 9, 1, -1),  # v2 header without its tag count
        struct.pack(">hhih", METADATA, 9, 1, -1) + b"\x01\x00\x05ab",  # tag cut short
        struct.pack(">hhih", METADATA, 9, 1, -1) + b"\x01\x80",  # varint cut short
        struct.pack(">hhih", METADATA, 9, 1, -1) + b"\x01\x00\xff\xff\xff\xff\xff\x01",
    ],
)
def test_malformed_headers_raise(frame: bytes) -> None:
    with pytest.raises(RequestDecodeError):
        decode_header(frame)


# --- request bodies encoded by kafka-python ------------------------------------------------


@pytest.mark.parametrize("version", range(5))
def test_api_versions_request(version: int) -> None:
    request = ApiVersionsRequest(client_software_name="kafka-python",
                                 client_software_version="3.0.12", version=version)
    header, body = decode(kafka_python_frame(request, correlation_id=99))
    assert header == RequestHeader(API_VERSIONS, version, 99, "cli")
    if version >= 3:
        assert body.client_software_name == "kafka-python"
        assert body.client_software_version == "3.0.12"


def metadata_request(version: int, names: list[str]) -> Any:
    topic = MetadataRequest.MetadataRequestTopic
    return MetadataRequest(topics=[topic(name=n) for n in names],
                           allow_auto_topic_creation=False,
                           include_topic_authorized_operations=True, version=version)


def test_metadata_v0_request() -> None:
    _, body = decode(kafka_python_frame(metadata_request(0, ["a", "b.c"])))
    assert [t.name for t in body.topics] == ["a", "b.c"]


def test_metadata_v9_request() -> None:
    header, body = decode(kafka_python_frame(metadata_request(9, ["a", "b"])))
    assert header.api_version == 9
    assert [t.name for t in body.topics] == ["a", "b"]
    assert body.allow_auto_topic_creation is False
    assert body.include_topic_authorized_operations is True


def test_metadata_v12_request_with_topic_ids_and_all_topics() -> None:
    topic_id = uuid.uuid4()
    topic = MetadataRequest.MetadataRequestTopic
    request = MetadataRequest(topics=[topic(name=None, topic_id=topic_id), topic(name="x")],
                              allow_auto_topic_creation=True, version=12)
    _, body = decode(kafka_python_frame(request))
    assert [(t.name, t.topic_id) for t in body.topics] == [(None, topic_id), ("x", None)]
    _, everything = decode(kafka_python_frame(MetadataRequest(topics=None, version=12)))
    assert everything.topics is None


def test_produce_v9_request_keeps_record_bytes_intact() -> None:
    records = record_batch(b"v1", b"v2")
    partition = ProduceRequest.TopicProduceData.PartitionProduceData
    request = ProduceRequest(
        transactional_id="tx", acks=-1, timeout_ms=1500,
        topic_data=[ProduceRequest.TopicProduceData(
            name="orders", partition_data=[partition(index=2, records=records),
                                           partition(index=0, records=None)])],
        version=9,
    )
    header, body = decode(kafka_python_frame(request))
    assert header.api_version == 9
    assert (body.transactional_id, body.acks) == ("tx", -1)
    assert body.timeout == datetime.timedelta(milliseconds=1500)
    [topic] = body.topic_data
    assert topic.name == "orders"
    assert [(p.index, p.records) for p in topic.partition_data] == [(2, records), (0, None)]


def test_fetch_v12_request() -> None:
    fetch_partition = FetchRequest.FetchTopic.FetchPartition
    request = FetchRequest(
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1,
        session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic="t", partitions=[
            fetch_partition(partition=3, current_leader_epoch=4, fetch_offset=42,
                            last_fetched_epoch=2, log_start_offset=-1,
                            partition_max_bytes=1048576)])],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic="old", partitions=[1, 2])],
        rack_id="rack-a", version=12,
    )
    _, body = decode(kafka_python_frame(request))
    assert body.max_wait == datetime.timedelta(milliseconds=500)
    assert (body.min_bytes, body.max_bytes, body.isolation_level) == (1, 52428800, 1)
    assert (body.session_id, body.session_epoch, body.rack_id) == (0, -1, "rack-a")
    [topic] = body.topics
    [partition] = topic.partitions
    assert topic.topic == "t"
    assert (partition.partition, partition.current_leader_epoch, partition.fetch_offset,
            partition.last_fetched_epoch, partition.partition_max_bytes) == (3, 4, 42, 2, 1048576)
    assert [(f.topic, f.partitions) for f in body.forgotten_topics_data] == [("old", (1, 2))]


def test_create_topics_v7_request() -> None:
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(
        topics=[
            topic(name="a", num_partitions=3, replication_factor=2, assignments=[],
                  configs=[topic.CreatableTopicConfig(name="retention.ms", value="1000"),
                           topic.CreatableTopicConfig(name="cleanup.policy", value=None)]),
            topic(name="b", num_partitions=-1, replication_factor=-1, configs=[],
                  assignments=[topic.CreatableReplicaAssignment(partition_index=0,
                                                                broker_ids=[1, 2])]),
        ],
        timeout_ms=30000, validate_only=True, version=7,
    )
    _, body = decode(kafka_python_frame(request))
    assert body.timeout == datetime.timedelta(seconds=30)
    assert body.validate_only is True
    a, b = body.topics
    assert (a.name, a.num_partitions, a.replication_factor) == ("a", 3, 2)
    assert [(c.name, c.value) for c in a.configs] == [("retention.ms", "1000"),
                                                      ("cleanup.policy", None)]
    assert (b.num_partitions, b.replication_factor) == (-1, -1)
    assert [(x.partition_index, x.broker_ids) for x in b.assignments] == [(0, (1, 2))]


@pytest.mark.parametrize("cut", [1, 4, 9, 20, 60])
def test_a_request_split_across_reads_decodes(cut: int) -> None:
    """A frame completed over several feeds comes out of the decoder as a bytearray."""
    request = ProduceRequest(
        acks=1, timeout_ms=100, version=9,
        topic_data=[ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0,
                                                                 records=record_batch(b"v"))])],
    )
    request.with_header(correlation_id=3, client_id="c")
    wire = bytes(request.encode(header=True, framed=True))
    decoder = FrameDecoder(1 << 20)
    [frame] = decoder.feed(wire[:cut]) + decoder.feed(wire[cut:])
    header, body = decode(frame)
    assert header == RequestHeader(0, 9, 3, "c")
    assert body.topic_data[0].partition_data[0].records == record_batch(b"v")


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    """Kafka's request parser ignores bytes after the body (librdkafka sends some)."""
    frame = kafka_python_frame(metadata_request(9, ["a"]))
    header, offset = decode_header(frame)
    expected = decode_body(header, frame, offset)
    assert decode_body(header, frame + b"\x00\x01junk", offset) == expected


def test_truncated_body_is_rejected() -> None:
    frame = kafka_python_frame(metadata_request(9, ["abc"]))
    header, offset = decode_header(frame)
    for end in range(offset, len(frame)):
        with pytest.raises(RequestDecodeError):
            decode_body(header, frame[:end], offset)


def test_body_of_an_unknown_version_is_a_decode_error() -> None:
    frame = struct.pack(">hhih", METADATA, 200, 1, -1)
    header, offset = decode_header(frame)
    with pytest.raises(RequestDecodeError):
        decode_body(header, frame, offset)


# --- response headers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_key", "version", "expected"),
    [
        (METADATA, 8, b"\x00\x00\x01\x02"),
        (METADATA, 9, b"\x00\x00\x01\x02\x00"),
        (FETCH, 11, b"\x00\x00\x01\x02"),
        (FETCH, 12, b"\x00\x00\x01\x02\x00"),
        (API_VERSIONS, 2, b"\x00\x00\x01\x02"),
        (API_VERSIONS, 3, b"\x00\x00\x01\x02"),  # flexible, yet header v0 (KIP-511)
        (API_VERSIONS, 4, b"\x00\x00\x01\x02"),
    ],
)
def test_response_header(api_key: int, version: int, expected: bytes) -> None:
    assert response_header(RequestHeader(api_key, version, 0x102, None)) == expected


# --- responses: one mapping, many versions, decoded by kafka-python ------------------------

TOPIC_ID = uuid.UUID("7c8a5f4e-1a2b-4c3d-9e8f-0123456789ab")

METADATA_RESULT: dict[str, Any] = {
    "brokers": [{"node_id": 1, "host": "broker-1", "port": 9092, "rack": "r1"},
                {"node_id": 2, "host": "broker-2", "port": 9093, "rack": None}],
    "cluster_id": "cluster-x",
    "controller_id": 2,
    "topics": [
        {
            "error_code": ErrorCode.none,
            "name": "orders",
            "topic_id": TOPIC_ID,
            "is_internal": False,
            "partitions": [
                {"error_code": ErrorCode.none, "partition_index": 0, "leader_id": 1,
                 "leader_epoch": 5, "replica_nodes": (1, 2), "isr_nodes": (1,),
                 "offline_replicas": (2,)},
            ],
            "topic_authorized_operations": -(2**31),
        },
        {"error_code": 3, "name": "missing", "partitions": []},
    ],
    "cluster_authorized_operations": -(2**31),
}


@pytest.mark.parametrize("version", range(13))
def test_metadata_response_parses_in_kafka_python(version: int) -> None:
    frame = encode_response(RequestHeader(METADATA, version, 77, "c"), METADATA_RESULT)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    response = MetadataResponse.decode(frame, version=version, header=True, framed=True)
    assert response.header.correlation_id == 77
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
        (1, "broker-1", 9092), (2, "broker-2", 9093)]
    orders, missing = response.topics
    assert (orders.error_code, orders.name) == (0, "orders")
    assert (missing.error_code, missing.name, missing.partitions) == (3, "missing", [])
    [partition] = orders.partitions
    assert (partition.partition_index, partition.leader_id) == (0, 1)
    assert (partition.replica_nodes, partition.isr_nodes) == ([1, 2], [1])
    if version >= 1:
        assert response.controller_id == 2
        assert [b.rack for b in response.brokers] == ["r1", None]
    if version >= 2:
        assert response.cluster_id == "cluster-x"
    if version >= 5:
        assert partition.offline_replicas == [2]
    if version >= 7:
        assert partition.leader_epoch == 5
    if version >= 10:
        assert orders.topic_id == TOPIC_ID
        assert missing.topic_id is None, "kafka-python reads the zero UUID as None"


def test_metadata_topic_id_may_be_given_as_its_string_form() -> None:
    """TopicState keeps ids as str; the projection turns them into UUIDs."""
    topic = {**METADATA_RESULT["topics"][0], "topic_id": str(TOPIC_ID)}
    frame = encode_response(RequestHeader(METADATA, 12, 1, None),
                            {**METADATA_RESULT, "topics": [topic]})
    response = MetadataResponse.decode(frame, version=12, header=True, framed=True)
    assert response.topics[0].topic_id == TOPIC_ID


RECORDS = record_batch(b"hello", b"world")


def fetch_result() -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "session_id": 0,
        "responses": [
            {
                "topic": "orders",
                "topic_id": TOPIC_ID,
                "partitions": [
                    {"partition_index": 0, "error_code": ErrorCode.none, "high_watermark": 2,
                     "last_stable_offset": 2, "log_start_offset": 0, "records": RECORDS},
                    {"partition_index": 1, "error_code": ErrorCode.offset_out_of_range,
                     "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                     "records": None},
                ],
            }
        ],
    }


@pytest.mark.parametrize("version", range(4, 18))
def test_fetch_response_parses_in_kafka_python(version: int) -> None:
    frame = encode_response(RequestHeader(FETCH, version, 31, "c"), fetch_result())
    response = FetchResponse.decode(frame, version=version, header=True, framed=True)
    assert response.header.correlation_id == 31
    assert response.throttle_time_ms == 0
    [topic] = response.responses
    if version >= 13:
        assert topic.topic_id == TOPIC_ID
    else:
        assert topic.topic == "orders"
    good, bad = topic.partitions
    assert (good.partition_index, good.error_code, good.high_watermark) == (0, 0, 2)
    assert good.last_stable_offset == 2
    assert bytes(good.records) == RECORDS
    assert (bad.partition_index, bad.error_code, bad.records) == (1, 1, None)
    if version >= 5:
        assert (good.log_start_offset, bad.log_start_offset) == (0, -1)
    if version >= 7:
        assert (response.error_code, response.session_id) == (0, 0)


def test_fetch_records_in_kafka_python_read_back_the_values() -> None:
    from kafka.record import MemoryRecords

    frame = encode_response(RequestHeader(FETCH, 12, 1, None), fetch_result())
    response = FetchResponse.decode(frame, version=12, header=True, framed=True)
    records = MemoryRecords(bytes(response.responses[0].partitions[0].records))
    batch = records.next_batch()
    assert [r.value for r in batch] == [b"hello", b"world"]


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_parses_in_kafka_python(version: int) -> None:
    table = [{"api_key": 3, "min_version": 0, "max_version": 12},
             {"api_key": 18, "min_version": 0, "max_version": 4}]
    frame = encode_response(RequestHeader(API_VERSIONS, version, 5, None),
                            {"error_code": 0, "api_keys": table})
    assert frame[4:8] == b"\x00\x00\x00\x05"
    response = ApiVersionsResponse.decode(frame, version=version, header=True, framed=True)
    assert response.header.correlation_id == 5
    assert response.error_code == 0
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (3, 0, 12), (18, 0, 4)]


def test_build_response_fills_zero_values_and_schema_defaults() -> None:
    response = build_response(METADATA, 12, {})
    assert response.throttle_time == datetime.timedelta(0)
    assert response.brokers == ()
    assert response.topics == ()
    assert response.cluster_id is None
    assert response.controller_id == -1


def test_build_response_converts_plain_values() -> None:
    response = build_response(METADATA, 12, {
        "throttle_time": 250,
        "topics": [{"error_code": 3, "name": "t", "partitions": [
            {"error_code": 0, "partition_index": 0, "leader_id": 1}]}],
    })
    assert response.throttle_time == datetime.timedelta(milliseconds=250)
    [topic] = response.topics
    assert topic.error_code is ErrorCode.unknown_topic_or_partition
    assert topic.topic_id is None
    assert topic.partitions[0].error_code is ErrorCode.none
    assert topic.partitions[0].leader_epoch == -1


def test_build_response_projects_an_entity_of_another_version() -> None:
    v12 = build_response(METADATA, 12, METADATA_RESULT)
    v1 = build_response(METADATA, 1, v12)
    assert type(v1).__module__.endswith(".v1.response")
    assert v1.controller_id == 2
    assert [t.name for t in v1.topics] == ["orders", "missing"]
    assert v1.topics[0].partitions[0].replica_nodes == (1, 2)


def test_fields_outside_the_version_are_dropped() -> None:
    """Metadata v0 has no controller, cluster id or topic id: the bytes equal those of a
    mapping without them."""
    slim = {
        "brokers": [{"node_id": b["node_id"], "host": b["host"], "port": b["port"]}
                    for b in METADATA_RESULT["brokers"]],
        "topics": [{k: v for k, v in t.items() if k in ("error_code", "name", "partitions")}
                   for t in METADATA_RESULT["topics"]],
    }
    header = RequestHeader(METADATA, 0, 1, None)
    assert encode_response(header, METADATA_RESULT) == encode_response(header, slim)
