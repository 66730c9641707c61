"""A follower's fetch counts toward the high watermark only where its log agrees with the
leader's (Kafka's diverging-epoch check, Fetch v12). The fault campaign lost acknowledged
writes without it: a leader paused past its session timeout, once resumed, took fetches from
followers that already followed its successor. They came at the old leader epoch with offsets
of the successor's records, and moved the old leader's high watermark over records no follower
held, acknowledging an acks=all write that the successor's log then overwrote.

The follower's fetches are sent here by hand, as broker F would send them, while the real F is
frozen; the cluster keeps F registered and in the ISR throughout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kio.schema.errors import ErrorCode

from tests.integration.cluster import Cluster, admin, create, partitions, running_cluster
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
    topic = create(admin(cluster.bootstrap), 1, 2)
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
    topic = create(admin(cluster.bootstrap), 1, 2)
    leader = partitions(cluster.bootstrap, topic)[0].leader
    with RawClient(cluster.broker_bootstrap(f"broker-{leader}"), timeout=30) as raw:
        for value in (b"a", b"b", b"c"):
            assert raw.produce_partition(topic, 0, batch_of([(b"k", value)]), acks=-1
                                         ).error_code == ErrorCode.none
        assert raw.latest_offset(topic, 0) == 3
