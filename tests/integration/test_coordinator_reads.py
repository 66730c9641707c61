"""A group coordinator answers reads only from state its ISR holds: on a 3-broker cluster
whose other two brokers are frozen (SIGSTOP), an offset commit is appended on the
coordinator alone and never committed; OffsetFetch, then, must not answer it, for once the
coordinator is killed its successor's log lacks it and the group's offset would go back.

Issue 28: the hour-long campaign's monitor saw a group's committed offset go back
(8468 then 8462 on `__consumer_offsets-18`): OffsetFetch had answered from the shard's
memory, which applies a commit record as it is appended, before the ISR has it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic
from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kio.schema.errors import ErrorCode

from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.raw_client import RawClient
from tests.integration.test_share_offsets import coordinator_of
from tests.waiting import wait_until

GROUP = "positions-reader"
TOPIC = "positions"
COMMIT_TIMEOUT_MS = 1500
"""offsets.commit.timeout.ms: how long the frozen ISR keeps a commit (and a read) waiting."""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Sessions long enough that the frozen brokers stay unfenced, so in the ISR, while
    the coordinator waits for them."""
    with running_cluster(tmp_path / "cluster", 1, 3, {
            "broker.session.timeout.ms": "10000", "broker.heartbeat.interval.ms": "500",
            "offsets.commit.timeout.ms": str(COMMIT_TIMEOUT_MS)}) as cluster:
        yield cluster


def commit(client: RawClient, offset: int) -> ErrorCode:
    """An admin's OffsetCommit (no member) of `offset` for the topic's partition 0."""
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    response = client.request(OffsetCommitRequest[8](
        group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            partition(partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                      committed_metadata=None)])]), OffsetCommitResponse, 8)
    return ErrorCode(response.topics[0].partitions[0].error_code)


def fetch(client: RawClient) -> tuple[ErrorCode, int | None]:
    """OffsetFetch of the group: its error code, and the committed offset when it has one."""
    response = client.request(OffsetFetchRequest[7](group_id=GROUP, topics=None,
                                                     require_stable=False),
                              OffsetFetchResponse, 7)
    offsets = [p.committed_offset for t in response.topics for p in t.partitions]
    return ErrorCode(response.error_code), (offsets[0] if offsets else None)


def test_an_offset_the_isr_has_not_taken_is_not_fetched(cluster: Cluster) -> None:
    client = admin(cluster.bootstrap)  # kept: a collected AdminClient fails its futures
    client.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(TIMEOUT)
    found: list[tuple[int, int]] = []
    wait_until(lambda: found.append(coordinator_of(cluster.bootstrap, GROUP)) or True,
               ignoring=AssertionError, what="a group coordinator")
    node, port = found[-1]
    others = [n["name"] for n in cluster.layout["nodes"]
              if n["name"].startswith("broker-") and n["name"] != f"broker-{node}"]
    with RawClient(f"127.0.0.1:{port}", timeout=30) as reader, \
            RawClient(f"127.0.0.1:{port}", timeout=30) as writer:
        wait_until(lambda: commit(writer, 10) == ErrorCode.none, what="the first commit")
        assert fetch(reader) == (ErrorCode.none, 10)
        for name in others:
            cluster.pause(name)
        try:
            answers: list[tuple[ErrorCode, int | None]] = []
            refused: list[ErrorCode] = []
            second = threading.Thread(target=lambda: refused.append(commit(writer, 20)))
            second.start()
            while second.is_alive():
                answers.append(fetch(reader))
            second.join()
            # The shard was reloaded from a log whose end holds the uncommitted 20.
            answers.append(fetch(reader))
            cluster.stop(f"broker-{node}", kill=True)
        finally:
            for name in others:
                cluster.resume(name)
    assert refused == [ErrorCode.coordinator_not_available]

    successor: list[tuple[ErrorCode, int | None]] = []

    def fetched_from_the_successor() -> bool:
        _, successor_port = coordinator_of(cluster.broker_bootstrap(others[0]), GROUP)
        with RawClient(f"127.0.0.1:{successor_port}", timeout=30) as client_:
            successor.append(fetch(client_))
        return successor[-1][0] == ErrorCode.none

    wait_until(fetched_from_the_successor, 60, ignoring=(AssertionError, OSError),
               what=lambda: f"the successor's answer: {successor[-1:]}")
    assert successor[-1] == (ErrorCode.none, 10), "the successor holds the uncommitted 20"
    # Before the fix the coordinator answered 20 here: an offset that then went back to 10.
    assert {offset for code, offset in answers if code == ErrorCode.none} <= {10}, answers
