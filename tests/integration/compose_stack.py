"""deploy/compose's stack on a real Docker engine, for the container tests. No container
registry is reachable here, so the images build on local stand-ins made once per machine by
scripts/container_base_images.sh (a debootstrapped Debian as ODRADEK_BASE_IMAGE, Debian's
Prometheus as ODRADEK_PROMETHEUS_IMAGE). Grafana has no Debian or PyPI package, so the
tests start the named services below and leave Grafana out."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from testcontainers.compose import DockerCompose

from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_DIR = ROOT / "deploy" / "compose"
PROJECT = "odradek-test"
NETWORK = f"{PROJECT}_default"
TOOLS_IMAGE = "odradek-broker:local"
CONTROLLERS = ["controller-1", "controller-2", "controller-3"]
BROKERS = ["broker-1", "broker-2", "broker-3"]
NODES = [*CONTROLLERS, *BROKERS, "west"]
SERVICES = [*NODES, "prometheus"]
EAST = "localhost:19092,localhost:19093,localhost:19094"
EAST_INTERNAL = "broker-1:9092,broker-2:9092,broker-3:9092"
WEST = "localhost:29092"
PROMETHEUS = "http://localhost:9090"
PUBLISHED = {"broker-1": 19092, "broker-2": 19093, "broker-3": 19094, "west": 29092,
             "prometheus": 9090}
"""compose.yaml's fixed ports on the host (Grafana's 3000 is not started here)."""
HEALTHY_TIMEOUT_S = 180.0
ENVIRONMENT = {
    "COMPOSE_PROJECT_NAME": PROJECT,
    "ODRADEK_BASE_IMAGE": "odradek-test-base:bookworm",
    "ODRADEK_PROMETHEUS_IMAGE": "odradek-test-prometheus:bookworm",
    "DOCKER_BUILDKIT": "0",   # the legacy builder: BuildKit's own image cannot be pulled
    "COMPOSE_BAKE": "false",
    "TESTCONTAINERS_RYUK_DISABLED": "true",
    "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
}


def docker(*args: str, timeout: float = 120, check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["docker", *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {result.stderr.strip()}")
    return result


def engine_or_skip() -> None:
    """A test run without a Docker engine skips these tests, except in CI, where
    scripts/test.sh starts one and its absence is a failure."""
    try:
        ok = docker("info", timeout=30, check=False).returncode == 0
    except FileNotFoundError:
        ok = False
    if not ok:
        message = "no Docker engine answers (bash scripts/docker_engine.sh starts one)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def ports_free() -> None:
    """Fail at once, naming the port, when another process holds a port the stack
    publishes (compose would leave that container created but not started)."""
    for service, port in PUBLISHED.items():
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                pytest.fail(f"port {port} of {service} is taken by another process")


class ComposeStack:
    """The stack under test; services are named as in compose.yaml."""

    def __init__(self, extra: Sequence[str] = (), files: Sequence[str] = ("compose.yaml",)
                 ) -> None:
        """`extra`: services to start besides SERVICES, each in a profile of its name;
        `files`: compose.yaml and the overrides over it."""
        self.services = [*SERVICES, *extra]
        self.compose = DockerCompose(COMPOSE_DIR, compose_file_name=list(files),
                                     services=self.services, profiles=list(extra), wait=True)
        self.build_s = 0.0
        self.up_s = 0.0

    def command(self, *args: str) -> list[str]:
        return [*self.compose.compose_command_property, *args]

    def run_compose(self, *args: str, timeout: float = 900) -> str:
        result = subprocess.run(self.command(*args), cwd=COMPOSE_DIR, capture_output=True,
                                text=True, timeout=timeout, check=False)
        if result.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} failed:\n"
                                 f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
        return result.stdout

    def up(self) -> None:
        """Build the images, then `up -d --wait`: back once every health check passes."""
        started = time.monotonic()
        self.run_compose("build", *self.services)
        self.build_s = time.monotonic() - started
        started = time.monotonic()
        try:
            self.compose.start()
        except subprocess.CalledProcessError as failure:
            raise AssertionError(f"docker compose up failed: {failure.stderr.decode()[-2000:]}"
                                 f"\n{self.logs()}") from None
        self.up_s = time.monotonic() - started

    def down(self) -> None:
        """Every service of every profile (e.g. the spark cluster a `run` started) removed,
        with its volumes."""
        self.run_compose("--profile", "*", "down", "--volumes", "--remove-orphans",
                         timeout=300)

    def logs(self) -> str:
        result = subprocess.run(self.command("logs", "--no-color", "--tail", "40"),
                                cwd=COMPOSE_DIR, capture_output=True, text=True,
                                timeout=60, check=False)
        return result.stdout[-20000:]

    @staticmethod
    def container(service: str) -> str:
        return f"{PROJECT}-{service}-1"

    def inspect(self, service: str, template: str) -> str:
        return docker("inspect", "--format", template, self.container(service)).stdout.strip()

    def health(self, service: str) -> str:
        return self.inspect(service, "{{if .State.Health}}{{.State.Health.Status}}"
                                     "{{else}}{{.State.Status}}{{end}}")

    def wait_healthy(self, *services: str, timeout: float = HEALTHY_TIMEOUT_S) -> None:
        wait_until(lambda: all(self.health(s) == "healthy" for s in services), timeout,
                   lambda: ", ".join(f"{s} {self.health(s)}" for s in services), interval=1)

    def start(self, service: str) -> None:
        docker("start", self.container(service))

    def kill(self, service: str) -> None:
        """SIGKILL, as `docker kill` sends."""
        docker("kill", self.container(service))

    def stop(self, service: str) -> None:
        """SIGTERM, then SIGKILL after compose's stop_grace_period, as `docker stop`; back
        once the container has exited."""
        docker("stop", "--time", self.inspect(service, "{{.Config.StopTimeout}}") or "10",
               self.container(service))

    def service_logs(self, service: str) -> str:
        result = docker("logs", self.container(service))
        return result.stdout + result.stderr

    def odradek(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`odradek ARGS` in a throwaway container on the stack's network: a client inside
        the compose network, which reaches the brokers by service name."""
        return docker("run", "--rm", "--network", NETWORK, "--entrypoint", "odradek",
                      TOOLS_IMAGE, *args, timeout=timeout, check=False)


@contextmanager
def local_base_images() -> Iterator[None]:
    """For the block: a Docker engine checked, ENVIRONMENT set and the local base images
    built (once per machine)."""
    engine_or_skip()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in ENVIRONMENT.items():
            patch.setenv(name, value)
        subprocess.run(["bash", str(ROOT / "scripts" / "container_base_images.sh")],
                       check=True, timeout=900)
        yield


@contextmanager
def running_stack(extra: Sequence[str] = (), files: Sequence[str] = ("compose.yaml",)
                  ) -> Iterator[ComposeStack]:
    """The stack (SERVICES and `extra`, from `files`), built on the local base images, up
    and healthy for the block; removed with its volumes after it, whatever happens."""
    with local_base_images():
        stack = ComposeStack(extra, files)
        stack.down()  # what an interrupted run left behind
        ports_free()
        try:
            stack.up()
            yield stack
        finally:
            stack.down()
