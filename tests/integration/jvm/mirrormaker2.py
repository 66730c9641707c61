"""Kafka's own MirrorMaker 2 for the tests: its dedicated-mode driver
(`org.apache.kafka.connect.mirror.MirrorMaker`, what bin/connect-mirror-maker.sh runs) as a
child process on an MM2 properties file, and what MM2's client code reads of a pair of
clusters (`odradek.jvm.mirror.Mm2View`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import jvm_toolchain

MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"


class MirrorMaker2:
    """MM2 in dedicated mode: `start`, `stop` (SIGTERM: its shutdown hook stops the
    connectors, which commit their offsets), `kill` (-9)."""

    def __init__(self, config_path: Path, log_path: Path) -> None:
        self.config_path = config_path
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorMaker2:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        command = jvm_toolchain.java_command(
            MIRROR_MAKER, str(self.config_path),
            jvm_options=["-Xmx512m", "-Dodradek.log.level=INFO"])
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        log.close()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 120.0) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass(frozen=True)
class Mm2View:
    """What MM2's code sees of the flow `source` -> `target` (Mm2View.java)."""
    remote_topics: list[str]
    remote_topics_of_source: list[str]
    heartbeat_topics: list[str]
    checkpoint_topics: list[str]
    upstream_clusters: list[str]
    replication_hops: int
    translated: dict[str, dict[tuple[str, int], int]]
    """RemoteClusterUtils.translateOffsets: group -> (target topic, partition) -> offset."""
    heartbeats: list[dict[str, Any]]
    checkpoints: list[dict[str, Any]]
    offset_syncs: list[dict[str, Any]]

    def latest_checkpoints(self, group: str) -> dict[tuple[str, int], tuple[int, int]]:
        """The last checkpoint of each partition of `group`: (upstream, downstream)."""
        return {(c["topic"], c["partition"]): (c["upstream"], c["downstream"])
                for c in self.checkpoints if c["group"] == group}


def mm2_view(target: str, source: str, source_alias: str, target_alias: str,
             groups: list[str]) -> Mm2View:
    result = jvm_toolchain.run_java("odradek.jvm.mirror.Mm2View", target, source,
                                    source_alias, target_alias, *groups)
    raw = json.loads(result.stdout.strip().splitlines()[-1])
    translated = {group: {_partition(key): offset for key, offset in offsets.items()}
                  for group, offsets in raw.pop("translated").items()}
    return Mm2View(translated=translated, **raw)


def _partition(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)
