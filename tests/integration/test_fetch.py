"""Fetch semantics over a raw socket: long polling woken by new data, byte limits (KIP-74),
the high watermark bound, and the sessionless KIP-227 path."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from odradek.protocol.record_codec import decode_records
from tests.integration.broker_metrics import scrape
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.raw_client import FETCH_VERSION, RawClient, batch_of
from tests.waiting import wait_until

FETCH_SESSION_ID_NOT_FOUND = 70
OFFSET_OUT_OF_RANGE = 1


def fetches_taken(broker: BrokerProcess) -> float:
    """Fetch requests the broker has taken in. It counts a request and runs its handler in
    one turn of its event loop: once a long poll on an empty log is counted, it waits."""
    key = ("kafka_network_requestmetrics_requests_total",
           frozenset({"request": "Fetch", "version": str(FETCH_VERSION)}.items()))
    return scrape(broker).get(key, 0.0)


def test_long_poll_returns_as_soon_as_data_arrives(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("fetch"))
    waiting, producing = RawClient(broker.bootstrap), RawClient(broker.bootstrap)
    taken = fetches_taken(broker)
    with ThreadPoolExecutor(1) as pool:
        fetch = pool.submit(waiting.fetch_partition, topic, 0, 0, max_wait_ms=20_000,
                            min_bytes=1)
        wait_until(lambda: fetches_taken(broker) > taken, 10, "the broker took the fetch")
        assert not fetch.done(), "a fetch of an empty log waits for data"
        started = time.monotonic()
        assert producing.produce_partition(topic, 0, batch_of([(b"k", b"wake")])).error_code == 0
        response = fetch.result(timeout=30)
        elapsed = time.monotonic() - started
    assert [r.value for r in decode_records(response.records)] == [b"wake"]
    # the produce ends the wait, far before max_wait (a poller would sit out 20 s)
    assert elapsed < 10


def test_long_poll_without_data_waits_max_wait(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("fetch"))
    client = RawClient(broker.bootstrap)
    started = time.monotonic()
    response = client.fetch_partition(topic, 0, 0, max_wait_ms=700, min_bytes=1)
    assert time.monotonic() - started >= 0.65
    assert response.error_code == 0 and not response.records
    assert response.high_watermark == 0


def test_partition_max_bytes_returns_whole_batches_and_at_least_one(
    broker: BrokerProcess,
) -> None:
    topic = create_topic(broker.bootstrap, unique("fetch"))
    client = RawClient(broker.bootstrap)
    batches = [batch_of([(None, bytes([i]) * 1000)]) for i in range(5)]
    for batch in batches:
        assert client.produce_partition(topic, 0, batch).error_code == 0
    size = len(batches[0])

    two = client.fetch_partition(topic, 0, 0, max_bytes=2 * size + size // 2)
    assert [r.offset for r in decode_records_all(two.records)] == [0, 1]
    # KIP-74: a first batch larger than the limit still comes back whole
    tiny = client.fetch_partition(topic, 0, 3, max_bytes=10)
    assert [r.offset for r in decode_records_all(tiny.records)] == [3]
    assert tiny.high_watermark == 5


def test_out_of_range_and_session_errors(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("fetch"))
    client = RawClient(broker.bootstrap)
    assert client.produce_partition(topic, 0, batch_of([(None, b"x")])).error_code == 0
    assert client.fetch_partition(topic, 0, 5).error_code == OFFSET_OUT_OF_RANGE
    stale = client.fetch_partition(topic, 0, 0, session_id=1234, session_epoch=3)
    assert stale.error_code == FETCH_SESSION_ID_NOT_FOUND
    # the sessionless full fetch still works on the same connection
    assert [r.value for r in decode_records(client.fetch_partition(topic, 0, 0).records)] == [b"x"]


def decode_records_all(blob: bytes) -> list:  # type: ignore[type-arg]
    """Every record of every whole batch in a Fetch records blob."""
    from odradek.protocol.records import iter_batches

    return [
        record
        for batch in iter_batches(blob)
        for record in decode_records(memoryview(blob)[batch.position : batch.end])
    ]


def test_old_fetch_versions_without_session_fields(broker: BrokerProcess) -> None:
    """Fetch v4-v6 (advertised) carry no session id or epoch."""
    from kafka.protocol.consumer import FetchRequest, FetchResponse

    topic = create_topic(broker.bootstrap, unique("fetch"))
    client = RawClient(broker.bootstrap)
    assert client.produce_partition(topic, 0, batch_of([(None, b"old")])).error_code == 0
    for version in (4, 5, 6):
        partition = FetchRequest.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
            partition_max_bytes=1 << 20)
        request = FetchRequest[version](
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])])
        response = client.request(request, FetchResponse, version)
        (fetched,) = response.responses[0].partitions
        assert fetched.error_code == 0
        assert [r.value for r in decode_records(fetched.records)] == [b"old"]
