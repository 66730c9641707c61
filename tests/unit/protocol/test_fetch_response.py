"""The hot-path Fetch encoder writes exactly the bytes kio's generated codec writes."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol import codec
from odradek.protocol.fetch_response import (
    FetchedPartition,
    FetchedTopic,
    NodeEndpoint,
    encode_fetch_body,
)

FETCH = 1

partitions = st.builds(
    FetchedPartition,
    partition_index=st.integers(0, 1000),
    error_code=st.sampled_from([0, 1, 3, 100]),
    high_watermark=st.integers(-1, 2**40),
    last_stable_offset=st.integers(-1, 2**40),
    log_start_offset=st.integers(-1, 2**40),
    records=st.binary(max_size=300),
    current_leader=st.one_of(st.none(), st.tuples(st.integers(-1, 5), st.integers(-1, 2**31 - 1))),
    aborted_transactions=st.one_of(st.none(), st.lists(
        st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)), max_size=3)),
    preferred_read_replica=st.integers(-1, 5),
    diverging_epoch=st.one_of(st.none(), st.tuples(st.integers(0, 2**31 - 1),
                                                   st.integers(-1, 2**40))),
)
endpoints = st.lists(st.builds(
    NodeEndpoint, node_id=st.integers(0, 5), host=st.text(alphabet="h.0-9", min_size=1),
    port=st.integers(1, 65535), rack=st.one_of(st.none(), st.text(alphabet="rack-1", max_size=8)),
), max_size=3)
topics = st.builds(
    FetchedTopic,
    name=st.text(alphabet="abc._-", min_size=1, max_size=20),
    topic_id=st.uuids(),
    partitions=st.lists(partitions, max_size=4),
)


def kio_bytes(version: int, topic_list: list[FetchedTopic], error_code: int, session: int,
              nodes: list[NodeEndpoint]) -> bytes:
    data = {
        "node_endpoints": [
            {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack} for n in nodes
        ],
        "throttle_time": 0,
        "error_code": error_code,
        "session_id": session,
        "responses": [
            {
                "topic": t.name,
                "topic_id": t.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": p.error_code,
                        "high_watermark": p.high_watermark,
                        "last_stable_offset": p.last_stable_offset,
                        "log_start_offset": p.log_start_offset,
                        "aborted_transactions": None if p.aborted_transactions is None else [
                            {"producer_id": producer_id, "first_offset": first_offset}
                            for producer_id, first_offset in p.aborted_transactions],
                        "preferred_read_replica": p.preferred_read_replica,
                        "records": p.records,
                        **({"diverging_epoch": {"epoch": p.diverging_epoch[0],
                                                "end_offset": p.diverging_epoch[1]}}
                           if p.diverging_epoch is not None else {}),
                        **({"current_leader": {"leader_id": p.current_leader[0],
                                               "leader_epoch": p.current_leader[1]}}
                           if p.current_leader is not None else {}),
                    }
                    for p in t.partitions
                ],
            }
            for t in topic_list
        ],
    }
    return codec.encode_body(codec.build_response(FETCH, version, data))


@given(
    version=st.integers(4, 17),
    topic_list=st.lists(topics, max_size=3),
    error_code=st.sampled_from([0, 70]),
    session=st.integers(0, 2**31 - 1),
    nodes=endpoints,
)
@settings(max_examples=300, deadline=None)
def test_matches_kio_for_every_version(
    version: int, topic_list: list[FetchedTopic], error_code: int, session: int,
    nodes: list[NodeEndpoint],
) -> None:
    ours = b"".join(encode_fetch_body(version, topic_list, error_code, session,
                                      node_endpoints=nodes))
    expected = kio_bytes(version, topic_list, error_code if version >= 7 else 0,
                         session if version >= 7 else 0, nodes)
    assert ours == expected


def test_records_are_passed_by_reference() -> None:
    blob = memoryview(bytearray(b"r" * 4096))
    topic = FetchedTopic("t", uuid.uuid4(), [FetchedPartition(0, 0, 10, 10, 0, blob)])
    parts = encode_fetch_body(12, [topic])
    assert any(part is blob for part in parts)


def test_a_partition_with_an_error_carries_empty_records_not_null() -> None:
    """librdkafka reads a null records field as a malformed response and never sees the
    error code before it, so it retries the same fetch forever."""
    topic = FetchedTopic("t", uuid.uuid4(), [FetchedPartition(0, 74)])
    body = b"".join(encode_fetch_body(12, [topic]))
    # preferred read replica -1, then the compact records length: 1 (empty), not 0 (null),
    # then the partition's, the topic's and the response's empty tagged fields
    assert body.endswith(b"\xff\xff\xff\xff" + b"\x01" + b"\x00\x00\x00")
