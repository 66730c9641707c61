"""`odradek quorum describe` against a real 3-controller, 3-broker cluster and a real
`odradek dev`: the active controller leads, the brokers observe, offsets and lags follow
metadata changes, a stopped broker falls behind, a killed controller is replaced; the
broker's DescribeQuorum answer decodes with kafka-python, an independent codec."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeQuorumRequest, DescribeQuorumResponse
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker_process import ODRADEK, BrokerProcess, free_port
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

CONTROLLERS = [1001, 1002, 1003]
BROKERS = [1, 2, 3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("quorum"), 3, 3,
                         {"broker.heartbeat.interval.ms": "500"}) as cluster:
        yield cluster


def command(bootstrap: str, *arguments: str, timeout: float = 15) -> list[str]:
    return [*ODRADEK, "quorum", "--bootstrap-server", bootstrap, "--timeout", str(timeout),
            "describe", *arguments]


def quorum(bootstrap: str, *arguments: str, check: bool = True, timeout: float = 15
           ) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command(bootstrap, *arguments, timeout=timeout),
                            capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def status(bootstrap: str) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads(quorum(bootstrap, "--status", "--json").stdout)
    return fields


def replication(bootstrap: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The rows by (Status, NodeId)."""
    rows = json.loads(quorum(bootstrap, "--replication", "--json").stdout)
    return {(row["Status"], row["NodeId"]): row for row in rows}


def active_id(cluster: Cluster) -> int:
    return int(cluster.node(cluster.active_controller())["id"])


def timed_out_answers(cluster: Cluster, broker: str) -> float:
    """DescribeQuorum answers with REQUEST_TIMED_OUT the broker has sent (its ErrorsPerSec)."""
    url = f"http://127.0.0.1:{cluster.node(broker)['metrics_port']}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "kafka_network_requestmetrics_errors_total"
               and sample.labels == {"request": "DescribeQuorum", "error": "REQUEST_TIMED_OUT"})


def all_caught_up(bootstrap: str, leader: int) -> bool:
    rows = replication(bootstrap)
    observers = sorted(node for kind, node in rows if kind == "Observer")
    return (("Leader", leader) in rows and observers == BROKERS
            and all(row["Lag"] == 0 for row in rows.values()))


# --- a 3 + 3 cluster ----------------------------------------------------------------------


def test_status_names_the_active_controller_the_voters_and_the_brokers(cluster: Cluster
                                                                       ) -> None:
    leader = active_id(cluster)
    wait_until(lambda: status(cluster.bootstrap)["CurrentObservers"] == BROKERS,
               what="every broker observes the metadata log", ignoring=Exception)
    fields = status(cluster.bootstrap)
    assert fields["LeaderId"] == leader
    assert fields["CurrentVoters"] == CONTROLLERS
    assert fields["ClusterId"] == admin(cluster.bootstrap).describe_cluster(
        request_timeout=TIMEOUT).result(TIMEOUT).cluster_id
    assert fields["LeaderEpoch"] >= 1 and fields["HighWatermark"] > 0
    text = quorum(cluster.broker_bootstrap("broker-2"), "--status").stdout.splitlines()
    assert text[1] == f"LeaderId:               {leader}"
    assert text[6] == f"CurrentVoters:          [{','.join(map(str, CONTROLLERS))}]"
    assert [line.split(":")[0] for line in text] == [
        "ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
        "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"]


def test_the_high_watermark_advances_with_a_metadata_change(cluster: Cluster) -> None:
    before = status(cluster.bootstrap)["HighWatermark"]
    create_topic(cluster.bootstrap, unique("t"), 1, replication=3)
    wait_until(lambda: status(cluster.bootstrap)["HighWatermark"] > before,
               what=f"the high watermark passes {before}", ignoring=Exception)


