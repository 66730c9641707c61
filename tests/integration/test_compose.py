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
import shlex
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

from odradek.cli.main import main as odradek
from tests.integration.broker_process import ODRADEK
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
    NETWORK,
    NODES,
    PROMETHEUS,
    PUBLISHED,
    WEST,
    ComposeStack,
    docker,
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
    # a broker may answer for the new topic's partitions before it learns their leaders
    wait_until(lambda: sum(len(read_confluent(WEST, target, [p])) for p in range(3)) >= count,
               120, f"{count} records in {target}", ignoring=KafkaException)
    return topic, sent


def test_the_mirror_copies_east_to_west(stack: ComposeStack) -> None:
    topic, sent = mirror_records(60)
    copied = read_confluent(WEST, f"east.{topic}", [0, 1, 2])
    assert sorted((r.partition, r.key, r.value) for r in copied) == sorted(
        (r.partition, r.key, r.value) for r in sent)


SPARK = ("--profile", "spark")
SPARK_CLUSTER = ("spark-master", "spark-worker-1", "spark-worker-2")
SPARK_IMAGE = "odradek-spark:local"
AUDITED = "complete; summary in /var/lib/odradek-audit/summary.json"


@pytest.fixture(scope="module")
def spark_image(stack: ComposeStack) -> None:
    """The spark profile's image built (the stack's `down` removes its cluster)."""
    started = time.monotonic()
    stack.run_compose(*SPARK, "build", "spark-audit")
    print(f"\nspark-audit: image built in {time.monotonic() - started:.1f}s")


def audit_args(topic: str, source: str, target: str, output: str) -> list[str]:
    """compose.yaml's audit of `topic` (one-minute buckets of the last hour), east -> west."""
    return ["--source-bootstrap", source, "--target-bootstrap", target, "--source-alias",
            "east", "--topics", re.escape(topic), "--window", "1h", "--bucket", "1m",
            "--output", output]


def summary_data(directory: Path) -> dict[str, Any]:
    """What an audit found (its buckets and totals), without the settings of its run."""
    summary = json.loads((directory / "summary.json").read_text())
    return {"complete": summary["complete"], "buckets": summary["buckets"],
            "totals": summary["totals"]}


def task_hosts(directory: Path) -> dict[str, int]:
    """Per host, the tasks Spark's event log in `directory` says ended there."""
    hosts: dict[str, int] = {}
    for log in directory.glob("eventlog_v2_*/events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                host = event["Task Info"]["Host"]
                hosts[host] = hosts.get(host, 0) + 1
    return hosts


@pytest.mark.spark_cluster
def test_the_spark_profile_audits_the_mirror_on_two_workers(
        stack: ComposeStack, spark_image: None, tmp_path: Path) -> None:
    """`--profile spark run --rm spark-audit`: compose.yaml's audit job, submitted in client
    mode through the image's `driver` entrypoint to the standalone master, runs its tasks in
    both workers, writes its Parquet table from them into the shared ODRADEK_AUDIT_DIR, and
    exits 0 with a complete summary.json, the same as the audit in local[2] on the host.
    The records are 10 minutes old: inside the job's 1 h window, outside its 5 min grace, so
    a bucket that is not complete fails the run."""
    topic, sent = mirror_records(40, age_ms=AUDITED_AGE_MS)
    cluster = tmp_path / "cluster"
    cluster.mkdir(mode=0o777)
    cluster.chmod(0o777)  # the job runs as uid 185
    started = time.monotonic()
    run = subprocess.run(stack.command(*SPARK, "run", "--rm", "spark-audit"), cwd=COMPOSE_DIR,
                         env={**os.environ, "ODRADEK_AUDIT_TOPICS": re.escape(topic),
                              "ODRADEK_AUDIT_DIR": str(cluster)},
                         capture_output=True, text=True, timeout=600, check=False)
    print(f"\nspark-audit on the standalone cluster: {time.monotonic() - started:.1f}s")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-12000:]
    assert AUDITED in run.stdout
    hosts = task_hosts(cluster)
    assert set(hosts) == {"spark-worker-1", "spark-worker-2"}, hosts
    assert list((cluster / "buckets").glob("part-*.parquet")), "no Parquet table"
    found = summary_data(cluster)
    assert found["complete"] is True
    assert {(b["topic"], b["target_topic"], b["status"]) for b in found["buckets"]} == {
        (topic, f"east.{topic}", "complete")}
    assert found["totals"]["source_records"] == found["totals"]["target_records"] == len(sent)

    local = tmp_path / "local"
    alone = subprocess.run([*ODRADEK, "audit", "--master", "local[2]",
                            *audit_args(topic, EAST, WEST, str(local))],
                           env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                           capture_output=True, text=True, timeout=600, check=False)
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-6000:]
    assert summary_data(local) == found


