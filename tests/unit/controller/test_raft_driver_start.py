"""A quorum of one voter (`odradek dev`, a one-controller cluster) elects itself as soon as
its driver runs, as KRaft's only voter does, rather than a tick later: a tick is 50 ms of
every start. A driver of several voters waits for its election timeout as before."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from odradek.controller.raft_driver import RaftDriver
from odradek.controller.raft_store import RaftLogStore
from odradek.raft.node import RaftConfig, RaftNode, Role

HOUR_MS = 3_600_000
"""A tick no test waits for: an election seen within the test came without one."""


class NoMachine:
    def apply(self, index: int, data: bytes) -> None:
        pass

    def restore(self, snapshot: Any) -> None:
        pass

    def snapshot_data(self) -> bytes:
        return b""

    def compacted(self, index: int) -> None:
        pass


class NoPeers:
    def send(self, messages: list[Any]) -> None:
        pass


async def role_after_start(directory: Path, voters: frozenset[int]) -> Role:
    """The role of node 1 once its driver has run its first steps."""
    node = RaftNode(RaftConfig(node_id=1, voters=voters, election_ticks=10,
                               heartbeat_ticks=2), random.Random(7))
    store = RaftLogStore(directory)
    store.load()
    driver = RaftDriver(node, store, NoMachine(), NoPeers(), HOUR_MS, snapshot_bytes=1 << 20)
    running = asyncio.create_task(driver.run())
    for _ in range(200):  # the first steps persist the vote in an executor thread
        if driver.role is Role.LEADER:
            break
        await asyncio.sleep(0.01)
    assert not running.done(), running.exception()
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    return driver.role


def test_a_lone_voter_leads_without_waiting_for_a_tick(tmp_path: Path) -> None:
    assert asyncio.run(role_after_start(tmp_path, frozenset({1}))) is Role.LEADER


def test_one_of_three_voters_waits_for_its_election_timeout(tmp_path: Path) -> None:
    assert asyncio.run(role_after_start(tmp_path, frozenset({1, 2, 3}))) is not Role.LEADER
