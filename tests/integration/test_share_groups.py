"""Share group membership (KIP-932) on a real broker, driven over the wire: members join with
ShareGroupHeartbeat and get the partitions the SimpleAssignor gives them once the share
coordinator has initialized their state, a member that stops heartbeating is fenced at its
session timeout and its partitions go to the others, ShareGroupDescribe and ListGroups (type
filter) show the group, DeleteGroups refuses it while it has members and deletes it once
empty, and after a broker restart the group and its assignment are read back from
`__consumer_offsets`. `odradek groups list|describe --type share` show the group as
kafka-share-groups.sh does. While confluent-kafka's ShareConsumer reads, the leader exports the
share-partition's SharePartitionMetrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)

from tests.integration import share_wire
from tests.integration.broker_metrics import sample, scrape
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, produce_values, unique
from tests.integration.raw_client import RawClient
from tests.integration.test_groups_cli import groups
from tests.waiting import wait_until

SESSION_TIMEOUT_MS = 8000
"""group.share.session.timeout.ms here: short, so that fencing comes soon."""
NONE, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, NON_EMPTY_GROUP = 0, 69, 25, 68


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root: Path = tmp_path_factory.mktemp("share-groups")
    process = BrokerProcess(root / "data", root / "broker.log",
                            {"group.share.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    process.start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    connection = RawClient(broker.bootstrap, timeout=30)
    yield connection
    connection.close()


def list_share_groups(client: RawClient, types: list[str]) -> dict[str, tuple[str, str, str]]:
    response = client.request(ListGroupsRequest[5](states_filter=[], types_filter=types),
                              ListGroupsResponse, 5)
    assert response.error_code == NONE
    return {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in response.groups}


def delete_group(client: RawClient, group: str) -> int:
    response = client.request(DeleteGroupsRequest[2](groups_names=[group]),
                              DeleteGroupsResponse, 2)
    (result,) = response.results
    return int(result.error_code)


def test_members_share_the_partitions_and_a_silent_member_is_fenced(
        broker: BrokerProcess, client: RawClient) -> None:
    topic = create_topic(broker.bootstrap, unique("share"), 4)
    group = unique("share-group")
    members = share_wire.Members(client, group, topic)
    for name in ("m1", "m2", "m3"):
        joined = members.beat(name)
        assert joined.member_id == name and joined.assignment is not None
    epoch = members.settle(("m1", "m2", "m3"), 4)
    assert epoch in (3, 4)  # 4 when the state was initialized after the last join
    sizes = sorted(len(members.partitions(m)) for m in ("m1", "m2", "m3"))
    assert sizes == [1, 1, 2]
    assert set().union(*(members.partitions(m) for m in ("m1", "m2", "m3"))) == {0, 1, 2, 3}

    (described,) = share_wire.describe(client, group)
    assert (described.error_code, described.group_state, described.group_epoch,
            described.assignment_epoch, described.assignor_name) == (
        NONE, "Stable", epoch, epoch, "simple")
    assert {m.member_id: (m.member_epoch, m.client_id, m.subscribed_topic_names,
                          sorted(m.assignment.get(topic, []))) for m in described.members} == {
        name: (epoch, "raw", [topic], sorted(members.partitions(name)))
        for name in ("m1", "m2", "m3")}
    assert list_share_groups(client, ["share"])[group] == ("share", "Stable", "share")
    assert group not in list_share_groups(client, ["consumer", "classic"])
    stable = sum(1 for _, state, _ in list_share_groups(client, ["share"]).values()
                 if state == "Stable")
    metrics = scrape(broker)
    assert sample(metrics, "kafka_server_group_coordinator_metrics_share_group_count",
                  state="stable") == stable
    assert sample(metrics, "kafka_server_group_coordinator_metrics_group_count",
                  protocol="share") == len(list_share_groups(client, ["share"]))
    assert delete_group(client, group) == NON_EMPTY_GROUP
    listed = groups(broker, "list", "--type", "share")
    assert [group, "Share", "Stable"] in [line.split() for line in listed.stdout.splitlines()]
    shown = groups(broker, "describe", "--type", "share", "--group", group, "--members")
    assert shown.returncode == 0, shown.stderr
    lines = [line.split() for line in shown.stdout.splitlines() if line]
    members_header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
    assert lines[lines.index(members_header):] == [  # after the state and offsets tables
        members_header,
        *([group, name, "/127.0.0.1", "raw", str(len(members.partitions(name))),
           f"{topic}:{','.join(map(str, sorted(members.partitions(name))))}"]
          for name in ("m1", "m2", "m3"))]

    # m3 falls silent: m1 and m2 heartbeat on until it is fenced, then take its partitions.
    def m3_fenced() -> bool:
        members.beat("m1")
        members.beat("m2")
        (now,) = share_wire.describe(client, group)
        return {m.member_id for m in now.members} == {"m1", "m2"}

    wait_until(m3_fenced, 60, "m3 fenced at its session timeout", interval=1.0)
    members.beat("m1")
    members.beat("m2")
    assert members.partitions("m1") | members.partitions("m2") == {0, 1, 2, 3}
    assert len(members.partitions("m1")) == len(members.partitions("m2")) == 2
    stale = share_wire.heartbeat(client, group, "m3", members.epochs["m3"])
    assert stale.error_code == UNKNOWN_MEMBER_ID

    for name in ("m1", "m2"):
        left = share_wire.heartbeat(client, group, name, -1)
        assert (left.error_code, left.member_id, left.member_epoch) == (NONE, name, -1)
    (empty,) = share_wire.describe(client, group)
    assert (empty.group_state, empty.members) == ("Empty", [])
    assert list_share_groups(client, ["share"])[group] == ("share", "Empty", "share")
    assert delete_group(client, group) == NONE
    (gone,) = share_wire.describe(client, group)
    assert (gone.error_code, gone.error_message) == (
        GROUP_ID_NOT_FOUND, f"Group {group} not found.")
    assert delete_group(client, group) == GROUP_ID_NOT_FOUND


def test_the_group_and_its_assignment_are_found_again_after_a_restart(
        broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("share-restart"), 3)
    group = unique("share-restart")
    client = RawClient(broker.bootstrap, timeout=30)
    try:
        members = share_wire.Members(client, group, topic)
        members.settle(("m1", "m2"), 3)
        (before,) = share_wire.describe(client, group)
    finally:
        client.close()
    assert before.group_state == "Stable" and len(before.members) == 2

    broker.restart()
    client = RawClient(broker.bootstrap, timeout=30)
    try:
        (after,) = share_wire.describe(client, group)
        assert after == before
        members.client = client
        for name in ("m1", "m2"):
            again = members.beat(name)
            assert (again.member_epoch, again.assignment) == (before.group_epoch, None)
        assert members.partitions("m1") | members.partitions("m2") == {0, 1, 2}
    finally:
        client.close()


def test_share_partition_metrics_while_a_share_consumer_reads(broker: BrokerProcess) -> None:
    """confluent-kafka's ShareConsumer reads ten records written as one batch once its
    share-partition is loaded. While its
    share session is open, the partition's SharePartitionMetrics show the batch put in flight
    (InFlightBatchMessageCount: one batch of ten) and a sample of FetchLockTimeMs and
    FetchLockRatio per ShareFetch that held the fetch lock. Once it has closed, the group is
    empty and the share-partition's series are gone with it, as in Kafka."""
    topic = create_topic(broker.bootstrap, unique("share-metrics"), 1)
    group = unique("share-metrics")
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    labels = {"group": group, "topic": topic, "partition": "0"}
    prefix = "kafka_server_sharepartitionmetrics_"
    values: list[bytes] = []

    def polled() -> bool:
        values.extend(m.value() for m in consumer.poll(1.0) if m.error() is None)
        return len(values) >= 10

    try:
        consumer.subscribe([topic])
        # the share-partition starts at the end of the log (share.auto.offset.reset latest)
        # on the first ShareFetch; its gauges show that it is held here
        wait_until(lambda: (prefix + "inflightmessagecount", frozenset(labels.items()))
                   in scrape(broker), 60, "the share-partition loaded", between=polled)
        produce_values(broker.bootstrap, topic, [b"%d" % i for i in range(10)])
        wait_until(polled, 60, lambda: f"ten records (got {len(values)})")
        metrics = scrape(broker)
        assert sample(metrics, prefix + "inflightbatchmessagecount_count", **labels) == 1
        assert sample(metrics, prefix + "inflightbatchmessagecount_sum", **labels) == 10
        fetches = sample(metrics, prefix + "fetchlocktimems_count", **labels)
        assert fetches >= 1
        assert sample(metrics, prefix + "fetchlockratio_count", **labels) == fetches
        assert 0 <= sample(metrics, prefix + "fetchlockratio_sum", **labels) <= 100 * fetches
        consumer.commit_sync()
    finally:
        consumer.close()
    wait_until(lambda: (prefix + "fetchlocktimems_count", frozenset(labels.items()))
               not in scrape(broker), 60, "the share-partition's series removed")
