"""The simulation can fail: deliberately broken Raft variants (defined only here) are caught
by its invariant checks on some seed, while the real node passes the same seeds."""

from __future__ import annotations

import random
from collections.abc import Callable

from odradek.raft import RaftConfig, RaftNode
from odradek.raft.log import RaftLog
from tests.sim.cluster import Faults, Quorum, Violation, restore_node
from tests.sim.disk import SimDisk

SEARCH = 2000
"""Seeds tried before giving up on finding the bug."""


class CommitsEarlierTermsByCounting(RaftNode):
    """Commits any entry a quorum holds, even one from an earlier term (Raft Figure 8)."""

    def _committable_by_counting(self, index: int) -> bool:
        return True


class _LaxLog(RaftLog):
    __slots__ = ()

    def is_up_to_date(self, last_term: int, last_index: int) -> bool:
        return True


class VotesForStaleLogs(RaftNode):
    """Grants votes without comparing logs (Raft §5.4.1's election restriction)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._log.__class__ = _LaxLog


def factory(node_class: type[RaftNode]) -> Callable[[RaftConfig, random.Random, SimDisk],
                                                     RaftNode]:
    def build(config: RaftConfig, rng: random.Random, disk: SimDisk) -> RaftNode:
        return node_class(config, rng, disk.hard_state, disk.snapshot, list(disk.entries))
    return build


FIGURE_8_FAULTS = Faults(drop=0.1, duplicate=0.0, max_delay=1, partition=0.02, heal=0.1,
                         crash=0.0, crash_in_ready=0.0, restart_after=(3, 20), propose=0.3,
                         transfer=0.0, leader_nemesis=0.15)
"""Short-lived leaders that leave divergent, uncommitted log tails behind."""
FIGURE_8_CONFIG = {"max_entries_per_message": 1, "max_inflight_messages": 1,
                   "pre_vote": False, "check_quorum": False}


def first_violation(make: Callable[[int], Quorum], ticks: int) -> tuple[int, str]:
    for seed in range(SEARCH):
        quorum = make(seed)
        try:
            quorum.run(ticks)
        except Violation as violation:
            return seed, str(violation)
    raise AssertionError(f"no seed in range({SEARCH}) caught the bug")


def test_committing_an_earlier_term_entry_by_counting_is_caught() -> None:
    def make(seed: int, node_class: type[RaftNode] = CommitsEarlierTermsByCounting) -> Quorum:
        return Quorum(seed, 3, faults=FIGURE_8_FAULTS, node_factory=factory(node_class),
                      config=FIGURE_8_CONFIG)

    seed, violation = first_violation(make, ticks=200)
    assert "committed" in violation
    make(seed, RaftNode).run(200)


def test_voting_without_the_log_check_is_caught() -> None:
    def make(seed: int, node_class: type[RaftNode] = VotesForStaleLogs) -> Quorum:
        return Quorum(seed, 3, node_factory=factory(node_class))

    seed, violation = first_violation(make, ticks=300)
    assert "committed" in violation
    Quorum(seed, 3, node_factory=restore_node).run(300)
