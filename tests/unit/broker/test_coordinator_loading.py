"""When a coordinator shard is loaded, on a real broker shell over logs on disk: only once the
broker's replica leads the partition, as Kafka loads a shard when its replica becomes leader.

The image is applied before the logs are created and led (in a worker thread), and the first
FindCoordinator that creates `__transaction_state` loaded shards in between: a Kafka Streams
application's first InitProducerId then met a shard with no log to append to (answered
COORDINATOR_NOT_AVAILABLE, with an error logged) and a coordinator epoch of -1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.broker.coordinator_runtime import CoordinatorLoading, NotCoordinator
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from tests.unit.coordinator_shell import apply_transaction_state_topic, transaction_coordinator

NODE = 1
LEADER_EPOCH = 4


async def lead_transaction_state(applier: MetadataApplier) -> None:
    """`__transaction_state`, one partition led by this broker alone."""
    await apply_transaction_state_topic(applier, NODE, LEADER_EPOCH, (NODE,), (NODE,))


def coordinator_epochs(txns: TransactionCoordinatorRuntime) -> dict[int, int]:
    return {p: shard.coordinator_epoch for p, shard in txns.shards.items()}


def test_a_shard_waits_for_its_replica_to_lead(tmp_path: Path) -> None:
    async def scenario() -> None:
        txns, applier = transaction_coordinator(tmp_path, NODE)
        # Not caught up with the metadata log yet: the image says this broker leads
        # partition 0, its replica manager does not lead it yet.
        await lead_transaction_state(applier)
        await txns.ensure_loaded()
        assert txns.num_partitions == 1
        assert coordinator_epochs(txns) == {}
        with pytest.raises(CoordinatorLoading):  # the client retries here, not elsewhere
            txns.shard_for("streams-app-1")
        await applier.caught_up()  # the logs placed and led: refresh_topics follows
        assert coordinator_epochs(txns) == {0: LEADER_EPOCH}
        assert txns.shard_for("streams-app-1")[0] == 0
        txns.close()

    asyncio.run(scenario())


def test_a_shard_whose_replica_leads_is_served_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        txns, applier = transaction_coordinator(tmp_path, NODE)
        txns.broker.caught_up = True
        await lead_transaction_state(applier)
        await txns.ensure_loaded()
        assert coordinator_epochs(txns) == {0: LEADER_EPOCH}
        assert txns.shard_for("streams-app-1")[0] == 0
        txns.close()

    asyncio.run(scenario())


def test_a_shard_another_broker_leads_is_not_this_brokers(tmp_path: Path) -> None:
    async def scenario() -> None:
        txns, applier = transaction_coordinator(tmp_path, NODE)
        txns.broker.caught_up = True
        await apply_transaction_state_topic(applier, NODE + 1, LEADER_EPOCH, (NODE + 1, NODE),
                                            (NODE + 1, NODE))
        await txns.ensure_loaded()
        assert txns.num_partitions == 1 and coordinator_epochs(txns) == {}
        with pytest.raises(NotCoordinator):  # the client looks the coordinator up again
            txns.shard_for("streams-app-1")
        txns.close()
        await txns.replicas.stop()  # the follower's fetcher, before asyncio.run cancels tasks

    asyncio.run(scenario())
