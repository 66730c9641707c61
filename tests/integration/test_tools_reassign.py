"""`odradek reassign` as a subprocess against a real 1-controller, 3-broker cluster: generate's
proposal, a throttled reassignment run to completion under `verify --wait` (throttles set
while it runs, progress shown, throttles lifted, replicas moved), cancel and list, and the
one-line errors. Results are checked with confluent-kafka and kafka-python."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import ConfigResource, ResourceType
from kafka.admin import KafkaAdminClient

from tests.integration.broker_process import ODRADEK
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import TIMEOUT, Cluster, admin, running_cluster
from tests.integration.tool_runs import one_line_failure, succeeded
from tests.waiting import wait_until

CHUNK = 200_000
OVERRIDES = {
    # followers copy in small chunks, so that a throttled copy advances step by step
    "replica.fetch.max.bytes": str(CHUNK),
    "replica.fetch.backoff.ms": "200",
}
RATE = 1_000_000
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tools-reassign"), 1, 3, OVERRIDES) as cluster:
        yield cluster


def reassign(cluster: Cluster, *args: str, bootstrap: str | None = None
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ODRADEK, "reassign", *args, "--bootstrap-server", bootstrap or cluster.bootstrap],
        capture_output=True, text=True, timeout=120)






def fill(cluster: Cluster, topic: str, partition: int, count: int, size: int = 1000) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 5})
    for _ in range(count):
        producer.produce(topic, bytes(size), partition=partition)
    assert producer.flush(TIMEOUT) == 0


def replicas(cluster: Cluster, topic: str) -> dict[int, list[int]]:
    client = admin(cluster.bootstrap)
    (future,) = client.describe_topics(TopicCollection([topic])).values()
    return {p.id: [n.id for n in p.replicas] for p in future.result(TIMEOUT).partitions}


def configs(cluster: Cluster, kind: ResourceType, name: str) -> dict[str, Any]:
    client = admin(cluster.bootstrap)
    resource = ConfigResource(kind, name)
    return dict(client.describe_configs([resource])[resource].result(TIMEOUT))


def ongoing(cluster: Cluster) -> dict[Any, Any]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        return dict(client.list_partition_reassignments())
    finally:
        client.close()


def write(tmp_path: Path, name: str, document: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def plan(*moves: tuple[str, int, list[int]]) -> dict[str, Any]:
    return {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                         for t, p, r in moves]}


def test_generate_proposes_the_topics_over_the_listed_brokers(cluster: Cluster,
                                                              tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("re"),
                        assignment=[[1, 2], [2, 3], [3, 1], [1, 3]])
    topics = write(tmp_path, "topics.json", {"topics": [{"topic": name}], "version": 1})
    out = succeeded(reassign(cluster, "generate", "--topics-to-move-json-file", topics,
                             "--broker-list", "2,3"))
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    current, proposed = json.loads(lines[1]), json.loads(lines[4])
    assert {p["partition"]: p["replicas"] for p in current["partitions"]} \
        == replicas(cluster, name)
    moved = {p["partition"]: p["replicas"] for p in proposed["partitions"]}
    assert sorted(moved) == [0, 1, 2, 3]
    assert all(sorted(r) == [2, 3] for r in moved.values())
    assert sorted(r[0] for r in moved.values()) == [2, 2, 3, 3], "leaders spread evenly"
    assert all(p["log_dirs"] == ["any", "any"] for p in proposed["partitions"])
    again = succeeded(reassign(cluster, "generate", "--topics-to-move-json-file", topics,
                               "--broker-list", "2,3"))
    assert again == out, "the proposal is deterministic"


def test_a_throttled_reassignment_runs_to_completion(cluster: Cluster,
                                                     tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("re"), assignment=[[1]])
    fill(cluster, name, 0, 2500)
    target = write(tmp_path, "move.json", plan((name, 0, [2, 3])))

    out = succeeded(reassign(cluster, "execute", "--reassignment-json-file", target,
                             "--throttle", str(RATE)))
    assert out.splitlines()[:5] == [
        "Current partition replica assignment", "",
        f'{{"version":1,"partitions":[{{"topic":"{name}","partition":0,"replicas":[1],'
        f'"log_dirs":["any"]}}]}}', "",
        "Save this to use as the --reassignment-json-file option during rollback"]
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in out
    assert f"Successfully started partition reassignment for {name}-0" in out
    topic_configs = configs(cluster, ResourceType.TOPIC, name)
    assert topic_configs[REPLICAS[0]].value == "0:1"
    assert topic_configs[REPLICAS[1]].value == "0:2,0:3"
    for broker in ("1", "2", "3"):
        broker_configs = configs(cluster, ResourceType.BROKER, broker)
        assert [broker_configs[rate].value for rate in RATES] == [str(RATE)] * 2

    verified = succeeded(reassign(cluster, "verify", "--reassignment-json-file", target,
                                  "--wait"))
    shown = [int(p) for p in re.findall(r"^Copied .* to the new replicas \((\d+)%\)$",
                                        verified, re.MULTILINE)]
    assert len(shown) > 1, verified
    assert shown == sorted(shown) and shown[-1] == 100, verified
    assert f"Reassignment of partition {name}-0 is completed." in verified
    assert "Clearing broker-level throttles on brokers 1,2,3" in verified
    assert f"Clearing topic-level throttles on topic {name}" in verified

    assert replicas(cluster, name) == {0: [2, 3]}
    assert not ongoing(cluster)
    topic_configs = configs(cluster, ResourceType.TOPIC, name)
    assert [topic_configs[key].value for key in REPLICAS] == ["", ""]
    for broker in ("1", "2", "3"):
        broker_configs = configs(cluster, ResourceType.BROKER, broker)
        # removed: as Kafka, a throttle rate is described only while it is set
        assert not any(rate in broker_configs for rate in RATES)


def test_a_reassignment_in_progress_is_listed_kept_apart_and_cancelled(
        cluster: Cluster, tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("re"), assignment=[[1], [2]])
    fill(cluster, name, 0, 1000)
    target = write(tmp_path, "slow.json", plan((name, 0, [3])))
    succeeded(reassign(cluster, "execute", "--reassignment-json-file", target,
                       "--throttle", "1000"))
    try:
        listed = succeeded(reassign(cluster, "list"))
        assert listed.splitlines() == ["Current partition reassignments:",
                                       f"{name}-0: replicas: 3,1. adding: 3. removing: 1."]
        other = write(tmp_path, "other.json", plan((name, 1, [3])))
        one_line_failure(reassign(cluster, "execute", "--reassignment-json-file", other),
                         "reassign",
                         "Cannot execute because there is an existing partition assignment")
        verified = succeeded(reassign(cluster, "verify", "--reassignment-json-file", target))
        assert verified.splitlines() == [
            "Status of partition reassignment:",
            f"Reassignment of partition {name}-0 is still in progress."]
        assert configs(cluster, ResourceType.TOPIC, name)[REPLICAS[1]].value == "0:3", \
            "verify keeps the throttles while the reassignment runs"
    finally:
        cancelled = succeeded(reassign(cluster, "cancel", "--reassignment-json-file", target))
    assert f"Successfully cancelled partition reassignment for: {name}-0" in cancelled
    wait_until(lambda: not ongoing(cluster), what="the cancelled reassignment is gone",
               ignoring=Exception)
    assert replicas(cluster, name) == {0: [1], 1: [2]}
    assert configs(cluster, ResourceType.TOPIC, name)[REPLICAS[1]].value == ""
    assert RATES[1] not in configs(cluster, ResourceType.BROKER, "3")  # the throttle removed
    assert succeeded(reassign(cluster, "list")) == "No partition reassignments found.\n"
    verified = succeeded(reassign(cluster, "verify", "--reassignment-json-file", target))
    assert (f"There is no active reassignment of partition {name}-0, but replica set is 1 "
            f"rather than 3.") in verified


def test_errors_are_one_line(cluster: Cluster, tmp_path: Path) -> None:
    name = create_topic(cluster.bootstrap, unique("re"), assignment=[[1, 2]])
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "partitions": [')
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file", str(bad)), "reassign",
                     "is not valid JSON")
    one_line_failure(reassign(cluster, "verify", "--reassignment-json-file",
                            str(tmp_path / "missing.json")), "reassign", "cannot read")
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file",
                            write(tmp_path, "unknown.json", plan(("nope", 0, [1])))), "reassign",
                     "Unable to find partition: nope-0")
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file",
                            write(tmp_path, "far.json", plan((name, 5, [1])))), "reassign",
                   f"Unable to find partition: {name}-5")
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file",
                            write(tmp_path, "brokers.json", plan((name, 0, [1, 9])))), "reassign",
                     "Unknown broker id 9")
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file",
                            write(tmp_path, "twice.json", plan((name, 0, [1, 1])))), "reassign",
                     "may not contain duplicate entries")
    dirs = {"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": [1, 2],
                                          "log_dirs": ["/data", "any"]}]}
    one_line_failure(reassign(cluster, "execute", "--reassignment-json-file",
                            write(tmp_path, "dirs.json", dirs)), "reassign",
                     "between log directories is not supported")
    topics = write(tmp_path, "topics.json", {"topics": [{"topic": "nope"}], "version": 1})
    one_line_failure(reassign(cluster, "generate", "--topics-to-move-json-file", topics,
                            "--broker-list", "1,2"), "reassign", "Topic nope not found.")
    mine = write(tmp_path, "mine.json", {"topics": [{"topic": name}], "version": 1})
    one_line_failure(reassign(cluster, "generate", "--topics-to-move-json-file", mine,
                            "--broker-list", "1,7"), "reassign", "Unknown broker id 7")
    one_line_failure(reassign(cluster, "generate", "--topics-to-move-json-file", mine,
                            "--broker-list", "1"), "reassign", "only 1 broker(s)")
    one_line_failure(reassign(cluster, "list", "--timeout", "2", bootstrap="127.0.0.1:1"),
                     "reassign", "no bootstrap server answered")
    assert replicas(cluster, name) == {0: [1, 2]}
    assert not ongoing(cluster)

