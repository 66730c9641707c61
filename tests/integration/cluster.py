"""A real multi-process cluster for integration tests, run through `odradek cluster`, and
helpers to look at it through real clients."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker_process import ODRADEK
from tests.integration.log_digest import digest
from tests.waiting import wait_until

TIMEOUT = 30.0


class Cluster:
    def __init__(self, data_dir: Path, controllers: int = 3, brokers: int = 3,
                 overrides: dict[str, str] | None = None, racks: list[str] | None = None,
                 listeners: list[str] | None = None, add_scram: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.add_scram = add_scram or []
        self.controllers = controllers
        self.broker_count = brokers
        self.overrides = overrides or {}
        self.racks = racks or []
        self.listeners = listeners or []

    def cli(self, *args: str, timeout: float = 120.0, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*ODRADEK, "cluster", *args, "--data-dir", str(self.data_dir)],
            capture_output=True, text=True, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"odradek cluster {' '.join(args)} failed "
                               f"({result.returncode}):\n{result.stdout}\n{result.stderr}\n"
                               f"{self.logs()}")
        return result

    def up(self) -> None:
        args = ["up", "--controllers", str(self.controllers), "--brokers",
                str(self.broker_count), "--base-port", "0"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        if self.racks:
            args += ["--racks", ",".join(self.racks)]
        if self.listeners:
            args += ["--listeners", ",".join(self.listeners)]
        for credential in self.add_scram:
            args += ["--add-scram", credential]
        self.cli(*args)

    def down(self) -> None:
        self.cli("down", check=False)

    @property
    def layout(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.data_dir / "cluster.json").read_text())
        return data

    @property
    def bootstrap(self) -> str:
        return str(self.layout["bootstrap"])

    def node(self, name: str) -> dict[str, Any]:
        return next(n for n in self.layout["nodes"] if n["name"] == name)

    def broker_bootstrap(self, name: str) -> str:
        return f"127.0.0.1:{self.node(name)['port']}"

    def status(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = json.loads(self.cli("status", "--json").stdout)["nodes"]
        return nodes

    def active_controller(self, timeout: float = 30.0) -> str:
        leaders: list[str] = []

        def one_leader() -> bool:
            leaders[:] = [n["name"] for n in self.status() if n.get("leader")]
            return len(leaders) == 1

        wait_until(one_leader, timeout, lambda: f"a single active controller: {self.status()}")
        return leaders[0]

    def stop(self, name: str, kill: bool = False) -> None:
        self.cli("stop", name, *(["--kill"] if kill else []))

    def start(self, name: str) -> None:
        self.cli("start", name)

    def pause(self, name: str) -> None:
        self.cli("pause", name)

    def resume(self, name: str) -> None:
        self.cli("resume", name)

    def logs(self) -> str:
        """Each node's last warnings and errors (what went wrong may be long before the end)
        and the end of its log."""
        return "\n".join(digest(path.name, path.read_text(errors="replace"))
                         for path in sorted(self.data_dir.glob("*.log")))


@contextmanager
def running_cluster(data_dir: Path, controllers: int, brokers: int,
                    overrides: dict[str, str], racks: list[str] | None = None,
                    listeners: list[str] | None = None, add_scram: list[str] | None = None
                    ) -> Iterator[Cluster]:
    """A cluster that is up for the block and torn down after it, whatever happens."""
    cluster = Cluster(data_dir, controllers, brokers, overrides, racks, listeners, add_scram)
    try:
        cluster.up()
        yield cluster
    finally:
        cluster.down()


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def partitions(bootstrap: str, topic: str) -> dict[int, Any]:
    metadata = admin(bootstrap).list_topics(topic, timeout=TIMEOUT)
    return dict(metadata.topics[topic].partitions)


def broker_ids(bootstrap: str) -> set[int]:
    return set(admin(bootstrap).list_topics(timeout=TIMEOUT).brokers)


def scrape(port: int) -> dict[str, float]:
    """Unlabelled samples of a node's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {sample.name: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if not sample.labels}

