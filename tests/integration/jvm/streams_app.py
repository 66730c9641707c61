"""`odradek.jvm.streams.ClickStreams`, a Kafka Streams application, run as a JVM process whose
JSON reports (state changes, stores restored, uncaught exceptions) the test reads; and the
read_committed readers of its output topics."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tests.jvm_toolchain import java_command
from tests.waiting import wait_until

HEAP = "-Xmx256m"


class StreamsInstance:
    """One instance of the application: `start`, `freeze` and `thaw` (SIGSTOP, SIGCONT),
    `kill` (SIGKILL), `begin_close` (closes stdin: a clean `KafkaStreams.close`) and
    `exited`."""

    def __init__(self, bootstrap: str, application_id: str, state_dir: Path,
                 log_path: Path) -> None:
        self.bootstrap = bootstrap
        self.application_id = application_id
        self.state_dir = state_dir
        self.log_path = log_path
        self.process: subprocess.Popen[str] | None = None
        self.reports: list[dict[str, Any]] = []
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        self.reports = []
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            java_command("odradek.jvm.streams.ClickStreams", self.bootstrap,
                         self.application_id, str(self.state_dir), jvm_options=[HEAP]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,),
                                        daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self.reports.append(json.loads(line))

    def states(self) -> list[str]:
        return [r["state"] for r in self.reports if "state" in r]

    def running(self) -> bool:
        states = self.states()
        return bool(states) and states[-1] == "RUNNING"

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def transactional_id(self) -> str:
        """Its (one) stream thread's producer's transactional.id under exactly_once_v2:
        `<application.id>-<processId>-1`, the process id Streams keeps in its state dir."""
        metadata = self.state_dir / self.application_id / "kafka-streams-process-metadata"
        return f"{self.application_id}-{json.loads(metadata.read_text())['processId']}-1"

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._join()

    def begin_close(self) -> None:
        """Asks the application to close cleanly (`exited` waits for it)."""
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()

    def exited(self, timeout: float = 120.0) -> int:
        """The exit status, once the process ended and its reports are all read."""
        assert self.process is not None
        status = self.process.wait(timeout)
        self._join()
        return status

    def stop_if_alive(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()

    def _join(self) -> None:
        assert self._reader is not None
        self._reader.join(30)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


def committed_reader(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                     "isolation.level": "read_committed", "enable.auto.commit": False})


class OutputReader:
    """A read_committed consumer of whole topics from their beginning, that keeps every
    record read, in order, per topic."""

    def __init__(self, bootstrap: str, topics: Iterable[str], partitions: int) -> None:
        self.consumer = committed_reader(bootstrap)
        self.partitions = [TopicPartition(topic, p, OFFSET_BEGINNING)
                           for topic in topics for p in range(partitions)]
        self.records: dict[str, list[tuple[str, str]]] = {topic: [] for topic in topics}
        self.consumer.assign(self.partitions)

    def poll(self) -> None:
        for message in self.consumer.consume(1000, 0.2):
            error = message.error()
            assert error is None, error
            self.records[message.topic()].append(
                (message.key().decode(), message.value().decode()))

    def last_values(self, topic: str) -> dict[str, str]:
        return dict(self.records[topic])

    def read_to_end(self, timeout: float = 60.0) -> None:
        """Reads up to each partition's high watermark: once no transaction is open on
        them, everything committed."""
        ends = {(tp.topic, tp.partition): self.consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=30)[1]
                for tp in self.partitions}

        def at_end() -> bool:
            positions = self.consumer.position(
                [TopicPartition(t, p) for t, p in ends])
            return all(ends[(tp.topic, tp.partition)] == 0
                       or tp.offset >= ends[(tp.topic, tp.partition)] for tp in positions)

        wait_until(at_end, timeout, lambda: f"the outputs read to {ends}", between=self.poll)

    def close(self) -> None:
        self.consumer.close()
