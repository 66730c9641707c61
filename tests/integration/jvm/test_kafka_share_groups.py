"""Kafka's kafka-share-groups.sh (ShareGroupCommand) against Odradek's share group
membership: --list (with --state), --describe --members and --describe --state (with
--verbose) print the members, their assignment and the group's epochs as the raw
heartbeats left them, --describe (offsets) the subscribed partitions without start offsets
yet, and --delete removes the group once its members left. `odradek groups describe --type
share` prints what Kafka's tool prints, line for line.

Against Odradek's share-group offsets APIs: --reset-offsets (--to-earliest and
--to-datetime with --execute, --to-latest with --dry-run; Kafka 4.3.1's tool has no other
scenario) moves a new share group's start offsets, --describe prints them with their lag,
and --delete-offsets deletes a topic's; `odradek groups describe|reset-offsets|
delete-offsets --type share` print what Kafka's tool prints, line for line."""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration import share_wire
from tests.integration.broker_metrics import scrape
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import Out, create_topic, produce_confluent, unique
from tests.integration.jvm.kafka_tools import SHARE_GROUPS, Step, run_tools
from tests.integration.raw_client import RawClient
from tests.integration.test_groups_cli import groups
from tests.jvm_toolchain import run_java


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root: Path = tmp_path_factory.mktemp("share-groups-tool")
    process = BrokerProcess(root / "data", root / "broker.log")
    process.start()
    yield process
    if process.alive():
        process.stop()


def columns(lines: list[str]) -> list[list[str]]:
    return [line.split() for line in lines if line.strip()]


def test_kafka_share_groups_lists_describes_and_deletes(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("share-tool"), 3)
    group = unique("share-tool")
    client = RawClient(broker.bootstrap, timeout=30)
    try:
        members = share_wire.Members(client, group, topic)
        assert [members.beat(m).member_epoch for m in ("m1", "m2")] == [1, 2]
        # 3 when the share coordinator initialized the partitions' state after m2 joined
        epoch = str(members.settle(("m1", "m2"), 3))
        assert sorted(len(members.partitions(m)) for m in ("m1", "m2")) == [1, 2]

        def tool(name: str, *args: str) -> Step:
            return Step(name, SHARE_GROUPS, ["--bootstrap-server", broker.bootstrap, *args])

        out = run_tools([
            tool("list", "--list"),
            tool("list-state", "--list", "--state"),
            tool("members", "--describe", "--group", group, "--members", "--verbose"),
            tool("state", "--describe", "--group", group, "--state", "--verbose"),
            tool("offsets", "--describe", "--group", group, "--verbose"),
        ])
        assert group in out["list"].ok().lines
        assert [group, "Stable"] in columns(out["list-state"].ok().lines)
        assert columns(out["members"].ok().lines) == [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH",
             "ASSIGNMENT"],
            *([group, m, "/127.0.0.1", "raw", str(len(members.partitions(m))), epoch,
               f"{topic}:{','.join(map(str, sorted(members.partitions(m))))}"]
              for m in ("m1", "m2")),
        ]
        assert columns(out["state"].ok().lines) == [
            ["GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
             "#MEMBERS"],
            [group, broker.bootstrap, "(1)", "Stable", epoch, epoch, "2"],
        ]
        ours = groups(broker, "describe", "--type", "share", "--group", group, "--members",
                      "--verbose")
        assert ours.returncode == 0, ours.stderr
        # The subscribed partitions, none of them fetched from yet: no start offsets.
        assert columns(out["offsets"].ok().lines) == [
            ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"],
            *([group, topic, str(p), "-", "-", "-"] for p in range(3))]
        assert ours.stdout.splitlines() == [
            *out["state"].lines, *out["offsets"].lines, *out["members"].lines]
        listed = groups(broker, "list", "--type", "share")
        assert [group, "Share", "Stable"] in columns(listed.stdout.splitlines())
        refused = run_tools([tool("delete-busy", "--delete", "--group", group)])["delete-busy"]
        assert (f"GroupNotEmptyException: Share group '{group}' is not EMPTY."
                in refused.stdout)
        for member in ("m1", "m2"):
            assert share_wire.heartbeat(client, group, member, -1).member_epoch == -1
    finally:
        client.close()
    out = run_tools([tool("delete", "--delete", "--group", group), tool("after", "--list")])
    assert f"Deletion of requested share groups ('{group}') was successful." in (
        out["delete"].ok().stdout)
    assert group not in out["after"].ok().lines


COUNTS = (10, 4)
"""Records produced to partitions 0 and 1."""


def plan_columns(lines: list[str]) -> list[list[str]]:
    """A table's header, then its rows sorted (Kafka prints a reset plan in hash order)."""
    split = [line.split() for line in lines if line.strip()]
    return split[:1] + sorted(split[1:])


