"""`odradek groups reset-offsets` planning: date-times, topic arguments, the plan, refusals."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.cli.groups.model import GroupsError, Partition
from odradek.cli.groups.reset import (
    PartitionOffsets,
    ResetKind,
    ResetTarget,
    TopicArg,
    clamp,
    parse_datetime,
    parse_topic_arg,
    plan_reset,
    refusal,
)

T0, T1 = Partition("orders", 0), Partition("orders", 1)


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
def test_plan_reset_stays_within_the_log(kind: ResetKind, value: int,
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

