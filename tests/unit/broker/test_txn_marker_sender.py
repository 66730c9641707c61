"""The transaction coordinator's marker sender (odradek/broker/txn_markers.py `MarkerSender`):
an unexpected error while delivering is logged with its traceback and the delivery is tried
again, so that no transaction is left prepared for ever (its producer would be answered
CONCURRENT_TRANSACTIONS ever after, as when the markers' task died of uvloop's RuntimeError
on a killed broker's connection)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.partitions import TopicPartition
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.txn_markers import MarkerSender, MarkerWriter
from odradek.metadata.image import TRANSACTION_STATE_TOPIC
from odradek.txn.coordinator import MarkerJob
from tests.unit.coordinator_shell import apply_transaction_state_topic, transaction_coordinator

KEY = (TRANSACTION_STATE_TOPIC, 0)


class FailingOnce(MarkerWriter):
    """Raises a bug's error on the first write; writes nothing and answers NONE after."""

    def __init__(self, broker: Broker, replicas: ReplicaManager) -> None:
        super().__init__(broker, replicas, lambda *_: None)
        self.calls = 0

    async def write(self, producer_id: int, producer_epoch: int, commit: bool,
                    coordinator_epoch: int, partitions: Iterable[TopicPartition],
                    timeout_s: float) -> dict[TopicPartition, ErrorCode]:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a bug")
        return {key: ErrorCode.none for key in partitions}


def test_a_delivery_that_raises_is_logged_and_tried_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> list[MarkerJob]:
        txns, applier = transaction_coordinator(tmp_path, 1)
        await apply_transaction_state_topic(applier, leader=1, leader_epoch=0, replicas=[1],
                                            isr=[1])
        done: list[MarkerJob] = []
        writer = FailingOnce(txns.broker, txns.replicas)
        sender = MarkerSender(txns.broker, writer, done.append)
        sender.send(MarkerJob("t", 7, 0, 0, True, (KEY,)))
        while not done:
            await asyncio.sleep(0.01)
        assert writer.calls == 2
        return done

    caplog.set_level(logging.ERROR, "odradek.broker.txn_markers")
    (job,) = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert job.producer_id == 7
    (record,) = [r for r in caplog.records if r.name == "odradek.broker.txn_markers"]
    assert record.exc_info is not None
