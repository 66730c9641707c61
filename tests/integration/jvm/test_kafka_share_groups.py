"""Kafka's kafka-share-groups.sh (ShareGroupCommand) against Odradek's share group
membership: --list (with --state), --describe --members and --describe --state (with
--verbose) print the members, their assignment and the group's epochs as the raw
heartbeats left them, and --delete removes the group once its members left. `odradek groups
describe --type share` prints what Kafka's tool prints, line for line.

`--describe` without --members or --state also asks DescribeShareGroupOffsets, which
Odradek does not serve yet (the share-partition state), so it is not run here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import share_wire
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.jvm.kafka_tools import SHARE_GROUPS, Step, run_tools
from tests.integration.raw_client import RawClient
from tests.integration.test_groups_cli import groups


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
        assert share_wire.heartbeat(client, group, "m1", 0, [topic]).member_epoch == 1
        assert share_wire.heartbeat(client, group, "m2", 0, [topic]).member_epoch == 2
        rebalanced = share_wire.heartbeat(client, group, "m1", 1)
        assert rebalanced.member_epoch == 2

        def tool(name: str, *args: str) -> Step:
            return Step(name, SHARE_GROUPS, ["--bootstrap-server", broker.bootstrap, *args])

        out = run_tools([
            tool("list", "--list"),
            tool("list-state", "--list", "--state"),
            tool("members", "--describe", "--group", group, "--members", "--verbose"),
            tool("state", "--describe", "--group", group, "--state", "--verbose"),
        ])
        assert group in out["list"].ok().lines
        assert [group, "Stable"] in columns(out["list-state"].ok().lines)
        assert columns(out["members"].ok().lines) == [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH",
             "ASSIGNMENT"],
            [group, "m1", "/127.0.0.1", "raw", "2", "2", f"{topic}:1,2"],
            [group, "m2", "/127.0.0.1", "raw", "1", "2", f"{topic}:0"],
        ]
        assert columns(out["state"].ok().lines) == [
            ["GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
             "#MEMBERS"],
            [group, broker.bootstrap, "(1)", "Stable", "2", "2", "2"],
        ]
        ours = groups(broker, "describe", "--type", "share", "--group", group, "--members",
                      "--verbose")
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.splitlines() == [
            *out["state"].lines, *out["members"].lines]
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
