"""`odradek groups`: argument parsing, the reset plan, describe rows and tables, and the
commands' flow against a fake admin (no broker)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, Node, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription
from hypothesis import given
from hypothesis import strategies as st

from odradek import groups_cli
from odradek.cli import build_parser
from odradek.groups_cli import (
    GroupInfo,
    GroupsError,
    Member,
    OffsetRow,
    Partition,
    PartitionOffsets,
    ResetTarget,
    TopicArg,
    clamp,
    format_assignment,
    format_table,
    offset_rows,
    parse_datetime,
    parse_topic_arg,
    plan_reset,
    plan_table,
    refusal,
    reset_target,
)

T0, T1 = Partition("orders", 0), Partition("orders", 1)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["groups", *argv])


# --- date-times and topic arguments ----------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-01-02T03:04:05.678Z", datetime(2024, 1, 2, 3, 4, 5, 678_000, UTC)),
    ("2024-01-02T03:04:05.678", datetime(2024, 1, 2, 3, 4, 5, 678_000, UTC)),
    ("2024-01-02T03:04:05", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("2024-01-02T03:04", datetime(2024, 1, 2, 3, 4, tzinfo=UTC)),
    ("2024-01-02T03:04:05.000+02:00", datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC)),
    ("2024-01-02T03:04:05-0500", datetime(2024, 1, 2, 8, 4, 5, tzinfo=UTC)),
])
def test_parse_datetime(text: str, expected: datetime) -> None:
    assert parse_datetime(text) == int(expected.timestamp() * 1000)


@pytest.mark.parametrize("text", ["2024-01-02", "2024-01-02 03:04:05", "yesterdayT", "T12:00"])
def test_parse_datetime_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid date-time"):
        parse_datetime(text)


@given(st.integers(min_value=0, max_value=4_102_444_800_000),
       st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_parse_datetime_round_trips_milliseconds(ms: int, offset_minutes: int) -> None:
    zone = timezone(timedelta(minutes=offset_minutes))
    moment = datetime.fromtimestamp(ms / 1000, UTC).astimezone(zone)
    assert parse_datetime(moment.isoformat(timespec="milliseconds")) == ms


@pytest.mark.parametrize(("text", "expected"), [
    ("orders", TopicArg("orders", None)),
    ("orders:3", TopicArg("orders", (3,))),
    ("orders:0,2", TopicArg("orders", (0, 2))),
])
def test_parse_topic_arg(text: str, expected: TopicArg) -> None:
    assert parse_topic_arg(text) == expected


@pytest.mark.parametrize("text", ["orders:", "orders:a", "orders:1,", ":1", "orders:-1"])
def test_parse_topic_arg_rejects(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid topic"):
        parse_topic_arg(text)


# --- the reset plan --------------------------------------------------------------------------


@pytest.mark.parametrize(("offset", "expected"), [(-5, 10), (10, 10), (15, 15), (20, 20),
                                                  (21, 20)])
def test_clamp(offset: int, expected: int) -> None:
    assert clamp(offset, 10, 20) == expected


KNOWN = {
    T0: PartitionOffsets(earliest=10, latest=50, committed=30, at_timestamp=25),
    T1: PartitionOffsets(earliest=0, latest=7, committed=None, at_timestamp=None),
}


@pytest.mark.parametrize(("target", "expected"), [
    (ResetTarget("earliest"), {T0: 10, T1: 0}),
    (ResetTarget("latest"), {T0: 50, T1: 7}),
    (ResetTarget("offset", 5), {T0: 10, T1: 5}),
    (ResetTarget("offset", 40), {T0: 40, T1: 7}),
    (ResetTarget("datetime", 1_700_000_000_000), {T0: 25, T1: 7}),
])
def test_plan_reset(target: ResetTarget, expected: dict[Partition, int]) -> None:
    assert plan_reset(target, KNOWN) == expected


@pytest.mark.parametrize(("shift", "expected"), [(-5, 25), (-100, 10), (15, 45), (100, 50)])
def test_plan_reset_shift_is_clamped(shift: int, expected: int) -> None:
    assert plan_reset(ResetTarget("shift", shift), {T0: KNOWN[T0]}) == {T0: expected}


def test_plan_reset_shift_needs_a_committed_offset() -> None:
    with pytest.raises(GroupsError, match="Cannot shift offset for partition orders-1 since "
                                          "there is no current committed offset"):
        plan_reset(ResetTarget("shift", 1), KNOWN)


def test_plan_reset_is_sorted_by_partition() -> None:
    known = {Partition("b", 0): KNOWN[T1], T1: KNOWN[T1], T0: KNOWN[T0]}
    assert list(plan_reset(ResetTarget("earliest"), known)) == [Partition("b", 0), T0, T1]


@st.composite
def partition_offsets(draw: st.DrawFn) -> PartitionOffsets:
    earliest = draw(st.integers(0, 1000))
    latest = draw(st.integers(earliest, earliest + 1000))
    committed = draw(st.none() | st.integers(0, 3000))
    at_timestamp = draw(st.none() | st.integers(earliest, latest))
    return PartitionOffsets(earliest, latest, committed, at_timestamp)


@given(st.sampled_from(["earliest", "latest", "offset", "datetime", "shift"]),
       st.integers(-5000, 5000), partition_offsets())
def test_plan_reset_stays_within_the_log(kind: groups_cli.ResetKind, value: int,
                                         known: PartitionOffsets) -> None:
    if kind == "shift" and known.committed is None:
        return
    new = plan_reset(ResetTarget(kind, value), {T0: known})[T0]
    assert known.earliest <= new <= known.latest
    if kind == "offset" and known.earliest <= value <= known.latest:
        assert new == value


def test_refusal() -> None:
    assert refusal("g", "Stable") == ("Assignments can only be reset if the group 'g' is "
                                      "inactive, but the current state is Stable.")
    assert refusal("g", "PreparingRebalance") is not None
    assert refusal("g", "Unknown") is not None
    assert refusal("g", "Empty") is None
    assert refusal("g", "Dead") is None
    assert refusal("g", None) is None


# --- describe rows and tables ----------------------------------------------------------------


def member(consumer_id: str, *assignment: Partition) -> Member:
    return Member(consumer_id, None, f"client-{consumer_id}", f"/10.0.0.{len(consumer_id)}",
                  tuple(assignment))


def group(*members: Member, state: str = "Stable", group_id: str = "g") -> GroupInfo:
    return GroupInfo(group_id, state, "Classic", "127.0.0.1:9092 (1)", "range", members)


def test_offset_rows_follow_kafka() -> None:
    busy = member("m-busy", T1, T0)
    idle = member("m-idle")
    single = member("m-one", Partition("audit", 0))
    committed = {T0: 7, Partition("audit", 0): 3, Partition("old", 2): 1}
    log_ends = {T0: 10, T1: 4, Partition("old", 2): 9}
    rows = offset_rows(group(single, idle, busy), committed, log_ends)
    assert rows == [
        OffsetRow("g", "orders", 0, 7, 10, "m-busy", "/10.0.0.6", "client-m-busy"),
        OffsetRow("g", "orders", 1, None, 4, "m-busy", "/10.0.0.6", "client-m-busy"),
        OffsetRow("g", "audit", 0, 3, None, "m-one", "/10.0.0.5", "client-m-one"),
        OffsetRow("g", "old", 2, 1, 9, None, None, None),
    ]
    assert [r.lag for r in rows] == [3, None, None, 8]


def test_offset_rows_of_an_empty_group_list_its_committed_offsets() -> None:
    rows = offset_rows(group(state="Empty"), {T1: 4, T0: 0}, {T0: 0, T1: 9})
    assert [(r.partition, r.current_offset, r.lag, r.consumer_id) for r in rows] == [
        (0, 0, 0, None), (1, 4, 5, None)]


def test_format_table_aligns_and_marks_missing_values() -> None:
    table = format_table(("GROUP", "LAG", "CLIENT-ID"), [("a-long-group", None, "c"),
                                                         ("g", 12345, None)])
    assert table.splitlines() == [
        "GROUP         LAG    CLIENT-ID",
        "a-long-group  -      c",
        "g             12345  -",
    ]


def test_format_table_without_rows_is_the_header() -> None:
    assert format_table(("A", "B"), []) == "A  B"


def test_format_assignment() -> None:
    assert format_assignment([T1, Partition("audit", 3), T0]) == "audit(3), orders(0,1)"
    assert format_assignment([]) == "-"


def test_plan_table() -> None:
    lines = plan_table({"g": {T0: 5, T1: 6}}).splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert [line.split() for line in lines[1:]] == [["g", "orders", "0", "5"],
                                                     ["g", "orders", "1", "6"]]


# --- AdminClient results to plain data -------------------------------------------------------


def test_group_info_from_a_confluent_description() -> None:
    description = ConsumerGroupDescription(
        "g", False,
        [MemberDescription("m1", "client-1", "/127.0.0.1",
                           MemberAssignment([TopicPartition("orders", 1),
                                             TopicPartition("orders", 0)]),
                           group_instance_id="static-1",
                           target_assignment=MemberAssignment([TopicPartition("orders", 2)]))],
        "uniform", ConsumerGroupState.STABLE, Node(1, "localhost", 9092),
        type=ConsumerGroupType.CONSUMER)
    assert groups_cli._group_info(description) == GroupInfo(
        "g", "Stable", "Consumer", "localhost:9092 (1)", "uniform",
        (Member("m1", "static-1", "client-1", "/127.0.0.1", (T0, T1),
                (Partition("orders", 2),)),))


@pytest.mark.parametrize(("state", "name"), [
    (ConsumerGroupState.PREPARING_REBALANCING, "PreparingRebalance"),
    (ConsumerGroupState.COMPLETING_REBALANCING, "CompletingRebalance"),
    (ConsumerGroupState.EMPTY, "Empty"),
    (ConsumerGroupState.DEAD, "Dead"),
    (ConsumerGroupState.UNKNOWN, "Unknown"),
    (None, "Unknown"),
])
def test_state_names_are_kafkas(state: ConsumerGroupState | None, name: str) -> None:
    assert groups_cli._state_name(state) == name


# --- the command line ------------------------------------------------------------------------


def test_common_options_and_defaults() -> None:
    args = parse("list")
    assert (args.bootstrap_server, args.timeout, args.state, args.type, args.json) == (
        "127.0.0.1:9092", 10.0, [], [], False)
    assert args.run is groups_cli.run_list
    args = parse("list", "--bootstrap-server", "h:1", "--timeout", "2.5", "--state", "stable",
                 "EMPTY", "--type", "consumer", "--state", "dead")
    assert (args.bootstrap_server, args.timeout) == ("h:1", 2.5)
    assert args.state == ["Stable", "Empty", "Dead"]
    assert args.type == ["Consumer"]


@pytest.mark.parametrize("argv", [
    ["list", "--state", "Sleeping"],
    ["list", "--type", "share"],
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
    assert reset_target(args) == expected
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
    return groups_cli._reset_offsets(args, admin)


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
    monkeypatch.setattr(groups_cli, "GroupAdmin", lambda *_: admin)
    args = parse("reset-offsets", "--group", "idle", "--topic", "orders", "--shift-by", "1")
    admin.offsets["idle"].pop(T1)
    assert args.run(args) == 1
    assert capsys.readouterr().err.startswith("Error: Cannot shift offset for partition orders-1")


def test_describe_prints_state_offsets_and_members(capsys: pytest.CaptureFixture[str]) -> None:
    admin = fake()
    args = parse("describe", "--group", "busy", "--group", "idle", "--members")
    assert groups_cli._describe(args, admin) == 0
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
    assert groups_cli._describe(args, admin) == 1
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
    assert groups_cli._list(parse("list", "--state", "empty"), admin) == 0
    assert [line.split() for line in capsys.readouterr().out.splitlines()] == [
        ["GROUP", "TYPE", "STATE"], ["idle", "Classic", "Empty"]]
    assert groups_cli._list(parse("list", "--json"), admin) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"group": "busy", "type": "Classic", "state": "Stable"},
        {"group": "idle", "type": "Classic", "state": "Empty"}]
