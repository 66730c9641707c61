"""`odradek topics` as a subprocess against a real 1-controller, 3-broker cluster: create,
list, describe, alter and delete checked with confluent-kafka's AdminClient, and describe's
report filters (under-replicated, under/at min ISR, unavailable) with broker 3 stopped, then
paused until fenced, over topics whose replicas are placed so that each filter's partitions
are known exactly."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.integration.broker_process import ODRADEK
from tests.integration.clients import unique
from tests.integration.cluster import TIMEOUT, Cluster, running_cluster
from tests.integration.tool_runs import one_line_failure
from tests.waiting import wait_until

OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tools-topics"), 1, 3, OVERRIDES) as cluster:
        yield cluster


def topics(bootstrap: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, "topics", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=timeout)


def ok(bootstrap: str, *args: str) -> str:
    result = topics(bootstrap, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout




def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def layout(bootstrap: str, topic: str) -> dict[int, tuple[int | None, list[int], list[int]]]:
    """Each partition's leader, replicas and ISR, as AdminClient describes them."""
    client = admin(bootstrap)  # alive until the future is done
    description = client.describe_topics(
        TopicCollection([topic]), request_timeout=TIMEOUT)[topic].result(TIMEOUT)
    return {p.id: (p.leader.id if p.leader else None, [n.id for n in p.replicas],
                   [n.id for n in p.isr]) for p in description.partitions}


def live_brokers(bootstrap: str) -> set[int]:
    client = admin(bootstrap)
    return {n.id for n in client.describe_cluster().result(TIMEOUT).nodes}


def topic_names(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=TIMEOUT).topics)


def overrides(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    client = admin(bootstrap)
    configs = client.describe_configs([resource])[resource].result(TIMEOUT)
    return {name: entry.value for name, entry in configs.items() if not entry.is_default}


def printed_partitions(output: str) -> set[tuple[str, int]]:
    found = set()
    for line in output.splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip("\t").split("\t"))
        if "Partition" in fields:
            found.add((fields["Topic"], int(fields["Partition"])))
    return found


