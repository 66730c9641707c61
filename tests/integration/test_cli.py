"""The `odradek` command line: perf tools against a real broker, and the plain-asyncio loop."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import Out, produce_confluent, read_kafka_python, unique


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, *args], capture_output=True, text=True, timeout=120)


def test_perf_produce_then_consume(broker: BrokerProcess) -> None:
    topic = unique("perf")
    produced = run("perf", "produce", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--num-records", "20000", "--record-size", "100",
                   "--producer-props", "acks=all")
    assert produced.returncode == 0, produced.stderr
    assert re.search(r"^20000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), 0 failed",
                     produced.stdout, re.M), produced.stdout
    consumed = run("perf", "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                   "--messages", "20000")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.startswith("20000 records consumed"), consumed.stdout


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
