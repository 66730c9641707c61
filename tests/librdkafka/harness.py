"""librdkafka's regression tests against a 3-broker Odradek cluster, set up as librdkafka's
own harness (trivup: tests/cluster_testing.py, tests/LibrdkafkaTestApp.py, its
KafkaBrokerApp's server.properties and scenarios/default.json) sets up Kafka, and run one
test at a time by its `test-runner`.

Two configurations, as librdkafka's CI runs them: PLAINTEXT, and SASL_SSL with SCRAM-SHA-512
(the user `myuser`, as tests/sasl_test.py configures it). In both, the tools of `KAFKA_PATH`
reach the brokers over their PLAINTEXT listener (`BROKERS`), as under trivup."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from odradek.security.authorizer import STANDARD_AUTHORIZER
from tests.certificates import Authority
from tests.integration.cluster import running_cluster
from tests.librdkafka.kafka_path import make_kafka_path

BROKER_COUNT = 3
PLAINTEXT = "PLAINTEXT"
SASL_SSL = "SASL_SSL"
CONFIGURATIONS = (PLAINTEXT, SASL_SSL)
SCRAM_USER, SCRAM_PASSWORD = "myuser", "mypassword"
KAFKA_VERSION = "4.2.0"
"""`TEST_KAFKA_VERSION`: the Kafka release whose protocol Odradek serves; the tests gate
features on it (share consumers from 4.2.0)."""

HARNESS_BROKER_CONFIG = {
    # scenarios/default.json
    "auto.create.topics.enable": "true",
    "num.partitions": "4",
    "default.replication.factor": "3",
    # trivup's server.properties template
    "offsets.topic.replication.factor": "3",
    "delete.topic.enable": "true",
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": "User:admin",
    "allow.everyone.if.no.acl.found": "true",
    # cluster_testing.py, for brokers of Kafka >= 2.4 (racks RACK<id> by --racks) and >= 4.2
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "group.share.min.record.lock.duration.ms": "1000",
}
TEST_TIMEOUT_MULTIPLIER = "2"
"""LibrdkafkaTestApp's test.conf has this and `test.sql.command=sqlite3 rdktests` (here
one database per run, so that runs side by side do not lock each other out)."""

_SUMMARY = re.compile(r"^\|\s*(\S+)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING|DNS)\s*\|"
                      r"\s*[\d.]+s\s*\|\s*(?P<reason>.*)$")
_ENDED = re.compile(r"=+ Test (\S+) (PASSED) =+")
_FAILED = re.compile(r'^### Test "(\w+)[ "].* failed at ([^ ]+)')
"""A test's own pass line and failure banner (followed by the assertion), for the tests
that ended before a killed or aborted run's summary."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TEST_ENTRY = re.compile(r"\s*(\w+)\s*,\s*([^,)]*)")
"""An entry of test.c's table after its `_TEST(`: the name and the flags."""
_SCENARIO = re.compile(r'\.scenario\s*=\s*"([^"]*)"')
EXCLUDED_FLAGS = ("TEST_F_LOCAL", "TEST_F_MANUAL", "TEST_F_KNOWN_ISSUE", "TEST_F_SOCKEM")
"""Tests the suite leaves out, as CI's `./run-test.sh -K -E` does (known issues, sockem),
plus the local ones (`-L`): those run against librdkafka's mock cluster, not a broker."""


@dataclass(frozen=True)
class Outcome:
    name: str
    state: str
    """PASSED, FAILED, SKIPPED, or TIMEOUT when the per-test timeout killed the runner."""
    reason: str
    seconds: float
    output: str = field(repr=False, default="")


@dataclass
class Environment:
    """What one configuration's test runs need: the runner's environment and test.conf."""
    env: dict[str, str]
    test_conf: Path


def broker_tests(source: Path) -> list[str]:
    """The test-runner's tests that need a broker and belong to the default scenario (the
    harness's; others, such as `noautocreate`, need a differently configured cluster), in
    the runner's order, from tests/test.c's table."""
    table = (source / "tests" / "test.c").read_text()
    table = table[table.index("struct test tests[] = {"):]
    names = []
    for entry in table.split("_TEST(")[1:]:
        match = _TEST_ENTRY.match(entry)
        scenario = _SCENARIO.search(entry)
        if match and match.group(1) != "0000_unittests" \
                and (not scenario or "default" in scenario.group(1)) \
                and not any(f in match.group(2) for f in EXCLUDED_FLAGS):
            names.append(match.group(1))
    return names


