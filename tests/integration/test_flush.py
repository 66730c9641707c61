"""The flush policy: fsync by flush.messages or flush.ms, observed through the recovery
points the broker checkpoints (a recovery point only moves when data is fsynced)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import Out, create_topic, now_ms, produce_confluent, unique
from tests.waiting import wait_until

CHECKPOINT_EVERY_200_MS = {"log.flush.offset.checkpoint.interval.ms": "200"}
FLUSH_SCHEDULER_EVERY_100_MS = {"log.flush.scheduler.interval.ms": "100"}
SETTLE_TIMEOUT = 10.0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"


def recovery_point(data_dir: Path, topic: str) -> int | None:
    path = data_dir / RECOVERY_POINT_CHECKPOINT
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.rsplit(" ", 2)
        if (name, partition) == (topic, "0"):
            return int(offset)
    return None


def checkpoint_rounds_after(data_dir: Path, rounds: int) -> None:
    """Returns once the broker has rewritten its recovery-point checkpoint `rounds` times
    from now: each rewrite renames a new file over the old one. The second rewrite comes
    from a checkpoint round that started after this call."""
    path = data_dir / RECOVERY_POINT_CHECKPOINT

    def identity() -> tuple[int, int] | None:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns

    seen = [identity()]

    def rewritten() -> bool:
        current = identity()
        if current != seen[-1]:
            seen.append(current)
        return len(seen) > rounds

    wait_until(rewritten, SETTLE_TIMEOUT, f"{rounds} rewrites of {path.name}", interval=0.02)


def ten_records(bootstrap: str, topic: str) -> None:
    outs = [Out(None, f"r{i}".encode(), now_ms(), partition=0) for i in range(10)]
    produce_confluent(bootstrap, topic, outs, {"linger.ms": 0, "batch.num.messages": 1})


def test_default_policy_leaves_fsync_to_the_page_cache(fresh_broker: BrokerProcess) -> None:
    """The records are acknowledged, but no flush policy fsyncs them: the checkpoints
    written after they landed (while the flush scheduler runs every 100 ms) keep the
    recovery point of the fresh log, 0."""
    fresh_broker.overrides.update({**CHECKPOINT_EVERY_200_MS, **FLUSH_SCHEDULER_EVERY_100_MS})
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("no-flush"))
    ten_records(fresh_broker.bootstrap, topic)
    checkpoint_rounds_after(fresh_broker.data_dir, rounds=4)
    assert recovery_point(fresh_broker.data_dir, topic) == 0


def test_flush_messages_fsyncs_every_message(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update({**CHECKPOINT_EVERY_200_MS, "log.flush.interval.messages": "1"})
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("flush-each"))
    ten_records(fresh_broker.bootstrap, topic)
    wait_until(lambda: recovery_point(fresh_broker.data_dir, topic) == 10, SETTLE_TIMEOUT,
               "a recovery point of 10 checkpointed")


def test_topic_flush_ms_fsyncs_on_a_timer(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update({**CHECKPOINT_EVERY_200_MS, **FLUSH_SCHEDULER_EVERY_100_MS})
    fresh_broker.start()
    topic = create_topic(fresh_broker.bootstrap, unique("flush-ms"), config={"flush.ms": "200"})
    ten_records(fresh_broker.bootstrap, topic)
    wait_until(lambda: recovery_point(fresh_broker.data_dir, topic) == 10, SETTLE_TIMEOUT,
               "a recovery point of 10 checkpointed")
