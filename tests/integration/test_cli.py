"""The `odradek` command line: perf tools against a real broker, and the plain-asyncio loop."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import Out, produce_confluent, read_kafka_python, unique

PRODUCE_SUMMARY = (r"^20000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                   r"latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, "
                   r"\d+ ms 99\.9th\.$")
PRODUCE_PROGRESS = (r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                    r"latency, [\d.]+ ms max latency\.$")
DETAILED_STATS = (r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, 0, [\d.]+, [\d.]+, \d+, [\d.]+, 0, "
                  r"\d+, [\d.]+, [\d.]+$")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, *args], capture_output=True, text=True, timeout=120)


def test_perf_produce_then_consume(broker: BrokerProcess) -> None:
    topic = unique("perf")
    produced = run("perf", "produce", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--num-records", "20000", "--record-size", "100",
                   "--producer-props", "acks=all")
    assert produced.returncode == 0, produced.stderr
    assert re.search(PRODUCE_SUMMARY, produced.stdout, re.M), produced.stdout
    consumed = run("perf", "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--messages", "20000")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.startswith("20000 records consumed"), consumed.stdout


def test_perf_prints_progress_every_reporting_interval(broker: BrokerProcess) -> None:
    topic = unique("perf-progress")
    produced = run("perf", "produce", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--num-records", "20000", "--record-size", "100",
                   "--reporting-interval", "1")
    assert produced.returncode == 0, produced.stderr
    *progress, summary = produced.stdout.splitlines()
    windows = [re.match(PRODUCE_PROGRESS, line) for line in progress]
    assert progress and all(windows), produced.stdout
    assert sum(int(w.group(1)) for w in windows if w) <= 20000
    assert re.match(PRODUCE_SUMMARY, summary), summary

    consumed = run("perf", "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--messages", "20000", "--show-detailed-stats", "--reporting-interval", "1")
    assert consumed.returncode == 0, consumed.stderr
    header, *details, summary = consumed.stdout.splitlines()
    assert header.startswith("time, threadId, data.consumed.in.MB, MB.sec"), header
    assert details and all(re.match(DETAILED_STATS, line) for line in details), details
    assert summary.startswith("20000 records consumed"), summary


def test_perf_fails_in_one_line(broker: BrokerProcess, tmp_path: Path) -> None:
    topic = unique("perf-missing")
    missing = run("perf", "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                  "--messages", "1")
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [f"odradek perf: topic {topic!r} does not exist"]
    config = tmp_path / "perf.properties"
    config.write_text("no.such.property=1\n")
    bad_config = run("perf", "produce", "--bootstrap-server", broker.bootstrap, "--topic",
                     unique("perf-config"), "--num-records", "1", "--command-config",
                     str(config))
    assert bad_config.returncode == 1
    assert "no.such.property" in bad_config.stderr and "Traceback" not in bad_config.stderr
    unreachable = run("perf", "produce", "--bootstrap-server", "127.0.0.1:1", "--topic", "t",
                      "--num-records", "1", "--timeout", "2")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("odradek perf: 1 records failed: ")


def test_perf_consume_fails_when_messages_are_missing(broker: BrokerProcess) -> None:
    topic = unique("perf-short")
    produce_confluent(broker.bootstrap, topic, [Out(None, b"only", 0, partition=0)])
    consumed = run("perf", "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--messages", "5", "--timeout", "2")
    assert consumed.returncode == 1
    assert consumed.stdout.startswith("1 records consumed")


def test_broker_on_the_plain_asyncio_loop(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", tmp_path / "broker.log",
                            extra_args=["--event-loop", "asyncio"])
    process.start()
    try:
        topic = unique("plain-loop")
        outs = [Out(f"k{i}".encode(), f"v{i}".encode(), 1_000 + i, partition=0)
                for i in range(50)]
        acked = produce_confluent(process.bootstrap, topic, outs)
        assert read_kafka_python(process.bootstrap, topic) == acked
        assert "event loop: asyncio" in process.logs()
    finally:
        process.stop()


def test_help_lists_commands() -> None:
    result = subprocess.run([sys.executable, "-m", "odradek.cli", "--help"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "dev" in result.stdout and "perf" in result.stdout
