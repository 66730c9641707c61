"""Starts `odradek mirror` on an MM2 properties file for integration tests: start, stop
(SIGTERM), kill -9, pause (SIGSTOP) and resume, its log and its metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker_process import ODRADEK, free_port
from tests.waiting import wait_until

RECORD_COUNT = "kafka_connect_mirror_mirrorsourceconnector_record_count"
"""MM2's per-partition records copied, by (target) topic and partition: a process has one
sample for each partition it owns."""

FAST = {
    "replication.factor": "1", "heartbeats.topic.replication.factor": "1",
    "checkpoints.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
    "offset.storage.replication.factor": "1", "refresh.topics.interval.seconds": "1",
    "refresh.groups.interval.seconds": "1", "emit.checkpoints.interval.seconds": "1",
    "sync.topic.configs.interval.seconds": "1", "sync.group.offsets.interval.seconds": "1",
    "offset.flush.interval.ms": "200",
}
"""What one-broker test clusters need (MM2's internal topics default to 3 replicas) and
intervals short enough to observe."""


def properties(clusters: dict[str, str], **settings: str) -> dict[str, str]:
    """An MM2 config for `clusters` (alias -> bootstrap) with `settings` (underscores in
    keyword names are not usable for MM2's keys, so pass a dict with ** for those)."""
    config = {"clusters": ", ".join(clusters), **FAST}
    config.update({f"{alias}.bootstrap.servers": bootstrap
                   for alias, bootstrap in clusters.items()})
    config.update(settings)
    return config


def assert_refused_in_one_line(directory: Path, lines: list[str], message: str) -> None:
    """`odradek mirror` and `odradek mirror status` with an east->west config plus `lines`
    both exit 2 with one line on stderr naming `message`, and print nothing else."""
    path = directory / "mm2.properties"
    path.write_text("\n".join(["clusters = east, west", "east.bootstrap.servers = 127.0.0.1:1",
                               "west.bootstrap.servers = 127.0.0.1:2",
                               "east->west.enabled = true", *lines]) + "\n")
    for command in (["mirror"], ["mirror", "status"]):
        result = subprocess.run([*ODRADEK, *command, "--config", str(path)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


STARTED: list[MirrorProcess] = []
"""The mirrors started during the running test, whose logs a failed test's report shows
(tests/integration/conftest.py clears it after each test)."""


class MirrorProcess:
    def __init__(self, directory: Path, config: dict[str, str],
                 args: list[str] | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.metrics_port = free_port()
        self.config_path = directory / "mm2.properties"
        self.config_path.write_text("".join(
            f"{key} = {value}\n"
            for key, value in {"metrics.port": str(self.metrics_port), **config}.items()))
        self.log_path = directory / "mirror.log"
        self.args = args or []
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorProcess:
        """Start (again, after a stop or a kill) and wait for this run's "mirroring" line."""
        started_at = len(self.logs())
        if self not in STARTED:
            STARTED.append(self)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.process = subprocess.Popen(
            [*ODRADEK, "mirror", "--config", str(self.config_path), *self.args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_until(lambda: "mirroring" in self.logs()[started_at:], 60,
                   lambda: f"mirror up\n{self.logs()[-3000:]}", interval=0.05)
        return self

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 120.0) -> int:
        """SIGTERM; the exit code. A stop waits for a client call in flight, which may take
        up to `admin.timeout.ms` (60 s) when a cluster is slow to answer. A process still
        running after `timeout` is killed (it would otherwise outlive the test and reach the
        brokers of later tests on recycled ports) and TimeoutExpired raised."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """kill -9."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets and state, and does nothing."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def health(self) -> tuple[int, str]:
        """GET /health: the status and the reason the mirror is not ready, if any."""
        url = f"http://127.0.0.1:{self.metrics_port}/health"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def samples(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        """The samples of one metric, by their sorted labels."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        return {tuple(sorted(s.labels.items())): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples if s.name == name}

    def owned(self) -> set[tuple[str, int]]:
        """The (target topic, partition) pairs this process copies now."""
        return {(labels["topic"], int(labels["partition"]))
                for labels in map(dict, self.samples(RECORD_COUNT))}

    def copied(self) -> float:
        """Records this run of the process copied (its metrics start at 0 each run)."""
        return sum(self.samples(RECORD_COUNT).values())
