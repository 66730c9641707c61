"""Kafka protocol codec benchmark: kio versus kafka-python's schema codec (`kafka.protocol`).

Times message bodies only (no request/response header, no size frame), best of several
timeit repeats. Every input is checked first: both libraries must encode the same bytes and
decode them back to the same message, so a broken path cannot be timed.

Usage: .venv/bin/python bench/codec_bench.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import struct
import timeit
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from importlib import metadata
from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest as KpFetchRequest
from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.metadata.metadata import MetadataResponse as KpMetadataResponse
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as kio_fetch_req
from kio.schema.fetch.v12 import response as kio_fetch_resp
from kio.schema.metadata.v12 import response as kio_meta
from kio.schema.produce.v9 import request as kio_produce
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

PRODUCE_VERSION = 9
FETCH_VERSION = 12
METADATA_VERSION = 12
BROKERS = (1, 2, 3)


class ChunkWriter:
    """A kio `Writable` that keeps large writes (record blobs) by reference.

    Small writes are coalesced; `chunks()` is ready for `transport.writelines`.
    """

    def __init__(self, threshold: int = 1024) -> None:
        self._threshold = threshold
        self._chunks: list[bytes | bytearray] = []
        self._small = bytearray()

    def write(self, data: bytes) -> int:
        if len(data) >= self._threshold:
            if self._small:
                self._chunks.append(self._small)
                self._small = bytearray()
            self._chunks.append(data)
        else:
            self._small += data
        return len(data)

    def chunks(self) -> list[bytes | bytearray]:
        if self._small:
            self._chunks.append(self._small)
            self._small = bytearray()
        return self._chunks


def kio_encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def kio_encode_chunks(entity: Any) -> list[bytes | bytearray]:
    writer = ChunkWriter()
    entity_writer(type(entity))(writer, entity)  # type: ignore[arg-type]
    return writer.chunks()


PARTITION_HEAD = struct.Struct(">ihqqq")


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def struct_encode_fetch_response(
    response: kio_fetch_resp.FetchResponse,
) -> list[bytes | bytearray]:
    """Hand-written Fetch v12 body encoder (no aborted transactions, no tagged fields):
    the floor a special-cased hot path could reach. Record blobs are passed by reference."""
    throttle_ms = round(response.throttle_time.total_seconds() * 1000)
    head = bytearray(struct.pack(">ihi", throttle_ms, response.error_code, response.session_id))
    head += uvarint(len(response.responses) + 1)
    chunks: list[bytes | bytearray] = []
    for topic in response.responses:
        name = topic.topic.encode()
        head += uvarint(len(name) + 1) + name + uvarint(len(topic.partitions) + 1)
        for p in topic.partitions:
            assert p.records is not None and p.aborted_transactions is None
            head += PARTITION_HEAD.pack(
                p.partition_index,
                p.error_code,
                p.high_watermark,
                p.last_stable_offset,
                p.log_start_offset,
            )
            head += b"\x00" + struct.pack(">i", p.preferred_read_replica)
            head += uvarint(len(p.records) + 1)
            chunks += (head, p.records)
            head = bytearray(b"\x00")  # partition tagged fields
        head += b"\x00"  # topic tagged fields
    chunks.append(head + b"\x00")  # response tagged fields
    return chunks


def kio_decode(entity_type: type[Any], data: bytes) -> Any:
    entity, size = entity_reader(entity_type)(data, 0)
    assert size == len(data)
    return entity


def blob(size: int, seed: int) -> bytes:
    return bytes((seed + i) % 251 for i in range(256)) * (size // 256)


def produce_request() -> kio_produce.ProduceRequest:
    partition = kio_produce.PartitionProduceData(index=i32(0), records=Records(blob(1 << 20, 0)))
    topic = kio_produce.TopicProduceData(name=TopicName("events"), partition_data=(partition,))
    return kio_produce.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=30)),
        topic_data=(topic,),
    )


def fetch_request() -> kio_fetch_req.FetchRequest:
    topics = tuple(
        kio_fetch_req.FetchTopic(
            topic=TopicName(f"topic-{t}"),
            partitions=tuple(
                kio_fetch_req.FetchPartition(
                    partition=i32(p),
                    current_leader_epoch=i32(5),
                    fetch_offset=i64(1_000_000 + p),
                    last_fetched_epoch=i32(5),
                    log_start_offset=i64(-1),
                    partition_max_bytes=i32(1 << 20),
                )
                for p in range(10)
            ),
        )
        for t in range(5)
    )
    return kio_fetch_req.FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(50 << 20),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=topics,
        forgotten_topics_data=(),
    )


def fetch_response(record_bytes: int) -> tuple[Any, Any]:
    records = [blob(record_bytes, p) for p in range(50)]
    kio_entity = kio_fetch_resp.FetchResponse(
        throttle_time=i32Timedelta.parse(timedelta(0)),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            kio_fetch_resp.FetchableTopicResponse(
                topic=TopicName("events"),
                partitions=tuple(
                    kio_fetch_resp.PartitionData(
                        partition_index=i32(p),
                        error_code=ErrorCode.none,
                        high_watermark=i64(2_000_000),
                        last_stable_offset=i64(2_000_000),
                        log_start_offset=i64(0),
                        aborted_transactions=None,
                        records=Records(records[p]),
                    )
                    for p in range(50)
                ),
            ),
        ),
    )
    kp = KpFetchResponse
    kp_topic = kp.FetchableTopicResponse
    kp_message = kp(
        version=FETCH_VERSION,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            kp_topic(
                topic="events",
                partitions=[
                    kp_topic.PartitionData(
                        partition_index=p,
                        error_code=0,
                        high_watermark=2_000_000,
                        last_stable_offset=2_000_000,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records[p],
                    )
                    for p in range(50)
                ],
            )
        ],
    )
    return kio_entity, kp_message


def metadata_response(topics: int, partitions: int) -> tuple[Any, Any]:
    names = [f"topic-{t}" for t in range(topics)]
    ids = [uuid.UUID(int=t + 1) for t in range(topics)]
    kio_entity = kio_meta.MetadataResponse(
        throttle_time=i32Timedelta.parse(timedelta(0)),
        brokers=tuple(
            kio_meta.MetadataResponseBroker(
                node_id=BrokerId(b), host=f"broker-{b}", port=i32(9092), rack=None
            )
            for b in BROKERS
        ),
        cluster_id="odradek-bench",
        controller_id=BrokerId(1),
        topics=tuple(
            kio_meta.MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=TopicName(names[t]),
                topic_id=ids[t],
                partitions=tuple(
                    kio_meta.MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=i32(p),
                        leader_id=BrokerId(BROKERS[p % 3]),
                        leader_epoch=i32(7),
                        replica_nodes=tuple(BrokerId(b) for b in BROKERS),
                        isr_nodes=tuple(BrokerId(b) for b in BROKERS),
                    )
                    for p in range(partitions)
                ),
            )
            for t in range(topics)
        ),
    )
    kp = KpMetadataResponse
    kp_topic = kp.MetadataResponseTopic
    kp_message = kp(
        version=METADATA_VERSION,
        throttle_time_ms=0,
        brokers=[
            kp.MetadataResponseBroker(node_id=b, host=f"broker-{b}", port=9092, rack=None)
            for b in BROKERS
        ],
        cluster_id="odradek-bench",
        controller_id=1,
        topics=[
            kp_topic(
                error_code=0,
                name=names[t],
                topic_id=ids[t],
                is_internal=False,
                partitions=[
                    kp_topic.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=BROKERS[p % 3],
                        leader_epoch=7,
                        replica_nodes=list(BROKERS),
                        isr_nodes=list(BROKERS),
                        offline_replicas=[],
                    )
                    for p in range(partitions)
                ],
            )
            for t in range(topics)
        ],
    )
    return kio_entity, kp_message


def decode_case(kio_entity: Any, kp_type: Any, version: int) -> dict[str, Callable[[], Any]]:
    """Bytes from kio's encoder; both decoders must read them back exactly."""
    data = kio_encode(kio_entity)
    entity_type = type(kio_entity)
    assert kio_decode(entity_type, data) == kio_entity
    assert bytes(kp_type.decode(data, version=version).encode()) == data
    return {
        "kio": lambda: entity_reader(entity_type)(data, 0),
        "kafka-python": lambda: kp_type.decode(data, version=version),
    }


