"""Share groups (KIP-932) driven by Kafka's own KafkaShareConsumer: one consumer that accepts,
releases and rejects on `odradek dev`, and polls bounded by share.acquire.mode; then four
consumers of one group on a 3-broker cluster while one of them is killed with kill -9 and a
broker is killed too. Every record is accepted exactly once, and none is delivered more
times than the delivery count limit."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import Cluster, running_cluster
from tests.jvm_toolchain import java_command, run_java
from tests.waiting import wait_until

TIMEOUT = 180.0
DELIVERY_COUNT_LIMIT = 5
"""group.share.delivery.count.limit's default."""
OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("share")
    process = BrokerProcess(root / "data", root / "broker.log")
    process.start()
    yield process
    process.stop()


@pytest.mark.parametrize("config", [(), ("fetch.min.bytes=2147483647",)],
                         ids=["defaults", "min-bytes-never-reached"])
def test_kafka_share_consumer_accepts_releases_and_rejects(
        broker: BrokerProcess, config: tuple[str, ...]) -> None:
    """Also with a fetch.min.bytes the records never reach: what a ShareFetch acquired goes
    out, rather than stay locked unseen."""
    topic = create_topic(broker.bootstrap, unique("share"))
    result = run_java("odradek.jvm.share.ShareChecks", broker.bootstrap, topic, unique("g"),
                      *config, timeout=TIMEOUT)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    first = [(value, count) for value, count in report["deliveries"]]
    assert first[:10] == [(f"r{i}", 1) for i in range(10)], first
    assert first[10:] == [("r1", 2)], "the released record comes again, the rejected one not"
    assert "commit_error" not in report
    assert report["second_consumer"] == [], "every record was settled"


@pytest.mark.parametrize("mode", ["record_limit", "batch_optimized"])
def test_share_acquire_mode_record_limit_bounds_a_poll_by_max_poll_records(
        broker: BrokerProcess, mode: str) -> None:
    """The 50 records are one batch. With share.acquire.mode=record_limit the broker acquires
    part of it, and no poll returns more than max.poll.records; batch_optimized (the
    default) acquires the batch whole. Either way each record is delivered once."""
    topic = create_topic(broker.bootstrap, unique("polls"))
    result = run_java("odradek.jvm.share.SharePolls", broker.bootstrap, topic, unique("g"),
                      "50", f"share.acquire.mode={mode}", "max.poll.records=7",
                      timeout=TIMEOUT)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(report["values"]) == sorted(f"v{i}" for i in range(50)), report
    if mode == "record_limit":
        assert max(report["polls"]) <= 7, report["polls"]
    else:
        assert max(report["polls"]) > 7, report["polls"]


class Worker:
    """A ShareWorker process: one member accepting what it is given (ShareWorker.java)."""

    def __init__(self, root: Path, name: str, bootstrap: str, topic: str, group: str) -> None:
        self.output = root / f"{name}.jsonl"
        self.killed = False
        with open(self.output, "wb") as out, open(root / f"{name}.err", "wb") as err:
            self.process = subprocess.Popen(
                java_command("odradek.jvm.share.ShareWorker", bootstrap, topic, group),
                stdin=subprocess.PIPE, stdout=out, stderr=err)

    def lines(self) -> list[dict[str, Any]]:
        text = self.output.read_text()
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def kill(self) -> None:
        self.killed = True
        self.process.kill()
        self.process.wait()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Outcomes:
    committed: Counter[str]
    """Values whose acceptance the broker confirmed, counted."""
    uncertain: set[str]
    """Values whose commit failed or went unanswered."""
    unreported: set[str]
    """Values of a killed worker's last poll it reported nothing of: it may have been
    killed between its commit and its report. However many records that poll brought,
    these are not the broker's doing."""
    counts: list[int]
    """Every delivery count seen."""


