"""Starts a real `odradek dev` process on loopback for integration tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from odradek.cli.cluster.layout import free_port
from tests.waiting import wait_until

ODRADEK = [sys.executable, "-m", "odradek.cli"]
__all__ = ["ODRADEK", "BrokerProcess", "free_port"]


class BrokerProcess:
    """One broker process; `start`, `stop` (SIGTERM), `kill` (SIGKILL), `restart`."""

    def __init__(self, data_dir: Path, log_path: Path, overrides: dict[str, str] | None = None,
                 port: int | None = None, extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.port = port or free_port()
        self.metrics_port = free_port()
        self.overrides = {"metrics.port": str(self.metrics_port), **(overrides or {})}
        self.extra_args = extra_args or []
        self.launcher = ODRADEK
        """What runs `odradek` (a test-only entry point's command instead, for a hook)."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        command = [*self.launcher, "dev", "--port", str(self.port),
                   "--data-dir", str(self.data_dir)]
        for key, value in self.overrides.items():
            command += ["--override", f"{key}={value}"]
        return command + self.extra_args

    def start(self, timeout: float = 30.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.process = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        wait_until(self._serving, timeout, lambda: f"the broker serving\n{self.logs()}",
                   interval=0.05, ignoring=OSError)

    def _serving(self) -> bool:
        """Accepts connections; a broker that exited fails the start at once."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"broker exited with {self.process.returncode}:\n{self.logs()}")
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            return True

    def stop(self, timeout: float = 20.0) -> int:
        """Graceful stop (SIGTERM); returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        """kill -9, as a crash."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def restart(self, hard: bool = False) -> None:
        if hard:
            self.kill()
        else:
            self.stop()
        self.start()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
