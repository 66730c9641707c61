"""Whole quorums of 1, 3 and 5 voters (plus observers) under a hostile network, crashes and
leadership churn, one deterministic run per seed: safety is checked after every event and,
once the faults heal, the quorum must elect a leader and commit a new entry everywhere."""

from __future__ import annotations

import pytest

from tests.sim.cluster import Quorum, Stats
from tests.sim.seeds import replay_command, seeds

CHAOS_TICKS = 300


def run_seed(voters: int, seed: int) -> Stats:
    quorum = Quorum(seed, voters, observers=seed % 3)
    try:
        quorum.run(CHAOS_TICKS)
        quorum.heal_all()
        quorum.commit_new_entry(quorum.liveness_bound())
    except Exception as error:
        command = replay_command(seed, "tests/sim/test_raft_sim.py", f"voters{voters}")
        raise AssertionError(f"seed {seed} failed; replay with:\n  {command}\n{error}") from error
    return quorum.stats


@pytest.mark.parametrize("seed", seeds())
@pytest.mark.parametrize("voters", [1, 3, 5], ids=lambda voters: f"voters{voters}")
def test_quorum_is_safe_and_live(voters: int, seed: int) -> None:
    stats = run_seed(voters, seed)
    assert stats.max_commit > 0


def test_the_faults_reach_every_path() -> None:
    """The runs are not vacuous: across a few seeds the simulation elects many leaders,
    crashes nodes, sends and installs snapshots, transfers leadership and commits a lot."""
    total = Stats()
    for seed in range(12):
        for voters in (3, 5):
            stats = run_seed(voters, seed)
            for name, value in vars(stats).items():
                setattr(total, name, getattr(total, name) + value)
    assert total.elections >= 30
    assert total.crashes >= 20
    assert total.snapshots_installed >= 20
    assert total.compactions >= 100
    assert total.transfers >= 3
    assert total.max_commit >= 1000
