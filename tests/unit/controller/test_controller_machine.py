"""The controller's state machine adapter: committed batches replay into the controller, the
batches since the last snapshot stay available to the metadata stream, and a snapshot
restores the same state."""

import asyncio

from odradek.controller.machine import ControllerMachine
from odradek.metadata.controller import QuorumController
from odradek.metadata.records import (
    ConfigRecord,
    ConfigResourceType,
    RegisterBrokerRecord,
    encode_batch,
)
from odradek.raft.types import Snapshot
from tests.unit.controller_harness import plaintext_at


def register(broker_id: int) -> bytes:
    return encode_batch([RegisterBrokerRecord(broker_id, f"inc-{broker_id}", broker_id,
                                              plaintext_at("127.0.0.1", 9000 + broker_id), None)])


def test_batches_replay_and_stay_available_after_their_offsets() -> None:
    machine = ControllerMachine(QuorumController)
    machine.apply(1, b"")  # a leader's no-op entry
    machine.apply(2, register(1))
    machine.apply(3, register(2))

    assert sorted(machine.controller.metadata.brokers) == [1, 2]
    assert machine.controller.registration_offset(2) == 3
    assert [offset for offset, _ in machine.batches_after(0)] == [1, 2, 3]
    assert machine.batches_after(2) == [(3, register(2))]
    assert machine.batches_after(3) == []


def test_compaction_drops_batches_the_snapshot_covers() -> None:
    machine = ControllerMachine(QuorumController)
    for offset in (1, 2, 3):
        machine.apply(offset, register(offset))
    machine.compacted(2)

    assert machine.image_offset == 2
    assert [offset for offset, _ in machine.batches_after(0)] == [3]


def test_a_snapshot_restores_the_state_it_was_taken_from() -> None:
    source = ControllerMachine(QuorumController)
    source.apply(1, register(1))
    source.apply(2, encode_batch([
        ConfigRecord(ConfigResourceType.BROKER, "", "num.partitions", "3")]))
    restored = ControllerMachine(QuorumController)
    restored.apply(1, register(7))  # state the snapshot replaces

    restored.restore(Snapshot(2, 1, source.snapshot_data()))

    assert restored.controller.metadata.brokers == source.controller.metadata.brokers
    assert restored.controller.metadata.broker_configs == {"": {"num.partitions": "3"}}
    assert (restored.applied, restored.image_offset, restored.batches_after(0)) == (2, 2, [])


def test_waiters_wake_when_a_batch_is_applied() -> None:
    async def scenario() -> bool:
        machine = ControllerMachine(QuorumController)
        change = machine.next_change()
        asyncio.get_running_loop().call_soon(machine.apply, 1, register(1))
        await asyncio.wait_for(change.wait(), 1)
        return machine.next_change() is not change

    assert asyncio.run(scenario())