def test_kafka_share_groups_resets_describes_and_deletes_offsets(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("share-offsets"), 2)
    base = (int(time.time()) - 600) * 1000
    produce_confluent(broker.bootstrap, topic, [
        Out(None, b"%d" % i, base + i * 1000, partition=p)
        for p, n in enumerate(COUNTS) for i in range(n)])
    third = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base / 1000 + 3))
    group = unique("share-reset")

    def tool(name: str, *args: str) -> Step:
        return Step(name, SHARE_GROUPS, ["--bootstrap-server", broker.bootstrap, *args])

    reset = ("--reset-offsets", "--group", group)
    out = run_tools([
        tool("earliest", *reset, "--topic", topic, "--to-earliest", "--execute"),
        tool("describe", "--describe", "--group", group),
        tool("verbose", "--describe", "--group", group, "--verbose"),
        tool("state", "--describe", "--group", group, "--state"),
        tool("to-datetime", *reset, "--topic", f"{topic}:0", "--to-datetime", third,
             "--execute"),
        tool("latest-dry", *reset, "--all-topics", "--to-latest", "--dry-run"),
        tool("after", "--describe", "--group", group),
    ])
    assert plan_columns(out["earliest"].ok().lines) == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [group, topic, "0", "0"], [group, topic, "1", "0"]]
    assert plan_columns(out["describe"].ok().lines) == [
        ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
        [group, topic, "0", "0", str(COUNTS[0])], [group, topic, "1", "0", str(COUNTS[1])]]
    assert plan_columns(out["verbose"].ok().lines)[1] == [group, topic, "0", "0", "0",
                                                     str(COUNTS[0])]
    assert plan_columns(out["to-datetime"].ok().lines)[1:] == [[group, topic, "0", "3"]]
    assert plan_columns(out["latest-dry"].ok().lines)[1:] == [
        [group, topic, "0", str(COUNTS[0])], [group, topic, "1", str(COUNTS[1])]]
    # --dry-run changed nothing; --to-datetime moved partition 0 only.
    assert plan_columns(out["after"].ok().lines)[1:] == [
        [group, topic, "0", "3", str(COUNTS[0] - 3)], [group, topic, "1", "0", str(COUNTS[1])]]

    ours = groups(broker, "describe", "--type", "share", "--group", group)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines() == [*out["state"].lines, *out["after"].lines]
    ours_verbose = groups(broker, "describe", "--type", "share", "--group", group, "--verbose")
    described = [line.split() for line in ours_verbose.stdout.splitlines()]
    assert out["verbose"].lines[1].split() in described  # Kafka's verbose header
    assert [group, topic, "0", "0", "3", str(COUNTS[0] - 3)] in described
    planned = groups(broker, "reset-offsets", "--type", "share", "--group", group,
                     "--all-topics", "--to-latest", "--dry-run")
    assert sorted(planned.stdout.splitlines()) == sorted(out["latest-dry"].lines), (
        planned.stderr)

    executed = groups(broker, "reset-offsets", "--type", "share", "--group", group,
                      "--topic", topic, "--to-latest", "--execute")
    assert executed.returncode == 0, executed.stderr
    out = run_tools([
        tool("latest", "--describe", "--group", group),
        tool("delete", "--delete-offsets", "--group", group, "--topic", topic),
        tool("deleted", "--describe", "--group", group),
        tool("again", "--delete-offsets", "--group", group, "--topic", topic),
    ])
    assert plan_columns(out["latest"].ok().lines)[1:] == [
        [group, topic, "0", str(COUNTS[0]), "0"], [group, topic, "1", str(COUNTS[1]), "0"]]
    assert plan_columns(out["delete"].ok().lines) == [["TOPIC", "STATUS"], [topic, "Successful"]]
    assert f"Share group '{group}' has no offset information." in out["deleted"].ok().lines
    assert plan_columns(out["again"].lines) == [
        ["TOPIC", "STATUS"],
        [topic, "Error:", "There", "is", "no", "offset", "information", "to", "delete."]]

    ours = groups(broker, "delete-offsets", "--type", "share", "--group", group,
                  "--topic", topic)
    assert ours.returncode == 1
    assert ours.stdout.splitlines() == out["again"].lines
    ours = groups(broker, "describe", "--type", "share", "--group", group)
    assert ours.stdout.splitlines()[-1] == out["deleted"].lines[-1]


def share_checks(broker: BrokerProcess, topic: str, group: str) -> dict[str, Any]:
    """Kafka's KafkaShareConsumer (ShareChecks): ten records produced to partition 0, all
    accepted but r1 (released, then accepted) and r2 (rejected)."""
    run = run_java("odradek.jvm.share.ShareChecks", broker.bootstrap, topic, group,
                   timeout=240)
    report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    assert "commit_error" not in report, report
    return report


