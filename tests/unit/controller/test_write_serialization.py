"""The controller's writes build on every earlier write: one whose caller timed out still
holds back the next until its entry is applied.

The fault campaign of 29 Nov (seed 220223841) lost two acknowledged writes this way. A round
of fencing timed out waiting for its entry (the quorum was slow), and the next round was
built before that entry was applied. The first round fenced brokers 2, 3 and 5 and shrank a
partition's ISR from [1, 5, 4] to [1, 4]. The second, built on the old state, fenced all
five brokers and kept 5, the last member it removed, as the ISR. Broker 5 lacked the
partition's last acknowledged records and was elected once it came back."""

from __future__ import annotations

import asyncio

import pytest

from odradek.controller.machine import ControllerMachine
from odradek.controller.service import ControllerService
from odradek.metadata.records import FenceBrokerRecord, MetadataRecord
from tests.unit.controller_harness import ActiveDriver, Cluster

SESSION_MS = 1000


async def two_fencing_rounds(cluster: Cluster, first_at: int, second_at: int
                             ) -> tuple[list[int], list[int]]:
    """The campaign's sequence: a fencing round whose caller times out before its entry is
    applied, then a second round, later. The broker ids each round fenced."""
    machine = ControllerMachine(lambda: cluster.controller)
    driver = ActiveDriver(machine, cluster.offset, hold=True)
    service = ControllerService(machine, driver, "cluster", {}, 50)  # type: ignore[arg-type]

    def fence(now: int) -> tuple[list[MetadataRecord], list[int]]:
        records = cluster.controller.tick(now)
        return records, [r.broker_id for r in records if isinstance(r, FenceBrokerRecord)]

    with pytest.raises(TimeoutError):
        await service.write(lambda: fence(first_at))
    second = asyncio.ensure_future(service.write(lambda: fence(second_at)))
    await asyncio.sleep(0.1)
    assert not second.done() and len(driver.held) == 1  # built only after the first applies
    driver.apply_next()
    await asyncio.sleep(0)
    first_fenced = [r.broker_id for r in cluster.metadata.brokers.values() if r.fenced]
    while not second.done():
        if driver.held:
            driver.apply_next()
        await asyncio.sleep(0)
    return first_fenced, second.result()


def test_a_write_after_a_timed_out_one_builds_on_its_entry() -> None:
    cluster = Cluster(session_timeout_ms=SESSION_MS)
    cluster.start(1, 2, 3, 4, 5)
    topic_id = cluster.create("idem", 1, 3, {0: [1, 5, 4]})
    for broker_id in (1, 4):
        cluster.heartbeat(broker_id, now=SESSION_MS)  # 2, 3 and 5 expire first
    first, second = asyncio.run(two_fencing_rounds(cluster, SESSION_MS + 1, 2 * SESSION_MS + 1))
    assert sorted(first) == [2, 3, 5]
    assert sorted(second) == [1, 4]
    partition = cluster.partition(topic_id)
    assert partition.leader == -1
    assert partition.isr in ((1,), (4,))  # a replica with every acknowledged record
