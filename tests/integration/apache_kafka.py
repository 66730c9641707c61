"""Apache Kafka itself, one combined KRaft node on loopback (`scripts/apache_kafka.sh`): the
reference broker that tests compare Odradek with."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.integration.broker_process import BrokerProcess, free_port
from tests.jvm_toolchain import APACHE_KAFKA

START_TIMEOUT = 90.0
HEAP = "-Xmx512m"  # Kafka's scripts default to 1 GB; tests run several JVMs side by side


class ApacheKafka(BrokerProcess):
    """`start`, `stop` (SIGTERM: Kafka's controlled shutdown), `kill` (SIGKILL), as for an
    Odradek broker; `overrides` are server.properties lines."""

    def __init__(self, data_dir: Path, log_path: Path,
                 overrides: dict[str, str] | None = None, port: int | None = None) -> None:
        super().__init__(data_dir, log_path, port=port)
        self.controller_port = free_port()
        self.overrides = overrides or {}

    def command(self) -> list[str]:
        command = ["env", f"KAFKA_HEAP_OPTS={HEAP}", "bash", str(APACHE_KAFKA),
                   "--data-dir", str(self.data_dir), "--port", str(self.port),
                   "--controller-port", str(self.controller_port)]
        for key, value in self.overrides.items():
            command += ["--override", f"{key}={value}"]
        return command

    def start(self, timeout: float = START_TIMEOUT) -> None:
        super().start(timeout)

    def _serving(self) -> bool:
        """Kafka logs 'Kafka Server started' once its listeners serve requests."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"Apache Kafka exited with {self.process.returncode}:\n"
                               f"{self.logs()}")
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            return "Kafka Server started" in self.logs()
