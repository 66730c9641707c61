"""`odradek groups` output: describe rows, tables."""

from __future__ import annotations

from odradek.cli.groups.model import GroupInfo, Member, Partition
from odradek.cli.groups.report import (
    OffsetRow,
    format_assignment,
    format_table,
    offset_rows,
    plan_table,
)

T0, T1 = Partition("orders", 0), Partition("orders", 1)


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

