"""The flush policy: fsync by flush.messages or flush.ms, observed through the recovery
points the broker checkpoints (a recovery point only moves when data is fsynced)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import Out, create_topic, now_ms, produce_confluent, unique

CHECKPOINT_EVERY_200_MS = {"log.flush.offset.checkpoint.interval.ms": "200"}


def recovery_point(data_dir: Path, topic: str) -> int | None:
    path = data_dir / "recovery-point-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.rsplit(" ", 2)
        if (name, partition) == (topic, "0"):
            return int(offset)
    return None


def settle(data_dir: Path, topic: str, expected: int, timeout: float = 10.0) -> int | None:
    deadline = time.monotonic() + timeout
    point = recovery_point(data_dir, topic)
    while point != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        point = recovery_point(data_dir, topic)
    return point


def ten_records(bootstrap: str, topic: str) -> None:
    outs = [Out(None, f"r{i}".encode(), now_ms(), partition=0) for i in range(10)]
    produce_confluent(bootstrap, topic, outs, {"linger.ms": 0, "batch.num.messages": 1})


def test_default_policy_leaves_fsync_to_the_page_cache(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update(CHECKPOINT_EVERY_200_MS)
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("no-flush"))
    ten_records(fresh_broker.bootstrap, topic)
    time.sleep(1.5)  # several checkpoint and flush-scheduler rounds
    assert recovery_point(fresh_broker.data_dir, topic) in (None, 0)


def test_flush_messages_fsyncs_every_message(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update({**CHECKPOINT_EVERY_200_MS, "log.flush.interval.messages": "1"})
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("flush-each"))
    ten_records(fresh_broker.bootstrap, topic)
    assert settle(fresh_broker.data_dir, topic, 10) == 10


def test_topic_flush_ms_fsyncs_on_a_timer(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update({**CHECKPOINT_EVERY_200_MS,
                                   "log.flush.scheduler.interval.ms": "100"})
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("flush-ms"), config={"flush.ms": "200"})
    ten_records(fresh_broker.bootstrap, topic)
    assert settle(fresh_broker.data_dir, topic, 10) == 10