def test_every_voter_and_observer_has_a_row_and_catches_up(cluster: Cluster) -> None:
    leader = active_id(cluster)
    create_topic(cluster.bootstrap, unique("t"), 2, replication=3)
    wait_until(lambda: all_caught_up(cluster.bootstrap, leader),
               what="all six replicas of the metadata log catch up", ignoring=Exception)
    rows = replication(cluster.broker_bootstrap("broker-3"))
    assert sorted(rows) == sorted(
        [("Leader", leader)] + [("Follower", c) for c in CONTROLLERS if c != leader]
        + [("Observer", b) for b in BROKERS])
    end = rows[("Leader", leader)]["LogEndOffset"]
    assert all(row["LogEndOffset"] == end and row["LastCaughtUpTimestamp"] > 0
               for row in rows.values())
    table = quorum(cluster.bootstrap, "--replication", "--human-readable").stdout.splitlines()
    assert table[0].split() == ["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                                "LastCaughtUpTimestamp", "Status"]
    assert [line.split()[-1] for line in table[1:]] == ["Leader", "Follower", "Follower",
                                                        "Observer", "Observer", "Observer"]
    assert all(line.split()[4:6] == line.split()[7:9] == ["ms", "ago"] for line in table[1:])


def test_the_brokers_describe_quorum_answer_is_valid_kafka(cluster: Cluster) -> None:
    """kafka-python's codec reads every version; v2 names the controllers' listeners."""
    client = RawClient(cluster.broker_bootstrap("broker-1"))
    try:
        for version in range(3):
            request_class = DescribeQuorumRequest[version]
            request = request_class(topics=[request_class.TopicData(
                topic_name="__cluster_metadata",
                partitions=[request_class.TopicData.PartitionData(partition_index=0)])])
            response = client.request(request, DescribeQuorumResponse, version)
            assert response.error_code == 0
            (topic,) = response.topics
            (partition,) = topic.partitions
            assert (topic.topic_name, partition.partition_index) == ("__cluster_metadata", 0)
            assert partition.error_code == 0 and partition.leader_id in CONTROLLERS
            assert sorted(v.replica_id for v in partition.current_voters) == CONTROLLERS
            if version >= 1:
                assert all(v.last_fetch_timestamp > 0 for v in partition.current_voters
                           if v.replica_id == partition.leader_id)
            if version == 2:
                assert {(n.node_id, n.listeners[0].port) for n in response.nodes} == {
                    (c, cluster.node(f"controller-{c - 1000}")["port"]) for c in CONTROLLERS}
        wrong = DescribeQuorumRequest[1](topics=[DescribeQuorumRequest[1].TopicData(
            topic_name="not-the-metadata-log",
            partitions=[DescribeQuorumRequest[1].TopicData.PartitionData(partition_index=0)])])
        (topic,) = client.request(wrong, DescribeQuorumResponse, 1).topics
        assert topic.partitions[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        client.close()


def test_a_stopped_broker_stops_advancing_and_falls_behind(cluster: Cluster) -> None:
    via = cluster.broker_bootstrap("broker-1")
    wait_until(lambda: all_caught_up(via, active_id(cluster)), what="everyone caught up",
               ignoring=Exception)
    cluster.stop("broker-3")
    try:
        frozen = replication(via)[("Observer", 3)]["LogEndOffset"]
        for _ in range(2):
            create_topic(via, unique("t"), 1, replication=1)

        def behind() -> bool:
            rows = replication(via)
            return (rows[("Observer", 3)]["Lag"] > 0
                    and rows[("Observer", 1)]["Lag"] == rows[("Observer", 2)]["Lag"] == 0)

        wait_until(behind, what="broker 3 falls behind brokers 1 and 2", ignoring=Exception)
        rows = replication(via)
        assert rows[("Observer", 3)]["LogEndOffset"] == frozen
        assert rows[("Observer", 1)]["LogEndOffset"] > frozen
    finally:
        cluster.start("broker-3")
    wait_until(lambda: replication(via)[("Observer", 3)]["Lag"] == 0,
               what="the restarted broker 3 catches up", ignoring=Exception)


def test_without_a_quorum_the_tool_asks_again_until_its_timeout(cluster: Cluster) -> None:
    """Two of three controllers down: no leader. The tool fails after --timeout with one
    line, or, given time, answers once a quorum is back."""
    down = [n for n in ("controller-1", "controller-2", "controller-3")
            if n != cluster.active_controller()]
    for name in down:
        cluster.stop(name, kill=True)
    try:
        wait_until(lambda: not any(n.get("leader") for n in cluster.status()),
                   what="the last controller steps down (check-quorum)", ignoring=Exception)
        failed = quorum(cluster.bootstrap, "--status", check=False, timeout=3)
        assert failed.returncode == 1 and failed.stdout == ""
        assert failed.stderr == "odradek quorum: DescribeQuorum: REQUEST_TIMED_OUT\n"
        refusals = timed_out_answers(cluster, "broker-1")
        waiting = subprocess.Popen(command(cluster.broker_bootstrap("broker-1"), "--status",
                                           "--json", timeout=60),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: timed_out_answers(cluster, "broker-1") > refusals,
                       what="the waiting tool was refused at least once", ignoring=Exception)
            cluster.start(down[0])
            out, err = waiting.communicate(timeout=90)
        finally:
            waiting.kill()
        assert waiting.returncode == 0, err
        assert json.loads(out)["LeaderId"] in CONTROLLERS
    finally:
        for name in down:
            if not any(n["name"] == name and n.get("alive") for n in cluster.status()):
                cluster.start(name)


def test_a_new_leader_is_reported_after_the_active_controller_is_killed(cluster: Cluster
                                                                       ) -> None:
    victim = cluster.active_controller()
    victim_id = int(cluster.node(victim)["id"])
    epoch = status(cluster.bootstrap)["LeaderEpoch"]
    cluster.stop(victim, kill=True)
    try:
        fields = status(cluster.bootstrap)  # asked again while there is no leader
        assert fields["LeaderId"] == active_id(cluster) != victim_id
        assert fields["LeaderEpoch"] > epoch
        assert fields["CurrentVoters"] == CONTROLLERS
        assert fields["MaxFollowerLag"] > 0, "the new leader has not heard from the dead voter"
        create_topic(cluster.bootstrap, unique("t"), 1, replication=3)
        assert replication(cluster.bootstrap)[("Follower", victim_id)]["Lag"] > 0
    finally:
        cluster.start(victim)
    wait_until(lambda: replication(cluster.bootstrap)[("Follower", victim_id)]["Lag"] == 0,
               what=f"the restarted {victim} catches up as a follower", ignoring=Exception)


def test_an_unreachable_bootstrap_server_is_one_line(cluster: Cluster) -> None:
    result = quorum(f"127.0.0.1:{free_port()}", "--status", check=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("odradek quorum: no bootstrap server answered")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_bad_arguments_are_one_line(cluster: Cluster) -> None:
    result = quorum(cluster.bootstrap, "--status", "--replication", check=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("odradek quorum: Only one of --status or --replication should be "
                             "specified with describe sub-command\n")


# --- odradek dev: one voter, one observer, one process ------------------------------------


def test_dev_has_one_voter_and_one_observer_which_follows_changes(broker: BrokerProcess
                                                                  ) -> None:
    wait_until(lambda: status(broker.bootstrap)["CurrentObservers"] == [1],
               what="the broker observes the metadata log", ignoring=Exception)
    fields = status(broker.bootstrap)
    assert (fields["LeaderId"], fields["CurrentVoters"]) == (1, [1])
    before = replication(broker.bootstrap)[("Observer", 1)]["LogEndOffset"]
    create_topic(broker.bootstrap, unique("t"), 1, replication=1)
    wait_until(lambda: status(broker.bootstrap)["HighWatermark"] > before,
               what="the high watermark advances", ignoring=Exception)

    def caught_up() -> bool:
        rows = replication(broker.bootstrap)
        return (sorted(rows) == [("Leader", 1), ("Observer", 1)]
                and rows[("Observer", 1)]["LogEndOffset"] > before
                and rows[("Observer", 1)]["Lag"] == 0)

    wait_until(caught_up, what="the broker catches up with the topic's creation",
               ignoring=Exception)