@pytest.mark.spark_cluster
def test_the_spark_image_runs_the_kubernetes_driver_and_executor_entrypoints(
        stack: ComposeStack, spark_image: None, tmp_path: Path) -> None:
    """The chart's container contract without a Kubernetes API server: the image's `driver`
    entrypoint submits the audit to the standalone master asking for executors larger than
    any worker offers, so no worker starts one; the image's `executor` entrypoint, given the
    SPARK_* variables Spark-on-Kubernetes sets on an executor pod, registers with that
    driver (KubernetesExecutorBackend), runs every task, and the audit completes."""
    topic, sent = mirror_records(20, age_ms=AUDITED_AGE_MS)
    tmp_path.chmod(0o777)
    stack.run_compose(*SPARK, "up", "--detach", "--wait", *SPARK_CLUSTER)
    driver, executor = unique("spark-driver"), unique("spark-executor")
    network = ["--network", NETWORK, "--volume", f"{tmp_path}:/var/lib/odradek-audit"]
    docker("run", "--detach", "--name", driver, "--hostname", driver, *network,
           "--env", f"SPARK_DRIVER_BIND_ADDRESS={driver}", "--env", f"SPARK_LOCAL_IP={driver}",
           "--env", "SPARK_DRIVER_MEMORY=512m", SPARK_IMAGE, "driver",
           "--master", "spark://spark-master:7077", "--conf", "spark.driver.port=7078",
           "--conf", "spark.executor.memory=4g",  # more than a worker's 1g
           "--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.compress=false",
           "--conf", "spark.eventLog.dir=/var/lib/odradek-audit",
           "/opt/odradek/jobs/mirror_audit.py",
           *audit_args(topic, EAST_INTERNAL, "west:9092", "/var/lib/odradek-audit"))
    try:
        app = wait_until_app_id(driver)
        docker("run", "--detach", "--name", executor, "--hostname", executor, *network,
               *(arg for name, value in {
                   "SPARK_DRIVER_URL": f"spark://CoarseGrainedScheduler@{driver}:7078",
                   "SPARK_EXECUTOR_ID": "1", "SPARK_APPLICATION_ID": app,
                   "SPARK_EXECUTOR_CORES": "1", "SPARK_EXECUTOR_MEMORY": "512m",
                   "SPARK_EXECUTOR_POD_IP": executor, "SPARK_EXECUTOR_POD_NAME": executor,
                   "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_LOCAL_IP": executor,
                   **{f"SPARK_JAVA_OPT_{i}": option for i, option in enumerate(
                       [*executor_java_options(driver, app), "-Dspark.driver.port=7078"])},
               }.items() for arg in ("--env", f"{name}={value}")),
               SPARK_IMAGE, "executor")
        exit_code = docker("wait", driver, timeout=600).stdout.strip()
        logs = docker("logs", driver)
        assert exit_code == "0", logs.stdout[-3000:] + logs.stderr[-12000:]
        assert AUDITED in logs.stdout
    finally:
        docker("rm", "--force", driver, executor, check=False)
    assert task_hosts(tmp_path).keys() == {executor}
    found = summary_data(tmp_path)
    assert found["complete"] is True
    assert found["totals"]["source_records"] == found["totals"]["target_records"] == len(sent)


def wait_until_app_id(driver: str) -> str:
    """The application id the standalone master gave the driver in container `driver`."""
    found: list[str] = []

    def connected() -> bool:
        logs = docker("logs", driver)
        found[:] = re.findall(r"Connected to Spark cluster with app ID (\S+)",
                              logs.stdout + logs.stderr)
        return bool(found)

    wait_until(connected, 180, f"{driver} connected to the master", interval=1)
    return found[0]


def executor_java_options(driver: str, app: str) -> list[str]:
    """What Spark-on-Kubernetes passes an executor pod as SPARK_JAVA_OPT_n before the
    driver's port: the driver's spark.executor.extraJavaOptions, which hold the Java module
    options Spark needs on Java 17 (read from the driver's REST API)."""
    script = ("import json, urllib.request; print(json.dumps(dict(json.load(urllib.request."
              f"urlopen('http://{driver}:4040/api/v1/applications/{app}/environment'))"
              "['sparkProperties']).get('spark.executor.extraJavaOptions', '')))")
    found: list[str] = []

    def answered() -> bool:
        found[:] = shlex.split(json.loads(docker("exec", driver, "python", "-c", script).stdout))
        return True

    # the driver's UI knows its application a moment after the master has named it
    wait_until(answered, 60, f"{driver}'s environment", ignoring=AssertionError, interval=1)
    return found
