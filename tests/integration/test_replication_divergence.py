"""Acknowledgements a leader must not give (both found by the fault campaign as lost
acknowledged writes, see docs/reliability.md):

- a follower's fetch counts toward the high watermark only where its log agrees with the
  leader's (Kafka's diverging-epoch check, Fetch v12); the follower's fetches are sent here by
  hand, as broker F would send them, while the real F is frozen;
- the first batch of a transaction, which waits for the coordinator's verification, is
  answered with its acks=all outcome, not NONE.

The cluster keeps a frozen follower registered and in the ISR throughout."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kio.schema.errors import ErrorCode

from odradek.protocol.record_codec import build_batch
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import Cluster, partitions, running_cluster
from tests.integration.raw_client import RawClient, batch_of
from tests.waiting import wait_until

FETCH_VERSION = 12
"""The first version with LastFetchedEpoch and DivergingEpoch; Odradek's followers send it."""
PATIENT = {"broker.session.timeout.ms": "120000", "replica.lag.time.max.ms": "120000"}
"""Long enough that the frozen follower stays registered and in the ISR for the test."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("divergence"), 1, 2, PATIENT) as running:
        yield running


def fetch_as(raw: RawClient, follower: int, topic: str, leader_epoch: int, fetch_offset: int,
             last_fetched_epoch: int) -> Any:
    """The partition's answer to a Fetch that broker `follower` could send."""
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset,
        last_fetched_epoch=last_fetched_epoch, log_start_offset=0, partition_max_bytes=1 << 20)
    request = FetchRequest[FETCH_VERSION](
        replica_id=follower, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
        forgotten_topics_data=[], rack_id="")
    response = raw.request(request, FetchResponse, FETCH_VERSION)
    (answer,) = response.responses[0].partitions
    return answer


def test_a_fetch_from_a_diverged_log_does_not_move_the_high_watermark(cluster: Cluster) -> None:
    topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=2)
    wait_until(lambda: len(partitions(cluster.bootstrap, topic)[0].isrs) == 2, 30,
               lambda: f"both replicas in the ISR: {partitions(cluster.bootstrap, topic)[0]}")
    leader = partitions(cluster.bootstrap, topic)[0].leader
    follower = next(r for r in partitions(cluster.bootstrap, topic)[0].replicas if r != leader)
    with RawClient(cluster.broker_bootstrap(f"broker-{leader}"), timeout=30) as raw:
        metadata = raw.metadata([topic])
        epoch = metadata.topics[0].partitions[0].leader_epoch
        assert raw.produce_partition(topic, 0, batch_of([(b"k", b"first")]), acks=-1
                                     ).error_code == ErrorCode.none
        cluster.pause(f"broker-{follower}")
        try:
            assert raw.produce_partition(topic, 0, batch_of([(b"k", b"second")]), acks=1
                                         ).error_code == ErrorCode.none
            assert raw.latest_offset(topic, 0) == 1  # the high watermark: only F holds 0

            # F's log holds a record of a later epoch, as after following a successor
            unknown = fetch_as(raw, follower, topic, epoch, 2, epoch + 1)
            assert unknown.error_code == ErrorCode.offset_out_of_range
            assert raw.latest_offset(topic, 0) == 1

            # F's log runs past where epoch `epoch` ends here
            diverged = fetch_as(raw, follower, topic, epoch, 5, epoch)
            assert (diverged.error_code, len(diverged.records or b"")) == (ErrorCode.none, 0)
            assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == \
                (epoch, 2)
            assert raw.latest_offset(topic, 0) == 1

            # the same fetch from a log that agrees moves it
            agreed = fetch_as(raw, follower, topic, epoch, 2, epoch)
            assert agreed.error_code == ErrorCode.none
            assert raw.latest_offset(topic, 0) == 2
        finally:
            cluster.resume(f"broker-{follower}")