ChunkEncoder = Callable[[Any], list[bytes | bytearray]]


def encode_case(
    kio_entity: Any, kp_message: Any, kp_type: Any, chunked: dict[str, ChunkEncoder] | None = None
) -> dict[str, Callable[[], Any]]:
    """Both encoders must emit the same bytes, and both decoders must read them back.

    `chunked` encoders (Fetch responses) must emit the same bytes too, with every record
    blob passed through as the very same object, not a copy.
    """
    data = kio_encode(kio_entity)
    version = kp_message.API_VERSION
    assert bytes(kp_message.encode(version=version)) == data
    assert kio_decode(type(kio_entity), data) == kio_entity
    assert kp_type.decode(data, version=version) == kp_message
    fns = {
        "kio": lambda: kio_encode(kio_entity),
        "kafka-python": lambda: kp_message.encode(version=version),
    }
    for name, encode in (chunked or {}).items():
        pieces = encode(kio_entity)
        assert b"".join(pieces) == data
        blobs = [p.records for topic in kio_entity.responses for p in topic.partitions]
        assert all(any(piece is b for piece in pieces) for b in blobs), "records were copied"
        fns[name] = partial(encode, kio_entity)
    return fns


def build_cases() -> dict[str, dict[str, Callable[[], Any]]]:
    return {
        "decode Produce v9 req, 1 x 1 MiB": decode_case(
            produce_request(), KpProduceRequest, PRODUCE_VERSION
        ),
        "decode Fetch v12 req, 50 parts": decode_case(
            fetch_request(), KpFetchRequest, FETCH_VERSION
        ),
        "encode Fetch v12 resp, 50 x 16 KiB": encode_case(
            *fetch_response(16 << 10),
            KpFetchResponse,
            {"kio chunks": kio_encode_chunks, "struct chunks": struct_encode_fetch_response},
        ),
        "encode Fetch v12 resp, 50 x 0 B": encode_case(*fetch_response(0), KpFetchResponse),
        "encode Metadata v12 resp, 1 x 1000": encode_case(
            *metadata_response(1, 1000), KpMetadataResponse
        ),
        "encode Metadata v12 resp, 10 x 100": encode_case(
            *metadata_response(10, 100), KpMetadataResponse
        ),
    }


