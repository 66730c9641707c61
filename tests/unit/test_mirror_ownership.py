"""When a mirror copier may start a session (InitProducerId, which fences the partition's
other producers): only as the group's confirmed owner, and not again for a source read
error. A process resumed after a pause past its session timeout must not fence the owner."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import ConsumerGroupState

from odradek.kafka_client import KafkaCluster
from odradek.mirror import copier as copier_module
from odradek.mirror.copier import CopySettings, PartitionCopier
from odradek.mirror.metrics import PartitionMetrics
from odradek.mirror.ownership import Ownership, verdict
from odradek.mirror.reader import Fetched, ReadError

TP = ("east.orders", 0)
SETTINGS = CopySettings("east", "west", True, "mm2-offsets.east.internal", 25, None)


@pytest.mark.parametrize(("state", "assignments", "expected"), [
    (ConsumerGroupState.STABLE, {"me": [TP]}, Ownership.OWNER),
    (ConsumerGroupState.STABLE, {"me": [("east.orders", 1)], "other": [TP]},
     Ownership.NOT_OWNER),
    (ConsumerGroupState.STABLE, {"other": [TP]}, Ownership.NOT_OWNER),  # removed: a zombie
    (ConsumerGroupState.EMPTY, {}, Ownership.NOT_OWNER),
    (ConsumerGroupState.DEAD, {}, Ownership.NOT_OWNER),
    (ConsumerGroupState.PREPARING_REBALANCING, {"me": [TP]}, Ownership.UNKNOWN),
    (ConsumerGroupState.COMPLETING_REBALANCING, {"me": [TP]}, Ownership.UNKNOWN),
    (None, {}, Ownership.UNKNOWN),  # the coordinator did not answer
])
def test_verdict(state: ConsumerGroupState | None, assignments: dict[str, list[tuple[str, int]]],
                 expected: Ownership) -> None:
    assert verdict(state, assignments, "me", TP) is expected


def test_no_member_id_owns_nothing() -> None:
    assert verdict(ConsumerGroupState.STABLE, {"": [TP]}, "", TP) is Ownership.NOT_OWNER


class FakeProducer:
    """Counts InitProducerId: each one would fence the partition's other producers."""

    producer_id = 7
    producer_epoch = 0

    def __init__(self) -> None:
        self.inits = 0

    async def init(self) -> None:
        self.inits += 1
        self.producer_epoch += 1


class FakeReader:
    """An empty source and target; the source's Fetch fails `failures` times, then waits."""

    failures = 0
    waiting = asyncio.Event()

    def __init__(self, *_: object) -> None:
        pass

    async def offset(self, timestamp: int, isolation_level: int = 0) -> int:
        return 0

    async def fetch(self, offset: int) -> Fetched:
        if FakeReader.failures > 0:
            FakeReader.failures -= 1
            raise ReadError("Fetch east.orders-0: NOT_LEADER_OR_FOLLOWER")
        FakeReader.waiting.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def copier(answers: list[Ownership]) -> tuple[PartitionCopier, FakeProducer, list[Ownership]]:
    asked: list[Ownership] = []

    async def owner_check() -> Ownership:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        asked.append(answer)
        return answer

    nowhere = KafkaCluster([("127.0.0.1", 9)], "test", 1.0)
    result = PartitionCopier(SETTINGS, *TP, "west.orders", nowhere, nowhere,
                             PartitionMetrics(), None, owner_check)
    producer = FakeProducer()
    result.producer = producer  # type: ignore[assignment]
    return result, producer, asked


async def copy_until_fetching(copier: PartitionCopier) -> None:
    """Run the copy until its session waits on the source, then stop it."""
    task = asyncio.ensure_future(copier.run())
    await asyncio.wait_for(FakeReader.waiting.wait(), 30)
    await copier.stop()
    await asyncio.wait_for(task, 30)


def test_a_zombie_does_not_start_a_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copier_module, "PartitionReader", FakeReader)
    zombie, producer, asked = copier([Ownership.NOT_OWNER])
    asyncio.run(asyncio.wait_for(zombie.run(), 30))
    assert producer.inits == 0
    assert asked == [Ownership.NOT_OWNER]


def test_a_session_waits_for_the_rebalance_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copier_module, "PartitionReader", FakeReader)
    monkeypatch.setattr(FakeReader, "waiting", asyncio.Event())
    waiting, producer, asked = copier([Ownership.UNKNOWN, Ownership.UNKNOWN, Ownership.OWNER])

    asyncio.run(copy_until_fetching(waiting))
    assert asked == [Ownership.UNKNOWN, Ownership.UNKNOWN, Ownership.OWNER]
    assert producer.inits == 1


def test_source_read_errors_keep_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a consumer's poll retries: a new session would bump the epoch for nothing."""
    monkeypatch.setattr(copier_module, "PartitionReader", FakeReader)
    monkeypatch.setattr(FakeReader, "waiting", asyncio.Event())
    monkeypatch.setattr(FakeReader, "failures", 3)
    owner, producer, asked = copier([Ownership.OWNER])

    asyncio.run(copy_until_fetching(owner))
    assert FakeReader.failures == 0
    assert producer.inits == 1
    assert asked == [Ownership.OWNER]