def test_a_follower_whose_log_agrees_still_replicates(cluster: Cluster) -> None:
    """Runs after the first: the real follower, resumed, replicates and acknowledges as
    before (the check refuses only diverged fetches, not those of a log that agrees)."""
    topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=2)
    leader = partitions(cluster.bootstrap, topic)[0].leader
    with RawClient(cluster.broker_bootstrap(f"broker-{leader}"), timeout=30) as raw:
        # Metadata may name the leader before the leader has applied its leadership
        wait_until(lambda: raw.latest_offset(topic, 0) == 0, what="the leader serves",
                   ignoring=AssertionError)
        for value in (b"a", b"b", b"c"):
            assert raw.produce_partition(topic, 0, batch_of([(b"k", value)]), acks=-1
                                         ).error_code == ErrorCode.none
        assert raw.latest_offset(topic, 0) == 3


def until_answered(send: Callable[[], Any], error_of: Callable[[Any], int]) -> Any:
    """A coordinator request, again while the coordinator is still loading or moving."""
    answers: list[Any] = []

    def settled() -> bool:
        answers[:] = [send()]
        return error_of(answers[0]) not in RETRIABLE_COORDINATOR_ERRORS

    wait_until(settled, 60, lambda: f"the coordinator answers: {answers}")
    return answers[0]


RETRIABLE_COORDINATOR_ERRORS = (ErrorCode.coordinator_not_available,
                                ErrorCode.coordinator_load_in_progress,
                                ErrorCode.not_coordinator, ErrorCode.concurrent_transactions)


def coordinated_by(cluster: Cluster, broker: int) -> str:
    """A transactional id whose transaction coordinator is `broker`."""
    with RawClient(cluster.broker_bootstrap(f"broker-{broker}"), timeout=30) as raw:
        for _ in range(64):
            candidate = f"txn-{uuid.uuid4().hex[:8]}"
            found = until_answered(lambda key=candidate: raw.request(FindCoordinatorRequest[4](
                key_type=1, coordinator_keys=[key]), FindCoordinatorResponse, 4),
                lambda r: r.coordinators[0].error_code)
            if found.coordinators[0].node_id == broker:
                return candidate
    raise AssertionError(f"no transactional id found that broker {broker} coordinates")


def test_a_transactional_write_the_isr_does_not_commit_in_time_is_not_acknowledged(
        cluster: Cluster) -> None:
    """The fault campaign's lost writes: the first batch of a transaction on a partition
    waits for the coordinator's verification, and its acks=all outcome was then recorded on
    a copy of its answer, so a write the ISR never committed (here: a frozen follower, a
    short timeout) was answered NONE and later truncated. It must be REQUEST_TIMED_OUT."""
    topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=2)
    wait_until(lambda: len(partitions(cluster.bootstrap, topic)[0].isrs) == 2, 30,
               lambda: f"both replicas in the ISR: {partitions(cluster.bootstrap, topic)[0]}")
    leader = partitions(cluster.bootstrap, topic)[0].leader
    follower = next(r for r in partitions(cluster.bootstrap, topic)[0].replicas if r != leader)
    transactional_id = coordinated_by(cluster, leader)  # the frozen follower cannot verify
    with RawClient(cluster.broker_bootstrap(f"broker-{leader}"), timeout=30) as raw:
        init = until_answered(lambda: raw.request(InitProducerIdRequest[4](
            transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1,
            producer_epoch=-1), InitProducerIdResponse, 4), lambda r: r.error_code)
        assert init.error_code == ErrorCode.none
        added = raw.request(AddPartitionsToTxnRequest[3](
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(
                name=topic, partitions=[0])]), AddPartitionsToTxnResponse, 3)
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0]. \
            partition_error_code == ErrorCode.none
    records = build_batch([(b"k", b"in a transaction")], timestamp_ms=time.time_ns() // 10**6,
                          producer_id=init.producer_id, producer_epoch=init.producer_epoch,
                          base_sequence=0, is_transactional=True)
    cluster.pause(f"broker-{follower}")
    try:
        with RawClient(cluster.broker_bootstrap(f"broker-{leader}"), timeout=30) as raw:
            partition = ProduceRequest.TopicProduceData.PartitionProduceData(
                index=0, records=records)
            request = ProduceRequest[9](
                transactional_id=transactional_id, acks=-1, timeout_ms=2_000,
                topic_data=[ProduceRequest.TopicProduceData(name=topic,
                                                            partition_data=[partition])])
            response = raw.request(request, ProduceResponse, 9)
            answer = response.responses[0].partition_responses[0]
            assert answer.error_code == ErrorCode.request_timed_out, answer
    finally:
        cluster.resume(f"broker-{follower}")
