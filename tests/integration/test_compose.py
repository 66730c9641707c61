"""deploy/compose/compose.yaml on a real Docker engine: the two clusters come up healthy,
clients on the host and inside the compose network both reach east, acknowledged writes
survive a `docker kill` of a broker, a restarted controller rejoins, Prometheus scrapes
every process, `docker stop` of a broker is a controlled shutdown, the mirror copies
east to west, and the `spark` profile's audit finds the mirrored topic complete. One stack
serves the module; each test leaves it healthy."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from odradek.cli.main import main as odradek
from tests.integration.clients import (
    Out,
    Rec,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.cluster import TIMEOUT, admin, partitions
from tests.integration.compose_stack import (
    COMPOSE_DIR,
    EAST,
    EAST_INTERNAL,
    NODES,
    PROMETHEUS,
    PUBLISHED,
    WEST,
    ComposeStack,
    running_stack,
)
from tests.integration.test_replication_faults import (
    PARTITIONS,
    TOPIC,
    Ledger,
    produce_until,
    read_back,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.containers, pytest.mark.timeout(900)]
"""The first test waits for the base images and the image builds on a fresh machine."""

CONTROLLER_IDS = {"controller-1": 1001, "controller-2": 1002, "controller-3": 1003}
KILL_AFTER_ACKS = 300
ACKS_AFTER_KILL = 300
AUDITED_AGE_MS = 10 * 60_000


def create_on_east(topic: NewTopic) -> None:
    client = admin(EAST)
    client.create_topics([topic])[topic.topic].result(TIMEOUT)


@pytest.fixture(scope="module")
def stack() -> Iterator[ComposeStack]:
    with running_stack(["mirror"]) as running:
        print(f"\ncompose: images built in {running.build_s:.1f}s, "
              f"up -d --wait returned after {running.up_s:.1f}s")
        yield running


def test_the_stack_comes_up_healthy_on_its_published_ports(stack: ComposeStack) -> None:
    assert {service: stack.health(service) for service in NODES} == dict.fromkeys(
        NODES, "healthy")
    assert stack.health("prometheus") == "running"
    for service, port in PUBLISHED.items():
        bindings = stack.inspect(service, "{{json .NetworkSettings.Ports}}")
        assert f'"HostIp":"127.0.0.1","HostPort":"{port}"' in bindings, bindings
    assert set(admin(EAST).list_topics(timeout=TIMEOUT).brokers) == {1, 2, 3}
    assert set(admin(WEST).list_topics(timeout=TIMEOUT).brokers) == {1}


def test_host_client_produces_and_network_client_consumes(stack: ComposeStack) -> None:
    """The host reaches east's brokers through their EXTERNAL listeners (localhost:1909x),
    a container on the compose network through their INTERNAL ones (broker-N:9092): each is
    told the endpoints of the listener it came in on."""
    topic = unique("through-listeners")
    create_on_east(NewTopic(topic, 3, 3))
    values = [f"record-{i}".encode() for i in range(30)]
    outs = [Out(None, value, now_ms(), (), i % 3) for i, value in enumerate(values)]
    produce_confluent(EAST, topic, outs, {"acks": "all"})
    result = stack.odradek("consume", "--bootstrap-server", EAST_INTERNAL, "--topic", topic,
                           "--from-beginning", "--max-messages", str(len(values)),
                           "--timeout-ms", "60000")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(v.decode() for v in values)


def test_killed_broker_loses_no_acknowledged_write(stack: ComposeStack) -> None:
    """`docker kill` (SIGKILL) of a broker while a producer writes with acks=all to a
    replication-factor-3 topic with min.insync.replicas=2: every acknowledged record is read
    back, at the offset its acknowledgement named."""
    create_on_east(NewTopic(TOPIC, PARTITIONS, 3, config={
        "min.insync.replicas": "2"}))
    ledger = Ledger()
    stop = threading.Event()
    victim = "broker-2"
    with ThreadPoolExecutor(1) as pool:
        producing = pool.submit(produce_until, EAST, ledger, stop)
        try:
            wait_until(lambda: len(ledger.acked) >= KILL_AFTER_ACKS, TIMEOUT,
                       lambda: f"{len(ledger.acked)} acknowledged before the kill")
            stack.kill(victim)
            acked_at_kill = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= acked_at_kill + ACKS_AFTER_KILL, 60,
                       lambda: f"{len(ledger.acked) - acked_at_kill} acknowledged after it")
        finally:
            stop.set()
        producing.result(60)
    stack.start(victim)
    stack.wait_healthy(victim)
    lost = ledger.lost(read_back(EAST))
    assert not lost, (f"{len(lost)} of {len(ledger.acked)} acknowledged records lost, e.g. "
                      f"{[(s, ledger.acked[s]) for s in lost[:5]]}")


def quorum(report: str) -> Any:
    """`odradek quorum describe --REPORT --json` against east, from the host."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert odradek(["quorum", "--bootstrap-server", EAST, "--timeout", "5",
                        "describe", f"--{report}", "--json"]) == 0
    return json.loads(out.getvalue())