def test_create_list_describe_and_delete(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    name = unique("tt")
    assert ok(bootstrap, "create", "--topic", name, "--partitions", "3",
              "--replication-factor", "2", "--config", "retention.ms=60000",
              "--config", "cleanup.policy=compact") == f"Created topic {name}.\n"
    placed = layout(bootstrap, name)
    assert sorted(placed) == [0, 1, 2]
    assert all(len(replicas) == 2 for _, replicas, _ in placed.values())
    assert overrides(bootstrap, name) == {"retention.ms": "60000", "cleanup.policy": "compact"}

    assert name in ok(bootstrap, "list").splitlines()
    assert json.loads(ok(bootstrap, "list", "--json", "--topic", name)) == [name]

    lines = ok(bootstrap, "describe", "--topic", name).splitlines()
    client = admin(bootstrap)
    topic_id = client.describe_topics(TopicCollection([name]))[name].result(TIMEOUT).topic_id
    assert lines[0] == (f"Topic: {name}\tTopicId: {topic_id}\tPartitionCount: 3\t"
                        "ReplicationFactor: 2\tConfigs: cleanup.policy=compact,retention.ms=60000")
    assert lines[1:] == [
        f"\tTopic: {name}\tPartition: {p}\tLeader: {leader}\tReplicas: "
        f"{','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
        for p, (leader, replicas, isr) in sorted(placed.items())]
    (described,) = json.loads(ok(bootstrap, "describe", "--topic", name, "--json"))
    assert described["topic_id"] == str(topic_id)
    assert described["configs"] == {"cleanup.policy": "compact", "retention.ms": "60000"}
    assert {p["partition"]: (p["leader"], p["replicas"], p["isr"])
            for p in described["partitions"]} == {p: (leader, replicas, isr) for
                                                  p, (leader, replicas, isr) in placed.items()}

    assert ok(bootstrap, "delete", "--topic", name) == ""
    wait_until(lambda: name not in topic_names(bootstrap), what=f"{name} deleted",
               ignoring=Exception)


def test_replica_assignment_places_each_partition(cluster: Cluster) -> None:
    name = unique("tt")
    ok(cluster.bootstrap, "create", "--topic", name, "--replica-assignment", "1:2,2:3,3:1")
    assert {p: replicas for p, (_, replicas, _) in layout(cluster.bootstrap, name).items()} == {
        0: [1, 2], 1: [2, 3], 2: [3, 1]}


def test_alter_adds_partitions_as_assigned(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    name = unique("tt")
    ok(bootstrap, "create", "--topic", name, "--partitions", "1", "--replication-factor", "1")
    assert ok(bootstrap, "alter", "--topic", name, "--partitions", "3") == ""
    assert sorted(layout(bootstrap, name)) == [0, 1, 2]
    # Kafka's --replica-assignment lists every partition; the existing ones are skipped.
    ok(bootstrap, "alter", "--topic", name, "--partitions", "5",
       "--replica-assignment", "1,1,1,2,3")
    placed = layout(bootstrap, name)
    assert (placed[3][1], placed[4][1]) == ([2], [3])
    line = one_line_failure(
        topics(bootstrap, "alter", "--topic", name, "--partitions", "2"), "topics")
    assert "INVALID_PARTITIONS" in line
    assert len(layout(bootstrap, name)) == 5


def test_regex_selects_topics_for_list_describe_and_delete(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    prefix = unique("rx")
    names = [f"{prefix}.a", f"{prefix}.b", f"{prefix}-c"]
    for name in names:
        ok(bootstrap, "create", "--topic", name, "--partitions", "1")
    escaped = prefix.replace("-", "\\-")
    assert ok(bootstrap, "list", "--topic", rf"{escaped}\..*").split() == names[:2]
    assert ok(bootstrap, "list", "--topic", f"{prefix}.a,{prefix}-c").split() == [
        names[2], names[0]]  # sorted
    assert {t for t, _ in printed_partitions(ok(bootstrap, "describe", "--topic",
                                                f"{prefix}.*"))} == set(names)
    ok(bootstrap, "delete", "--topic", rf"{escaped}\..*")
    wait_until(lambda: not set(names[:2]) & topic_names(bootstrap), what="two topics deleted",
               ignoring=Exception)
    assert names[2] in topic_names(bootstrap)


def test_topics_with_overrides_prints_only_their_summaries(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    prefix = unique("ov")
    ok(bootstrap, "create", "--topic", f"{prefix}-plain", "--partitions", "2")
    ok(bootstrap, "create", "--topic", f"{prefix}-set", "--partitions", "2",
       "--config", "retention.ms=1234")
    output = ok(bootstrap, "describe", "--topic", f"{prefix}.*", "--topics-with-overrides")
    assert [line.split("\t")[0] for line in output.splitlines()] == [f"Topic: {prefix}-set"]
    assert output.rstrip("\n").endswith("Configs: retention.ms=1234")
    (entry,) = json.loads(ok(bootstrap, "describe", "--topic", f"{prefix}.*",
                             "--topics-with-overrides", "--json"))
    assert (entry["topic"], entry["configs"]) == (f"{prefix}-set", {"retention.ms": "1234"})
    assert "partitions" not in entry


def test_existing_and_missing_topics(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    name = unique("tt")
    ok(bootstrap, "create", "--topic", name, "--partitions", "1")
    assert "TOPIC_ALREADY_EXISTS" in one_line_failure(
        topics(bootstrap, "create", "--topic", name), "topics")
    assert ok(bootstrap, "create", "--topic", name, "--if-not-exists") == ""
    missing = unique("missing")
    for verb in (["describe"], ["delete"], ["alter", "--partitions", "2"]):
        line = one_line_failure(topics(bootstrap, *verb, "--topic", missing), "topics")
        assert line == f"odradek topics: Topic '{missing}' does not exist as expected"
        assert ok(bootstrap, *verb, "--topic", missing, "--if-exists") == ""


def commit_an_offset(bootstrap: str) -> str:
    """A new topic with an offset committed on it, which makes __consumer_offsets."""
    name = unique("tt")
    ok(bootstrap, "create", "--topic", name, "--partitions", "1")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("group")})
    try:
        consumer.commit(offsets=[TopicPartition(name, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    return name


def test_exclude_internal_leaves_out_internal_topics(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    name = commit_an_offset(bootstrap)
    assert "__consumer_offsets" in topic_names(bootstrap)
    assert "__consumer_offsets" in ok(bootstrap, "list").split()
    excluded = ok(bootstrap, "list", "--exclude-internal").split()
    assert name in excluded and "__consumer_offsets" not in excluded
    assert ok(bootstrap, "describe", "--topic", "__.*", "--exclude-internal",
              "--if-exists") == ""


def test_describe_shows_internal_topics(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    commit_an_offset(bootstrap)
    assert {t for t, _ in printed_partitions(ok(bootstrap, "describe", "--topic", "__.*"))} == {
        "__consumer_offsets"}


def test_bad_input_is_one_line(cluster: Cluster) -> None:
    bootstrap = cluster.bootstrap
    name = unique("tt")
    assert "INVALID_CONFIG" in one_line_failure(topics(bootstrap, "create", "--topic", name,
                                              "--config", "no.such.config=1"), "topics")
    assert "key=val" in one_line_failure(
        topics(bootstrap, "create", "--topic", name, "--config", "x"), "topics")
    assert "INVALID_REPLICA_ASSIGNMENT" in one_line_failure(
        topics(bootstrap, "create", "--topic", name, "--replica-assignment", "1:9"), "topics")
    assert "duplicate entries" in one_line_failure(topics(bootstrap, "create", "--topic", name,
                                                 "--replica-assignment", "1:1"), "topics")
    assert "greater than 0" in one_line_failure(topics(bootstrap, "create", "--topic", name,
                                              "--partitions", "0"), "topics")
    assert "invalid regex" in one_line_failure(topics(bootstrap, "list", "--topic", "a["), "topics")
    assert name not in topic_names(bootstrap)


def test_unreachable_bootstrap_server_is_one_line() -> None:
    line = one_line_failure(topics("127.0.0.1:1", "list", "--timeout", "3"), "topics")
    assert line.startswith("odradek topics: ")


# --- Report filters with a broker down ---------------------------------------------------

ASSIGNMENTS = {
    # topic suffix: (replica assignment, min.insync.replicas)
    "a": ("1:2:3,3:1:2", "2"),  # both lose broker 3: ISR 2 of 3, at min ISR 2
    "b": ("1:3,2:1", "2"),  # p0: ISR 1 < min 2; p1 untouched but ISR 2 == min 2
    "c": ("3,1", "1"),  # p0: the only replica is down, no leader; p1 ISR 1 == min 1
    "d": ("1:2,2:1", "1"),  # untouched, ISR 2 > min 1: in no report
}
DOWN = 3
EXPECTED = {
    "--under-replicated-partitions": {("a", 0), ("a", 1), ("b", 0)},
    "--under-min-isr-partitions": {("b", 0), ("c", 0)},
    "--at-min-isr-partitions": {("a", 0), ("a", 1), ("b", 1), ("c", 0), ("c", 1)},
    "--unavailable-partitions": {("c", 0)},
}
"""Kafka's semantics: under min ISR includes leaderless partitions; a leaderless partition
keeps its last replica in the ISR (KRaft), so "c"-0 is also at min ISR."""


def broker_down(bootstrap: str, prefix: str) -> bool:
    """Broker 3 is fenced and every partition of the test's topics has moved off it."""
    if DOWN in live_brokers(bootstrap):
        return False
    for suffix in ASSIGNMENTS:
        for leader, replicas, isr in layout(bootstrap, f"{prefix}-{suffix}").values():
            if replicas == [DOWN]:
                if leader is not None:
                    return False
            elif leader == DOWN or DOWN in isr:
                return False
    return True


@pytest.mark.parametrize("fault", ["stop", "pause"])
def test_report_filters_with_a_broker_down(cluster: Cluster, fault: str) -> None:
    bootstrap = cluster.broker_bootstrap("broker-1")
    prefix = unique(f"rep-{fault}")
    for suffix, (assignment, min_isr) in ASSIGNMENTS.items():
        ok(bootstrap, "create", "--topic", f"{prefix}-{suffix}", "--replica-assignment",
           assignment, "--config", f"min.insync.replicas={min_isr}")
    wait_until(lambda: all(len(isr) == len(replicas) for s in ASSIGNMENTS for _, replicas, isr
                           in layout(bootstrap, f"{prefix}-{s}").values()), what="full ISRs",
               ignoring=Exception)
    getattr(cluster, fault)("broker-3")
    try:
        wait_until(lambda: broker_down(bootstrap, prefix), what="broker 3 fenced and left",
                   ignoring=Exception)
        selection = ["--topic", f"{prefix}-.*"]
        for flag, expected in EXPECTED.items():
            want = {(f"{prefix}-{s}", p) for s, p in expected}
            output = ok(bootstrap, "describe", *selection, flag)
            assert printed_partitions(output) == want, (flag, output)
            assert not [line for line in output.splitlines() if line.startswith("Topic:")]
            report = json.loads(ok(bootstrap, "describe", *selection, flag, "--json"))
            assert {(t["topic"], p["partition"]) for t in report
                    for p in t["partitions"]} == want
        combined = ok(bootstrap, "describe", *selection, "--unavailable-partitions",
                      "--under-replicated-partitions")
        assert printed_partitions(combined) == {
            (f"{prefix}-{s}", p) for s, p in EXPECTED["--unavailable-partitions"]
            | EXPECTED["--under-replicated-partitions"]}
        leaderless = ok(bootstrap, "describe", "--topic", f"{prefix}-c")
        assert f"\tTopic: {prefix}-c\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: 3\t" \
               "Offline: 3" in leaderless.splitlines()
    finally:
        (cluster.start if fault == "stop" else cluster.resume)("broker-3")
        wait_until(lambda: DOWN in live_brokers(bootstrap), what="broker 3 back",
                   ignoring=Exception)
