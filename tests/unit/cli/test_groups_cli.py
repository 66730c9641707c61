"""`odradek groups`: the command line, and the commands' flow against a fake admin
(no broker)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from odradek.cli.groups import cli
from odradek.cli.groups.model import GroupInfo, Member, Partition
from odradek.cli.groups.reset import ResetTarget, TopicArg
from odradek.cli.main import build_parser

T0, T1 = Partition("orders", 0), Partition("orders", 1)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["groups", *argv])


def member(consumer_id: str, *assignment: Partition) -> Member:
    return Member(consumer_id, None, f"client-{consumer_id}", f"/10.0.0.{len(consumer_id)}",
                  tuple(assignment))


def group(*members: Member, state: str = "Stable", group_id: str = "g") -> GroupInfo:
    return GroupInfo(group_id, state, "Classic", "127.0.0.1:9092 (1)", "range", members)


# --- the command line ------------------------------------------------------------------------


def test_common_options_and_defaults() -> None:
    args = parse("list")
    assert (args.bootstrap_server, args.timeout, args.state, args.type, args.json) == (
        "localhost:9092", 10.0, [], [], False)
    assert args.run is cli.run_list
    args = parse("list", "--bootstrap-server", "h:1", "--timeout", "2.5", "--state", "stable",
                 "EMPTY", "--type", "consumer", "--state", "dead")
    assert (args.bootstrap_server, args.timeout) == ("h:1", 2.5)
    assert args.state == ["Stable", "Empty", "Dead"]
    assert args.type == ["Consumer"]


@pytest.mark.parametrize("argv", [
    ["list", "--state", "Sleeping"],
    ["list", "--type", "streams"],
    ["describe"],
    ["describe", "--group", "g", "--all-groups"],
    ["reset-offsets", "--group", "g", "--to-earliest"],
    ["reset-offsets", "--group", "g", "--all-topics"],
    ["reset-offsets", "--group", "g", "--all-topics", "--topic", "t", "--to-earliest"],
    ["reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"],
    ["reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run",
     "--execute"],
    ["reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2024-01-01"],
    ["delete"],
])
def test_invalid_command_lines_exit_2(argv: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["--to-earliest"], ResetTarget("earliest")),
    (["--to-latest"], ResetTarget("latest")),
    (["--to-offset", "0"], ResetTarget("offset", 0)),
    (["--shift-by", "-3"], ResetTarget("shift", -3)),
    (["--to-datetime", "1970-01-01T00:00:01.5Z"], ResetTarget("datetime", 1500)),
])
def test_reset_target(argv: list[str], expected: ResetTarget) -> None:
    args = parse("reset-offsets", "--group", "g", "--topic", "t:0,1", "--topic", "u", *argv)
    assert cli.reset_target(args) == expected
    assert args.topic == [TopicArg("t", (0, 1)), TopicArg("u", None)]
    assert not args.execute


# --- the commands against a fake admin -------------------------------------------------------


@dataclass
class FakeAdmin:
    """GroupAdmin's interface over in-memory logs: partition -> (earliest, latest, timestamps
    of the records from `earliest` on)."""

    groups: dict[str, GroupInfo | None] = field(default_factory=dict)
    offsets: dict[str, dict[Partition, int]] = field(default_factory=dict)
    logs: dict[Partition, tuple[int, list[int]]] = field(default_factory=dict)
    altered: list[tuple[str, dict[Partition, int]]] = field(default_factory=list)

    def list_groups(self, states: Sequence[str],
                    types: Sequence[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
        rows = sorted((g.group_id, g.type, g.state) for g in self.groups.values() if g)
        return [r for r in rows if (not states or r[2] in states)
                and (not types or r[1] in types)], []

    def describe(self, group_ids: Sequence[str]) -> dict[str, GroupInfo | None]:
        return {g: self.groups.get(g) for g in group_ids}

    def committed(self, group_id: str) -> dict[Partition, int]:
        return dict(self.offsets.get(group_id, {}))

    def topic_partitions(self, topics: Iterable[str]) -> list[Partition]:
        names = set(topics)
        return sorted(p for p in self.logs if p.topic in names)

    def log_offsets(self, partitions: Iterable[Partition],
                    spec: str | int) -> dict[Partition, int | None]:
        answers: dict[Partition, int | None] = {}
        for p in partitions:
            earliest, timestamps = self.logs[p]
            if spec == "earliest":
                answers[p] = earliest
            elif spec == "latest":
                answers[p] = earliest + len(timestamps)
            else:
                later = [i for i, ts in enumerate(timestamps) if ts >= int(spec)]
                answers[p] = earliest + later[0] if later else None
        return answers

    def alter_offsets(self, group_id: str, offsets: Mapping[Partition, int]) -> None:
        self.altered.append((group_id, dict(offsets)))
        self.offsets.setdefault(group_id, {}).update(offsets)


def fake() -> FakeAdmin:
    return FakeAdmin(
        groups={"idle": group(state="Empty", group_id="idle"),
                "busy": group(member("m", T0), group_id="busy")},
        offsets={"idle": {T0: 2, T1: 1}, "busy": {T0: 3}},
        logs={T0: (0, [100, 200, 300, 400]), T1: (1, [150, 250])},
    )


def reset(admin: FakeAdmin, *argv: str) -> int:
    args = parse("reset-offsets", *argv)
    return cli.reset_offsets(args, admin)


def plan_lines(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:]]


def test_reset_is_a_dry_run_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    assert reset(admin, "--group", "idle", "--all-topics", "--to-earliest") == 0
    assert plan_lines(capsys.readouterr().out) == [["idle", "orders", "0", "0"],
                                                   ["idle", "orders", "1", "1"]]
    assert admin.altered == []
    assert reset(admin, "--group", "idle", "--all-topics", "--shift-by", "1", "--dry-run") == 0
    assert admin.altered == []


def test_reset_execute_commits_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    assert reset(admin, "--group", "idle", "--topic", "orders", "--to-datetime",
                 "1970-01-01T00:00:00.200Z", "--execute") == 0
    assert admin.altered == [("idle", {T0: 1, T1: 2})]
    assert plan_lines(capsys.readouterr().out) == [["idle", "orders", "0", "1"],
                                                   ["idle", "orders", "1", "2"]]


def test_reset_to_a_datetime_after_every_record_goes_to_the_log_end() -> None:
    admin = fake()
    assert reset(admin, "--group", "idle", "--topic", "orders:1", "--to-datetime",
                 "2030-01-01T00:00:00Z", "--execute") == 0
    assert admin.altered == [("idle", {T1: 3})]


def test_reset_of_a_new_group_plans_explicit_partitions() -> None:
    admin = fake()
    assert reset(admin, "--group", "new", "--topic", "orders:1", "--to-offset", "99",
                 "--execute") == 0
    assert admin.altered == [("new", {T1: 3})]


def test_reset_refuses_an_active_group(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    code = reset(admin, "--group", "idle", "--group", "busy", "--all-topics", "--to-latest",
                 "--execute")
    assert code == 1
    assert admin.altered == []
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("Error: Assignments can only be reset if the group 'busy' is "
                            "inactive, but the current state is Stable.\n")


def test_guarded_commands_turn_errors_into_exit_code_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    monkeypatch.setattr(cli, "GroupAdmin", lambda *_: admin)
    args = parse("reset-offsets", "--group", "idle", "--topic", "orders", "--shift-by", "1")
    admin.offsets["idle"].pop(T1)
    assert args.run(args) == 1
    assert capsys.readouterr().err.startswith("Error: Cannot shift offset for partition orders-1")


def test_describe_prints_state_offsets_and_members(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    args = parse("describe", "--group", "busy", "--group", "idle", "--members")
    assert cli.describe_groups(args, admin) == 0
    out = capsys.readouterr().out
    assert "GROUP  COORDINATOR (ID)    ASSIGNMENT-STRATEGY  STATE   TYPE     #MEMBERS" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["busy", "orders", "0", "3", "4", "1", "m", "/10.0.0.1", "client-m"] in lines
    assert ["idle", "orders", "0", "2", "4", "2", "-", "-", "-"] in lines
    assert ["idle", "orders", "1", "1", "3", "2", "-", "-", "-"] in lines
    assert ["busy", "m", "-", "/10.0.0.1", "client-m", "1", "orders(0)"] in lines
    assert "Consumer group 'idle' has no active members." in out


def test_describe_json_and_a_missing_group(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    args = parse("describe", "--group", "busy", "--group", "nope", "--json")
    assert cli.describe_groups(args, admin) == 1
    captured = capsys.readouterr()
    described = json.loads(captured.out)
    assert [g["group"] for g in described] == ["busy"]
    assert described[0]["offsets"] == [{
        "topic": "orders", "partition": 0, "current_offset": 3, "log_end_offset": 4, "lag": 1,
        "consumer_id": "m", "host": "/10.0.0.1", "client_id": "client-m"}]
    assert described[0]["members"][0]["assignment"] == [{"topic": "orders", "partition": 0}]
    assert captured.err == "Error: Consumer group 'nope' does not exist.\n"


def test_list_filters_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    assert cli.list_groups(parse("list", "--state", "empty"), admin) == 0
    assert [line.split() for line in capsys.readouterr().out.splitlines()] == [
        ["GROUP", "TYPE", "STATE"], ["idle", "Classic", "Empty"]]
    assert cli.list_groups(parse("list", "--json"), admin) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"group": "busy", "type": "Classic", "state": "Stable"},
        {"group": "idle", "type": "Classic", "state": "Empty"}]