@contextmanager
def odradek_for_librdkafka(root: Path, configuration: str) -> Iterator[Environment]:
    """A 3-broker Odradek cluster with the harness's broker config, and the tests' environment
    for `configuration` (PLAINTEXT or SASL_SSL)."""
    overrides = dict(HARNESS_BROKER_CONFIG)
    listeners, scram = [PLAINTEXT], []
    client = {"security.protocol": configuration}
    extra_env: dict[str, str] = {}
    if configuration == SASL_SSL:
        ca = Authority()
        truststore = ca.write(root / "ca.pem")
        broker_store = ca.issue("broker").write(root / "broker.pem")
        client_cert = ca.issue("librdkafka")
        (root / "client-cert.pem").write_text(client_cert.certificate_pem)
        (root / "client-key.pem").write_text(client_cert.key_pem)
        listeners.append(SASL_SSL)
        overrides |= {"listener.security.protocol.map":
                      "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
                      "inter.broker.listener.name": PLAINTEXT,
                      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                      "ssl.keystore.type": "PEM", "ssl.keystore.location": str(broker_store),
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore)}
        scram = ["SCRAM-SHA-512=[name=admin,password=admin,iterations=4096]",
                 f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD},"
                 "iterations=4096]"]
        client |= {"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": SCRAM_USER,
                   "sasl.password": SCRAM_PASSWORD, "ssl.ca.location": str(truststore),
                   "ssl.certificate.location": str(root / "client-cert.pem"),
                   "ssl.key.location": str(root / "client-key.pem")}
        extra_env = {"SSL_ca_pem": str(truststore), "SSL_all_cas_pem": str(truststore),
                     "SSL_pub_pem": str(root / "client-cert.pem"),
                     "SSL_priv_pem": str(root / "client-key.pem"),
                     "SSL_client_auth": "none"}
    kafka_path = make_kafka_path(root / "kafka")
    with running_cluster(root / "cluster", 1, BROKER_COUNT, overrides,
                         racks=[f"RACK{i}" for i in range(1, BROKER_COUNT + 1)],
                         listeners=listeners, add_scram=scram) as cluster:
        brokers = [n for n in cluster.layout["nodes"] if n["role"] == "broker"]
        address = {n["id"]: f"127.0.0.1:{n['listeners'][configuration]}" for n in brokers}
        client["bootstrap.servers"] = ",".join(address.values())
        test_conf = root / "test.conf"
        lines = {"test.sql.command": f"sqlite3 {root / 'rdktests'}",
                 "test.timeout.multiplier": TEST_TIMEOUT_MULTIPLIER, **client}
        test_conf.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        env = {"RDKAFKA_TEST_CONF": str(test_conf), "TEST_KAFKA_VERSION": KAFKA_VERSION,
               "TEST_SCENARIO": "default", "KAFKA_PATH": str(kafka_path),
               "BROKERS": cluster.bootstrap, **extra_env,
               **{f"BROKER_ADDRESS_{i}": a for i, a in address.items()}}
        yield Environment(env, test_conf)


def by_number(names: list[str]) -> dict[str, list[str]]:
    """The tests grouped by their number: the runner selects tests by number (`TESTS`), so
    the tests sharing one (0045_*) run together."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name[:4], []).append(name)
    return groups


def run_tests(source: Path, names: list[str], environment: Environment,
              timeout: float) -> list[Outcome]:
    """Runs the tests of one number by `test-runner` in its own process group, killed after
    `timeout` per test; a test that had not ended by then is a TIMEOUT."""
    env = {**os.environ, **environment.env, "TESTS": names[0][:4],
           "LD_LIBRARY_PATH": f"{source / 'src'}:{source / 'src-cpp'}"}
    started = time.monotonic()
    process = subprocess.Popen(["./test-runner", "-p1", "-L", "-K", "-E"], cwd=source / "tests",
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout * len(names))
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        killed = True
    seconds = time.monotonic() - started
    ended: dict[str, tuple[str, str]] = {}
    lines = _ANSI.sub("", output).splitlines()
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        if match := _SUMMARY.match(line.strip()):
            ended[match.group(1)] = (match.group(2), match.group("reason").strip())
        elif match := _ENDED.search(line):
            ended[match.group(1)] = (match.group(2), "")
        elif (match := _FAILED.match(line)) and match.group(1) not in ended:
            ended[match.group(1)] = ("FAILED", f"{match.group(2)} {following.strip()}")
    fallback = (("TIMEOUT", f"killed after {timeout * len(names):.0f} s") if killed
                else ("FAILED", f"no summary line (exit {process.returncode})"))
    return [Outcome(name, *ended.get(name, fallback), seconds, output) for name in names]