def outcomes(workers: list[Worker]) -> Outcomes:
    result = Outcomes(Counter(), set(), set(), [])
    for worker in workers:
        poll: set[str] = set()
        reported: set[str] = set()
        for line in worker.lines():
            if "delivered" in line:
                if reported:  # a poll's deliveries come before its reports
                    poll, reported = set(), set()
                result.counts.append(line["count"])
                poll.add(line["delivered"])
            else:
                result.committed.update(line.get("committed", []))
                result.uncertain.update(line.get("uncertain", []))
                reported.update(line.get("committed", []), line.get("uncertain", []))
        if worker.killed:
            result.unreported |= poll - reported
    return result


def share_lags(bootstrap: str, group: str, topic: str) -> list[int | str]:
    """The LAG column of `odradek groups describe --type share` (DescribeShareGroupOffsets),
    by partition: 0 once every record is acknowledged or archived."""
    shown = subprocess.run([*ODRADEK, "groups", "describe", "--type", "share", "--group", group,
                            "--bootstrap-server", bootstrap],
                           capture_output=True, text=True, timeout=60)
    rows = sorted(line.split() for line in shown.stdout.splitlines()
                  if line.split()[:2] == [group, topic])
    return [int(row[4]) if row[4].isdigit() else row[4] for row in rows]


def produce_slowly(bootstrap: str, topic: str, values: list[str], unflushed: list[int]) -> None:
    """Produces `values` one by one, then appends how many the flush left undelivered (the
    test's thread asserts it)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % 3)
        producer.poll(0)
        time.sleep(0.01)
    unflushed.append(producer.flush(TIMEOUT))


def test_four_share_consumers_survive_a_killed_member_and_a_killed_broker(
        tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster", 1, 3, OVERRIDES) as cluster:
        run(cluster, tmp_path)


def run(cluster: Cluster, tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap
    client = AdminClient({"bootstrap.servers": bootstrap})
    topic = unique("queue")
    client.create_topics([NewTopic(topic, 3, 3)])[topic].result(TIMEOUT)
    group = unique("workers")
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([resource])[resource].result(TIMEOUT)
    values = [f"v{i}" for i in range(1500)]
    unflushed: list[int] = []
    producer = threading.Thread(target=produce_slowly, args=(bootstrap, topic, values, unflushed))
    producer.start()
    workers = [Worker(tmp_path, f"worker-{i}", bootstrap, topic, group) for i in range(4)]
    try:
        wait_until(lambda: sum(outcomes(workers).committed.values()) >= 200, TIMEOUT,
                   "the workers accept records")
        # the member with the most deliveries so far, so that it dies holding records
        max(workers, key=lambda w: sum("delivered" in line for line in w.lines())).kill()
        wait_until(lambda: sum(outcomes(workers).committed.values()) >= 500, TIMEOUT,
                   "the others accept records after a member's kill -9")
        cluster.stop("broker-2", kill=True)
        producer.join(TIMEOUT)
        assert unflushed == [0], "every record was produced (acks=all, with a broker down)"

        def settled() -> bool:
            seen = outcomes(workers)
            return set(values) <= set(seen.committed) | seen.uncertain | seen.unreported

        def never_accepted() -> str:
            return f"{len(set(values) - set(outcomes(workers).committed))} never accepted"

        wait_until(settled, TIMEOUT, never_accepted)
    finally:
        for worker in workers:
            worker.close()
    wait_until(lambda: share_lags(bootstrap, group, topic) == [0, 0, 0], TIMEOUT,
               lambda: f"every record settled: lags {share_lags(bootstrap, group, topic)}")
    seen = outcomes(workers)
    twice = {value: n for value, n in seen.committed.items() if n > 1}
    assert twice == {}, "a record accepted more than once"
    assert set(seen.committed) <= set(values)
    assert max(seen.counts) <= DELIVERY_COUNT_LIMIT
    failed = seen.uncertain - set(seen.committed)
    assert len(failed) <= len(values) // 10, failed
