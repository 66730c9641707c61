"""`odradek leader-election`, `odradek delete-records` and `odradek log-dirs` as subprocesses
against a real 1-controller, 3-broker cluster. Leaders are checked with
AdminClient.describe_topics, low watermarks with list_offsets, and log sizes against the
partitions' segment files on disk."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicCollection, TopicPartition
from confluent_kafka.admin import OffsetSpec

from tests.integration.broker_process import ODRADEK
from tests.integration.clients import create_topic, numbered, produce_values, unique
from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.tool_runs import one_line_failure
from tests.waiting import wait_until

OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tools-admin"), 1, 3, OVERRIDES) as cluster:
        yield cluster


def tool(cluster: Cluster, verb: str, *args: str, bootstrap: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, verb, *args, "--bootstrap-server",
                           bootstrap or cluster.bootstrap],
                          capture_output=True, text=True, timeout=120)




def partitions(cluster: Cluster, topic: str) -> dict[int, Any]:
    client = admin(cluster.bootstrap)
    (future,) = client.describe_topics(TopicCollection([topic])).values()
    return {p.id: p for p in future.result(TIMEOUT).partitions}


def leader(cluster: Cluster, topic: str) -> int:
    return int(partitions(cluster, topic)[0].leader.id)


def write(tmp_path: Path, name: str, document: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


# --- leader-election ---------------------------------------------------------------------


def test_a_preferred_election_gives_leadership_back_to_the_preferred_replica(
        cluster: Cluster, tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("adm"), 1, replication=3)
    preferred = partitions(cluster, name)[0].replicas[0].id
    cluster.stop(f"broker-{preferred}")
    wait_until(lambda: leader(cluster, name) != preferred, what="a failover", ignoring=Exception)
    cluster.start(f"broker-{preferred}")
    wait_until(lambda: len(partitions(cluster, name)[0].isr) == 3,
               what="the preferred replica back in the ISR", ignoring=Exception)
    assert leader(cluster, name) != preferred

    elected = tool(cluster, "leader-election", "--election-type", "preferred",
                   "--topic", name, "--partition", "0")
    assert elected.returncode == 0, elected.stderr
    assert elected.stdout == (f"Successfully completed leader election (PREFERRED) for "
                              f"partitions {name}-0\n")
    assert leader(cluster, name) == preferred

    again = tool(cluster, "leader-election", "--election-type", "preferred",
                 "--path-to-json-file", write(tmp_path, "election.json", {
                     "partitions": [{"topic": name, "partition": 0}]}))
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"Valid replica already elected for partitions {name}-0\n"
    everything = tool(cluster, "leader-election", "--election-type", "preferred",
                      "--all-topic-partitions")
    assert everything.returncode == 0, everything.stderr
    assert "Error" not in everything.stdout
    assert leader(cluster, name) == preferred


def test_an_unclean_election_where_a_leader_is_there_is_not_needed(cluster: Cluster) -> None:
    name = create_topic(cluster.bootstrap, unique("adm"), 1, replication=3)
    before = leader(cluster, name)
    result = tool(cluster, "leader-election", "--election-type", "unclean",
                  "--topic", name, "--partition", "0")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Valid replica already elected for partitions {name}-0\n"
    assert leader(cluster, name) == before


def test_leader_election_errors(cluster: Cluster, tmp_path: Path) -> None:
    verb = "leader-election"
    one_line_failure(tool(cluster, verb, "--all-topic-partitions"), verb,
                   "Missing required option(s): election-type")
    one_line_failure(tool(cluster, verb, "--election-type", "fair", "--all-topic-partitions"),
                   verb, "--election-type must be one of preferred, unclean")
    one_line_failure(tool(cluster, verb, "--election-type", "preferred"), verb,
                   "One and only one of the following options is required")
    one_line_failure(tool(cluster, verb, "--election-type", "preferred", "--topic", "t"), verb,
                   "Missing required option(s): partition")
    one_line_failure(tool(cluster, verb, "--election-type", "preferred", "--path-to-json-file",
                        write(tmp_path, "twice.json", {"partitions": [
                            {"topic": "t", "partition": 0}] * 2})),
                   verb, "duplicate partitions: t-0")
    unknown = tool(cluster, verb, "--election-type", "preferred", "--topic", "nope",
                   "--partition", "0")
    one_line_failure(unknown, verb, "1 replica(s) could not be elected")
    assert unknown.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: nope-0: ")
    one_line_failure(tool(cluster, verb, "--election-type", "preferred", "--all-topic-partitions",
                        "--timeout", "2", bootstrap="127.0.0.1:1"), verb, "")


# --- delete-records ----------------------------------------------------------------------


def earliest(cluster: Cluster, topic: str, count: int) -> list[int]:
    client = admin(cluster.bootstrap)
    futures = client.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest()
                                   for p in range(count)})
    return [futures[tp].result(TIMEOUT).offset for tp in sorted(
        futures, key=lambda tp: tp.partition)]


def test_delete_records_moves_the_low_watermarks(cluster: Cluster, tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("adm"), 2, replication=2)
    produce_values(cluster.bootstrap, name, numbered(10), 0)
    produce_values(cluster.bootstrap, name, numbered(7), 1)
    offsets = write(tmp_path, "offsets.json", {"version": 1, "partitions": [
        {"topic": name, "partition": 0, "offset": 4},
        {"topic": name, "partition": 1, "offset": -1}]})
    result = tool(cluster, "delete-records", "--offset-json-file", offsets)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Executing records delete operation", "Records delete operation completed:",
        f"partition: {name}-0\tlow_watermark: 4", f"partition: {name}-1\tlow_watermark: 7"]
    assert earliest(cluster, name, 2) == [4, 7]


def test_delete_records_errors(cluster: Cluster, tmp_path: Path) -> None:
    verb = "delete-records"
    name = create_topic(cluster.bootstrap, unique("adm"), 1, replication=1)
    produce_values(cluster.bootstrap, name, numbered(5), 0)
    mixed = tool(cluster, verb, "--offset-json-file", write(tmp_path, "mixed.json", {
        "partitions": [{"topic": name, "partition": 0, "offset": 2},
                       {"topic": "nope", "partition": 0, "offset": 1}]}))
    one_line_failure(mixed, verb, "1 of 2 partition(s) failed")
    assert f"partition: {name}-0\tlow_watermark: 2" in mixed.stdout
    assert "partition: nope-0\terror: " in mixed.stdout
    assert earliest(cluster, name, 1) == [2]
    beyond = tool(cluster, verb, "--offset-json-file", write(tmp_path, "beyond.json", {
        "partitions": [{"topic": name, "partition": 0, "offset": 99}]}))
    one_line_failure(beyond, verb, "1 of 1 partition(s) failed")
    assert "OFFSET_OUT_OF_RANGE" in beyond.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    one_line_failure(tool(cluster, verb, "--offset-json-file", str(bad)), verb,
                   "is not valid JSON")
    one_line_failure(tool(cluster, verb, "--offset-json-file", str(tmp_path / "none.json")),
                   verb, "cannot read")
    one_line_failure(tool(cluster, verb, "--offset-json-file",
                        write(tmp_path, "empty.json", {"version": 1})), verb,
                   "Missing partitions field")
    one_line_failure(tool(cluster, verb, "--offset-json-file",
                        write(tmp_path, "ok.json", {"partitions": []}),
                        "--timeout", "2", bootstrap="127.0.0.1:1"), verb, "")
    assert earliest(cluster, name, 1) == [2]


# --- log-dirs ----------------------------------------------------------------------------


def segment_bytes(cluster: Cluster, broker: int, partition: str) -> int:
    log_dir = Path(cluster.node(f"broker-{broker}")["config"]).parent
    return sum(f.stat().st_size for f in (log_dir / partition).glob("*.log"))


def test_log_dirs_describes_each_brokers_replicas_and_their_sizes(cluster: Cluster) -> None:
    name = create_topic(cluster.bootstrap, unique("adm"), 3, replication=2)
    produce_values(cluster.bootstrap, name, numbered(50), 0)
    produce_values(cluster.bootstrap, name, numbered(20), 1)
    placement = {p: [r.id for r in info.replicas] for p, info in partitions(cluster, name).items()}
    wait_until(lambda: all(len(info.isr) == 2 for info in partitions(cluster, name).values()),
               what="every replica in sync", ignoring=Exception)

    result = tool(cluster, "log-dirs", "describe", "--topic-list", name)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         "Received log directory information from brokers 1,2,3"]
    document = json.loads(lines[2])
    assert document["version"] == 1
    assert [b["broker"] for b in document["brokers"]] == [1, 2, 3]
    for broker in document["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["error"] is None
        assert log_dir["logDir"] == str(
            Path(cluster.node(f"broker-{broker['broker']}")["config"]).parent)
        hosted = {p["partition"]: p for p in log_dir["partitions"]}
        assert set(hosted) == {f"{name}-{p}" for p, r in placement.items()
                               if broker["broker"] in r}
        for partition, described in hosted.items():
            assert described["size"] == segment_bytes(cluster, broker["broker"], partition)
            assert described["isFuture"] is False
            assert described["offsetLag"] == 0
            assert (described["size"] > 0) == (not partition.endswith("-2"))

    only = tool(cluster, "log-dirs", "describe", "--broker-list", "2", "--json")
    assert only.returncode == 0, only.stderr
    brokers = json.loads(only.stdout)["brokers"]
    assert [b["broker"] for b in brokers] == [2]
    assert {p["partition"] for p in brokers[0]["logDirs"][0]["partitions"]} >= {
        f"{name}-{p}" for p, r in placement.items() if 2 in r}


def test_log_dirs_errors(cluster: Cluster) -> None:
    one_line_failure(tool(cluster, "log-dirs", "describe", "--broker-list", "1,9"), "log-dirs",
                   "The given brokers do not exist from --broker-list: 9. Current existent "
                   "brokers: 1,2,3")
    one_line_failure(tool(cluster, "log-dirs", "describe", "--broker-list", "one"), "log-dirs",
                   "--broker-list must be comma-separated broker ids")
    one_line_failure(tool(cluster, "log-dirs", "describe", "--timeout", "2",
                        bootstrap="127.0.0.1:1"), "log-dirs", "no bootstrap server answered")