def share_samples(broker: BrokerProcess) -> dict[str, float]:
    samples = scrape(broker)
    found = {f"ack_{dict(labels)['acktype']}": value for (name, labels), value in samples.items()
             if name == "kafka_server_sharegroupmetrics_recordacknowledgements_total"}
    for name in ("kafka_server_sharegroupmetrics_partitionloadtimems_count",
                 "kafka_server_sharesessioncache_sharesessionscount",
                 "kafka_server_sharesessioncache_sharepartitionscount",
                 "kafka_server_share_coordinator_metrics_write_total",
                 "kafka_server_share_coordinator_metrics_write_latency_avg",
                 "kafka_server_share_coordinator_metrics_write_latency_max"):
        found[name] = samples[(name, frozenset())]
    return found


def test_share_metrics_and_a_reset_consumed_again(broker: BrokerProcess) -> None:
    """Kafka's share metric names by scrape, fed by a KafkaShareConsumer; then Kafka's tool
    resets the emptied group to the earliest offset and the consumer reads every record
    again."""
    topic = create_topic(broker.bootstrap, unique("share-metrics"), 1)
    group = unique("share-metrics")
    before = share_samples(broker)
    first = share_checks(broker, topic, group)
    assert first["second_consumer"] == []  # every record settled
    assert sorted({value for value, _ in first["deliveries"]}) == [f"r{i}" for i in range(10)]
    after = share_samples(broker)
    assert {k: after[k] - before[k] for k in ("ack_Accept", "ack_Release", "ack_Reject",
                                               "ack_Renew")} == {
        "ack_Accept": 9, "ack_Release": 1, "ack_Reject": 1, "ack_Renew": 0}
    assert after["kafka_server_sharegroupmetrics_partitionloadtimems_count"] > before[
        "kafka_server_sharegroupmetrics_partitionloadtimems_count"]
    per_group = {name: value for (name, labels), value in scrape(broker).items()
                 if ("group", group) in labels}
    prefix = "kafka_server_sharegroupmetrics_"
    # its ShareFetches could acquire from their one partition: at 100 %, at least once
    assert per_group[prefix + "requesttopicpartitionsfetchratio_count"] > 0
    assert per_group[prefix + "requesttopicpartitionsfetchratio_sum"] >= 100
    assert per_group[prefix + "topicpartitionsacquiretimems_count"] > 0
    assert after["kafka_server_share_coordinator_metrics_write_total"] > before[
        "kafka_server_share_coordinator_metrics_write_total"]
    assert 0 <= after["kafka_server_share_coordinator_metrics_write_latency_avg"] <= after[
        "kafka_server_share_coordinator_metrics_write_latency_max"]
    # Both consumers closed: their share sessions are gone.
    assert after["kafka_server_sharesessioncache_sharesessionscount"] == 0
    assert after["kafka_server_sharesessioncache_sharepartitionscount"] == 0

    def tool(name: str, *args: str) -> Step:
        return Step(name, SHARE_GROUPS, ["--bootstrap-server", broker.bootstrap, *args])

    out = run_tools([
        tool("settled", "--describe", "--group", group),
        tool("reset", "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest",
             "--execute"),
        tool("reset-to", "--describe", "--group", group),
    ])
    assert columns(out["settled"].ok().lines)[1:] == [[group, topic, "0", "10", "0"]]
    assert columns(out["reset-to"].ok().lines)[1:] == [[group, topic, "0", "0", "10"]]
    # The records are read again (ShareChecks produces ten more with the same values, so
    # it may stop before the released r1 of the first ten comes back).
    again = share_checks(broker, topic, group)
    delivered = collections.Counter(value for value, _ in again["deliveries"])
    assert all(delivered[f"r{i}"] >= 2 for i in range(10)), delivered


def test_a_deleted_share_group_starts_again_from_the_reset_offset(broker: BrokerProcess) -> None:
    """kafka-share-groups.sh --delete deletes the group's share-partition state with it: a
    new group of the same id reads from share.auto.offset.reset (earliest, ShareChecks'
    setting) rather than after the records the deleted group settled."""
    topic = create_topic(broker.bootstrap, unique("share-deleted"), 1)
    group = unique("share-deleted")
    first = share_checks(broker, topic, group)
    assert sorted({value for value, _ in first["deliveries"]}) == [f"r{i}" for i in range(10)]

    def tool(name: str, *args: str) -> Step:
        return Step(name, SHARE_GROUPS, ["--bootstrap-server", broker.bootstrap, *args])

    out = run_tools([
        tool("settled", "--describe", "--group", group),
        tool("delete", "--delete", "--group", group),
        tool("after", "--list"),
    ])
    assert columns(out["settled"].ok().lines)[1:] == [[group, topic, "0", "10", "0"]]
    assert f"Deletion of requested share groups ('{group}') was successful." in (
        out["delete"].ok().stdout)
    assert group not in out["after"].ok().lines
    # The records the deleted group settled are read again (ShareChecks produces ten more
    # with the same values).
    again = share_checks(broker, topic, group)
    delivered = collections.Counter(value for value, _ in again["deliveries"])
    assert all(delivered[f"r{i}"] >= 2 for i in range(10)), delivered
