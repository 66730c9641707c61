"""A Kafka client over one plain socket, for requests no high-level client will send: raw
bytes, chosen versions, hand-made record batches. Requests are built and responses parsed
with kafka-python's protocol classes, a codec independent of the broker's own (kio)."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Sequence
from typing import Any

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from odradek.protocol.record_codec import build_batch

PRODUCE_VERSION = 9
FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 7
METADATA_VERSION = 12
LATEST = -1


def header_v1(api_key: int, version: int, correlation_id: int, client_id: bytes = b"raw") -> bytes:
    """Request header v1 (no tagged fields): what every version of every API starts with."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def batch_of(records: Sequence[tuple[bytes | None, bytes | None]]) -> bytes:
    """A record batch stamped now, so that retention leaves it alone."""
    return build_batch(records, timestamp_ms=now_ms())


class RawClient:
    """One connection; each call sends one request and reads its response."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def local_port(self) -> int:
        return int(self.sock.getsockname()[1])

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_exact(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self.sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(chunks)} of {size} bytes")
            chunks += chunk
        return bytes(chunks)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self.recv_exact(4))
        return self.recv_exact(size)

    def next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def request(self, request: Any, response_class: Any, version: int) -> Any:
        correlation_id = self.next_correlation_id()
        request.with_header(correlation_id=correlation_id, client_id="raw")
        self.send_raw(request.encode(version=version, header=True, framed=True))
        response = response_class.decode(self.recv_frame(), version=version, header=True)
        assert response.header.correlation_id == correlation_id
        return response

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker closes the connection (EOF or reset) without answering;
        False if it answers or stays silent for `timeout` seconds."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    # --- requests ----------------------------------------------------------------------

    def api_versions(self) -> Any:
        return self.request(ApiVersionsRequest[0](), ApiVersionsResponse, 0)

    def metadata(self, topics: list[str] | None = None, auto_create: bool = False) -> Any:
        request = MetadataRequest[METADATA_VERSION](
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t)
                                                for t in topics],
            allow_auto_topic_creation=auto_create,
            include_topic_authorized_operations=False,
        )
        return self.request(request, MetadataResponse, METADATA_VERSION)

    def produce_partition(self, topic: str, partition: int, records: bytes,
                          version: int = PRODUCE_VERSION, acks: int = 1,
                          transactional_id: str | None = None) -> Any:
        """Produce one records blob; returns the partition's response."""
        partition_data = ProduceRequest.TopicProduceData.PartitionProduceData(
            index=partition, records=records)
        request = ProduceRequest[version](
            transactional_id=transactional_id, acks=acks, timeout_ms=10_000,
            topic_data=[ProduceRequest.TopicProduceData(name=topic,
                                                        partition_data=[partition_data])],
        )
        response = self.request(request, ProduceResponse, version)
        (topic_response,) = response.responses
        (partition_response,) = topic_response.partition_responses
        return partition_response

    def fetch_partition(self, topic: str, partition: int, offset: int,
                        max_bytes: int = 1 << 20, max_wait_ms: int = 0, min_bytes: int = 0,
                        session_id: int = 0, session_epoch: int = -1) -> Any:
        """Fetch one partition (by default without waiting); returns the partition's response,
        or the whole response when it carries no topics (a top-level error)."""
        fetch_partition = FetchRequest.FetchTopic.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=offset,
            log_start_offset=-1, partition_max_bytes=max_bytes)
        request = FetchRequest[FETCH_VERSION](
            replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
            isolation_level=0, session_id=session_id, session_epoch=session_epoch,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[fetch_partition])],
            forgotten_topics_data=[], rack_id="",
        )
        response = self.request(request, FetchResponse, FETCH_VERSION)
        if not response.responses:
            return response
        (topic_response,) = response.responses
        (partition_response,) = topic_response.partitions
        return partition_response

    def latest_offset(self, topic: str, partition: int) -> int:
        list_partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=LATEST)
        request = ListOffsetsRequest[LIST_OFFSETS_VERSION](
            replica_id=-1, isolation_level=0,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[list_partition])],
        )
        response = self.request(request, ListOffsetsResponse, LIST_OFFSETS_VERSION)
        (topic_response,) = response.topics
        (partition_response,) = topic_response.partitions
        assert partition_response.error_code == 0, partition_response
        return int(partition_response.offset)
