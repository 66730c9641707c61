"""A replicated partition (3 and 5 replicas) under message loss, reordering, cut links,
crashes and stale metadata, one deterministic run per seed (`tests/sim/partition_replication.py`):
no acknowledged or consumer-visible record is ever lost or changed, high watermarks never go
back, replicas agree below their high watermarks; once healed, a new record is acknowledged
and every replica converges to the same log."""

from __future__ import annotations

import pytest

from odradek.replication import leader as leader_core
from odradek.replication.follower import Truncation
from tests.sim import partition_replication
from tests.sim.partition_replication import PartitionSim, Stats
from tests.sim.seeds import replay_command, seeds

CHAOS_STEPS = 4000
SETTLE_STEPS = 120


def run_seed(replicas: int, seed: int) -> Stats:
    sim = PartitionSim(seed, replicas)
    sim.drop_rate = 0.05
    try:
        for _ in range(CHAOS_STEPS):
            sim.step()
        sim.heal()
        sim.settle(SETTLE_STEPS)
        acked = len(sim.acked)
        leader = next(b for b in sim.brokers.values() if b.leading is not None)
        sim.produce(leader)
        sim.settle(SETTLE_STEPS)
        assert len(sim.acked) == acked + 1, "a new record is acknowledged after healing"
        logs = {tuple(v for _, v in b.log) for b in sim.brokers.values()}
        assert len(logs) == 1, "every replica converges to the leader's log"
    except (AssertionError, StopIteration) as error:
        command = replay_command(seed, "tests/sim/test_partition_replication_sim.py",
                                 f"replicas{replicas}")
        raise AssertionError(f"seed {seed} failed; replay with:\n  {command}\n{error!r}"
                             ) from error
    return sim.stats


@pytest.mark.parametrize("seed", seeds())
@pytest.mark.parametrize("replicas", [3, 5], ids=lambda n: f"replicas{n}")
def test_a_replicated_partition_is_safe_and_live(replicas: int, seed: int) -> None:
    run_seed(replicas, seed)


def test_the_faults_reach_every_path() -> None:
    """Not vacuous: across a few seeds records are acknowledged, leaders change, replicas
    truncate divergent tails, brokers crash and ISRs change."""
    total = Stats()
    for seed in range(10):
        stats = run_seed(3, seed)
        for name, value in vars(stats).items():
            setattr(total, name, getattr(total, name) + value)
    assert total.acked >= 300
    assert total.leader_changes >= 25
    assert total.truncations >= 3
    assert total.crashes >= 50
    assert total.isr_changes >= 50


def test_a_high_watermark_that_ignores_a_lagging_isr_member_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broken leader that commits as soon as any one follower has a record loses
    acknowledged writes when it fails over, and the checker says so."""

    def careless(self: leader_core.LeaderState, leader_end: int) -> bool:
        known = [s.log_end_offset for s in self.followers.values() if s.log_end_offset >= 0]
        candidate = min(leader_end, max(known, default=leader_end))
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    monkeypatch.setattr(leader_core.LeaderState, "advance_high_watermark", careless)
    with pytest.raises(AssertionError, match="InvariantViolation"):
        for seed in range(40):
            run_seed(3, seed)


def test_a_follower_that_keeps_its_divergent_tail_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def keep_everything(epochs: object, log_end_offset: int, *_: object) -> Truncation:
        return Truncation(log_end_offset, True)

    monkeypatch.setattr(partition_replication, "truncation", keep_everything)
    with pytest.raises(AssertionError, match="InvariantViolation"):
        for seed in range(40):
            run_seed(3, seed)