def test_restarted_controller_rejoins(stack: ComposeStack) -> None:
    """The active controller's container is killed: another takes over; started again, the
    old one is healthy (a voter that knows the leader) and catches up with the log."""
    leader = quorum("status")["LeaderId"]
    victim = next(name for name, node in CONTROLLER_IDS.items() if node == leader)
    stack.kill(victim)
    wait_until(lambda: quorum("status")["LeaderId"] not in (leader, -1), TIMEOUT,
               "another controller leads", ignoring=(AssertionError,))
    stack.start(victim)
    stack.wait_healthy(victim)
    topic = unique("after-rejoin")
    create_on_east(NewTopic(topic, 1, 3))

    def caught_up() -> bool:
        rows = {row["NodeId"]: row for row in quorum("replication")}
        return rows[leader]["Status"] == "Follower" and rows[leader]["Lag"] == 0

    wait_until(caught_up, TIMEOUT, lambda: f"replication: {quorum('replication')}")


def prometheus_targets() -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{PROMETHEUS}/api/v1/targets", timeout=10) as response:
        return json.loads(response.read())["data"]["activeTargets"]  # type: ignore[no-any-return]


def test_prometheus_scrapes_every_process(stack: ComposeStack) -> None:
    running = set(NODES) | {"mirror"}

    def every_process_up() -> bool:
        up = {t["labels"]["instance"] for t in prometheus_targets() if t["health"] == "up"}
        return running <= up

    wait_until(every_process_up, 90, lambda: json.dumps(
        [(t["labels"]["instance"], t["health"], t["lastError"]) for t in prometheus_targets()]),
        ignoring=OSError, interval=1)


def test_sigterm_is_a_controlled_shutdown(stack: ComposeStack) -> None:
    """`docker stop` sends SIGTERM: the broker asks the controller to move its leaderships
    away and exits 0 only after that, well before its session would have expired; so at
    exit no partition is led by it any more."""
    victim, node = "broker-3", 3
    topic = unique("controlled")
    assignment = [[3, 1, 2], [3, 2, 1], [3, 1, 2]]
    create_on_east(NewTopic(topic, len(assignment), replica_assignment=assignment))
    wait_until(lambda: all(p.leader == node and len(p.isrs) == 3
                           for p in partitions(EAST, topic).values()), TIMEOUT,
               "broker 3 leads every partition with a full ISR")
    stack.stop(victim)
    try:
        leaders = {p.id: p.leader for p in partitions("localhost:19092", topic).values()}
        log = stack.service_logs(victim)
        assert stack.inspect(victim, "{{.State.ExitCode}}") == "0", log[-3000:]
        assert node not in leaders.values(), leaders
        assert "controlled shutdown not confirmed" not in log, log[-3000:]
        assert log.index("broker 3 is now fenced") < log.index("stopped cleanly")
    finally:  # the next tests need the whole cluster, whatever happened here
        stack.start(victim)
        stack.wait_healthy(victim)


def mirror_records(count: int, age_ms: int = 0) -> tuple[str, list[Rec]]:
    """`count` records timestamped `age_ms` ago produced to a new topic on east, back once
    west's mirrored copy of it holds as many: the topic and the records sent."""
    topic = unique("mirrored")
    create_on_east(NewTopic(topic, 3, 3))
    timestamp = now_ms() - age_ms
    sent = produce_confluent(EAST, topic, [Out(f"k{i}".encode(), f"v{i}".encode(), timestamp,
                                               (), i % 3) for i in range(count)], {"acks": "all"})
    target = f"east.{topic}"
    wait_until(lambda: target in admin(WEST).list_topics(timeout=TIMEOUT).topics, 120,
               f"{target} on west", ignoring=Exception)
    wait_until(lambda: sum(len(read_confluent(WEST, target, [p])) for p in range(3)) >= count,
               120, f"{count} records in {target}")
    return topic, sent


def test_the_mirror_copies_east_to_west(stack: ComposeStack) -> None:
    topic, sent = mirror_records(60)
    copied = read_confluent(WEST, f"east.{topic}", [0, 1, 2])
    assert sorted((r.partition, r.key, r.value) for r in copied) == sorted(
        (r.partition, r.key, r.value) for r in sent)


def test_the_spark_profile_audits_the_mirror(stack: ComposeStack, tmp_path: Path) -> None:
    """`--profile spark run --rm spark-audit`: the audit job of compose.yaml, in local[*]
    inside its container, counts a mirrored topic on east and on west and exits 0 with a
    complete summary.json (kept in a host directory). ODRADEK_AUDIT_TOPICS narrows it to
    this topic. The records are 10 minutes old: inside the job's 1 h window, outside its
    5 min grace, so a bucket that is not complete fails the run."""
    topic, sent = mirror_records(40, age_ms=AUDITED_AGE_MS)
    spark = ("--profile", "spark")
    started = time.monotonic()
    stack.run_compose(*spark, "build", "spark-audit")
    built = time.monotonic() - started
    started = time.monotonic()
    tmp_path.chmod(0o777)  # the job runs as uid 185
    run = subprocess.run(stack.command(*spark, "run", "--rm", "--volume",
                                       f"{tmp_path}:/var/lib/odradek-audit", "spark-audit"),
                         cwd=COMPOSE_DIR,
                         env={**os.environ, "ODRADEK_AUDIT_TOPICS": re.escape(topic)},
                         capture_output=True, text=True, timeout=600, check=False)
    print(f"\nspark-audit: image built in {built:.1f}s, ran in {time.monotonic() - started:.1f}s")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-12000:]
    assert "complete; summary in /var/lib/odradek-audit/summary.json" in run.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["complete"] is True
    assert {(b["topic"], b["target_topic"], b["status"]) for b in summary["buckets"]} == {
        (topic, f"east.{topic}", "complete")}
    totals = summary["totals"]
    assert totals["source_records"] == totals["target_records"] == len(sent)
    assert totals["in_grace"] == 0
