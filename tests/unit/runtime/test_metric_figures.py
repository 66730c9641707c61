"""The pure computations behind Kafka-named metrics: windowed rates and idle fractions,
Kafka's per-partition gauges, the Raft state and vote as KRaft reports them, /proc/self/io,
and unusable log directories."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.broker.metrics import (
    PartitionFigures,
    offline_log_dirs,
    partition_figures,
    read_proc_io,
)
from odradek.controller.metrics import current_vote, raft_state
from odradek.raft.types import NO_NODE, Role
from odradek.replication.leader import effective_min_isr
from odradek.runtime.windowed_rate import WINDOW_S, WindowedRate, idle_fraction


@given(st.floats(0, 1e6), st.lists(st.floats(0.01, 30), min_size=1, max_size=50))
def test_a_steady_total_measures_its_slope(slope: float, steps: list[float]) -> None:
    rate = WindowedRate(0.0)
    now = 0.0
    for step in steps:
        now += step
        assert rate.measure(now, slope * now) == pytest.approx(slope, rel=1e-6, abs=1e-6)


def test_the_rate_forgets_what_is_older_than_the_window() -> None:
    rate = WindowedRate(0.0)
    assert rate.measure(10.0, 1000) == 100  # a burst in the first 10 s
    assert rate.measure(5.0 + WINDOW_S, 1000) == pytest.approx(1000 / (5 + WINDOW_S))
    assert rate.measure(20.0 + WINDOW_S, 1000) == 0  # the burst has left the window
    assert rate.measure(20.0 + WINDOW_S, 1000) == 0  # no time passed: no new sample


@pytest.mark.parametrize(("busy", "idle"), [(0.0, 1.0), (0.25, 0.75), (1.0, 0.0), (1.3, 0.0),
                                            (-0.1, 1.0)])
def test_idle_is_a_fraction_from_0_to_1(busy: float, idle: float) -> None:
    assert idle_fraction(busy) == pytest.approx(idle)


@pytest.mark.parametrize(("leader", "replicas", "isr", "min_isr", "figures"), [
    (True, 3, 3, 2, PartitionFigures(0, 3, 0, 0, 3)),
    (True, 3, 2, 2, PartitionFigures(1, 2, 0, 1, 3)),
    (True, 3, 1, 2, PartitionFigures(1, 1, 1, 0, 3)),
    (True, 3, 3, 3, PartitionFigures(0, 3, 0, 1, 3)),
    (True, 3, 2, 3, PartitionFigures(1, 2, 1, 0, 3)),
    # min.insync.replicas above the replication factor counts as the factor (Kafka's
    # effectiveMinIsr): a full ISR is at its min, not under it
    (True, 1, 1, 2, PartitionFigures(0, 1, 0, 1, 1)),
    (False, 3, 1, 2, PartitionFigures(0, 0, 0, 0, 0)),  # followers report nothing
])
def test_kafka_partition_gauges(leader: bool, replicas: int, isr: int, min_isr: int,
                                figures: PartitionFigures) -> None:
    assert partition_figures(leader, replicas, isr,
                             effective_min_isr(min_isr, replicas)) == figures


@pytest.mark.parametrize(("role", "leader", "vote", "state", "voted"), [
    (Role.LEADER, 1, 1, "leader", 1),
    (Role.CANDIDATE, NO_NODE, 1, "candidate", 1),
    (Role.FOLLOWER, 2, 2, "follower", NO_NODE),
    (Role.FOLLOWER, NO_NODE, 3, "voted", 3),
    (Role.FOLLOWER, NO_NODE, NO_NODE, "unattached", NO_NODE),
    (Role.PRE_CANDIDATE, NO_NODE, NO_NODE, "unattached", NO_NODE),
    (Role.OBSERVER, 2, NO_NODE, "observer", NO_NODE),
])
def test_raft_state_and_vote_as_kraft_reports_them(role: Role, leader: int, vote: int,
                                                   state: str, voted: int) -> None:
    assert raft_state(role, leader, vote) == state
    assert current_vote(role, 1, state, vote) == voted


def test_proc_io_read_and_write_bytes() -> None:
    text = ("rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\n"
            "write_bytes: 8192\ncancelled_write_bytes: 0\n")
    assert read_proc_io(text) == (4096, 8192)


def test_log_dirs_that_are_not_writable_directories_count_as_offline(tmp_path: Path) -> None:
    good = tmp_path / "a"
    good.mkdir()
    not_a_dir = tmp_path / "b"
    not_a_dir.write_text("")
    assert offline_log_dirs([good]) == 0
    assert offline_log_dirs([good, tmp_path / "missing", not_a_dir]) == 2