def best_us(fn: Callable[[], Any], repeat: int) -> float:
    """Best time per call over `repeat` loops of about 40 ms each, in microseconds.

    Many short loops rather than a few long ones: the minimum then survives the noisy
    neighbours of a small VM.
    """
    timer = timeit.Timer(fn)
    number = max(1, timer.autorange()[0] // 5)
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timeit repeats (best is kept)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    codecs = ("kio", "kio chunks", "kafka-python", "struct chunks")
    results = {
        case: {codec: best_us(fn, args.repeat) for codec, fn in fns.items()}
        for case, fns in build_cases().items()
    }
    machine = {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "kio": metadata.version("kio"),
        "kafka-python": metadata.version("kafka-python"),
    }
    if args.json:
        print(json.dumps({"machine": machine, "us_per_op": results}, indent=2))
        return
    print(", ".join(f"{key}={value}" for key, value in machine.items()))
    header = f"{'case (us/op, best of ' + str(args.repeat) + ')':38}"
    print(header + "".join(f"{c:>14}" for c in codecs) + f"{'kp/kio':>8}")
    for case, times in results.items():
        cells = "".join(f"{times[c]:14.1f}" if c in times else f"{'-':>14}" for c in codecs)
        print(f"{case:38}{cells}{times['kafka-python'] / times['kio']:8.2f}")


if __name__ == "__main__":
    main()
