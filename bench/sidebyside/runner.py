"""One run (start a broker, run one scenario's workload against it, stop it) and the pairs:
A then B, again and again, so that drift on the machine hits both alike."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.sidebyside.brokers import (
    ROOT,
    BrokerError,
    RunningBroker,
    Template,
    ready_made,
    ready_made_mirror,
)
from bench.sidebyside.machine import loadavg, machine_busy_s
from bench.sidebyside.scenarios import Scenario

WORKLOAD_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class System:
    """One side: its name and its templates (one broker; three brokers, when it has one)."""

    name: str
    single: Template
    cluster: Template | None = None
    mirror: str | None = None
    """The mirror's command line, with `{config}` (an MM2 properties file)."""

    def template(self, scenario: Scenario) -> Template:
        if not scenario.cluster:
            return self.single
        if self.cluster is None:
            raise SystemExit(f"{self.name} has no cluster template for {scenario.name}")
        return self.cluster

    @classmethod
    def of(cls, spec: str, name: str | None) -> System:
        """A ready-made system (odradek, kafka, tansu) or a command template."""
        if "{port}" in spec:
            return cls(name or "custom", Template(spec))
        cluster = None
        with contextlib.suppress(SystemExit):
            cluster = ready_made(spec, cluster=True)
        return cls(name or spec, ready_made(spec), cluster, ready_made_mirror(spec))


@dataclass
class Run:
    scenario: str
    system: str
    pair: int
    ok: bool = False
    error: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    other_cores: float | None = None
    """CPU that processes other than the broker and the client used during the workload."""
    loadavg: float | None = None
    log: str | None = None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(scenario: Scenario, system: System, pair: int, log_dir: Path,
            start_timeout: float, messages: int | None,
            mirror_properties: Sequence[str] = ()) -> Run:
    run = Run(scenario.name, system.name, pair)
    log = log_dir / f"{system.name}-{scenario.name}-{pair}.log"
    run.log = str(log)
    if scenario.mirror and system.mirror is None:
        run.error = f"{system.name} has no mirror"
        return run
    brokers: list[RunningBroker] = []
    try:
        for _ in range(2 if scenario.mirror else 1):
            brokers.append(RunningBroker(system.template(scenario), log, start_timeout))
    except BrokerError as error:
        for started in brokers:
            started.stop()
        run.error = f"start: {error}"
        return run
    broker = brokers[0]
    extra = ["--target", brokers[1].bootstrap, "--mirror", system.mirror or "",
             "--mirror-log", str(log.with_suffix(".mirror.log")),
             *(f"--mirror-property={setting}" for setting in mirror_properties)
             ] if scenario.mirror else []
    try:
        result, other = _workload(scenario, broker, messages, extra, brokers[1:])
    finally:
        stop_s, usage = broker.stop()
        for other_broker in brokers[1:]:
            other_broker.stop()
    run.loadavg = loadavg()
    run.other_cores = other
    if not result.get("ok"):
        run.error = result.get("error", "no result")
        return run
    run.figures = dict(result["figures"])
    cpu_s, peak_rss = result["broker_cpu_s"], usage.peak_rss
    if scenario.mirror:  # the mirror's, measured by the workload that ran it
        cpu_s, peak_rss = result["mirror_cpu_s"], result["mirror_peak_rss"]
    run.figures.update(startup_s=broker.startup_s, peak_rss_mb=peak_rss / 2**20,
                       cpu_us_per_msg=cpu_s / result["messages"] * 1e6)
    if stop_s is None:
        run.error = "did not stop within its time-out: killed"
        return run
    run.figures["stop_s"] = stop_s
    run.ok = True
    return run


def _workload(scenario: Scenario, broker: RunningBroker, messages: int | None,
              extra: list[str], others: list[RunningBroker]) -> tuple[dict[str, Any],
                                                                       float | None]:
    """The workload's result (with the broker's CPU seconds during it), and the cores that
    processes other than the client and the brokers (`broker` and `others`) used
    meanwhile."""
    command = [sys.executable, "-m", "bench.sidebyside.workload", scenario.name,
               broker.bootstrap, *(["--messages", str(messages)] if messages else []), *extra]
    broker_cpu, busy, client_cpu = broker.sampler.cpu_now(), machine_busy_s(), _children_cpu()
    others_cpu = sum(o.sampler.cpu_now() for o in others)
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                              timeout=WORKLOAD_TIMEOUT_S,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"workload timed out after {WORKLOAD_TIMEOUT_S:.0f} s"}, None
    wall = time.monotonic() - started
    broker_cpu = broker.sampler.cpu_now() - broker_cpu
    others_cpu = sum(o.sampler.cpu_now() for o in others) - others_cpu
    other = (machine_busy_s() - busy - broker_cpu - others_cpu
             - (_children_cpu() - client_cpu)) / wall
    lines = done.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        result = {"ok": False, "error": f"workload exit {done.returncode}: "
                                        f"{done.stderr.strip()[-1500:]}"}
    if result.get("ok") and not broker.alive():
        result = {"ok": False, "error": "the broker exited during the run"}
    result["broker_cpu_s"] = broker_cpu
    return result, max(other, 0.0)


def run_pairs(scenarios: list[Scenario], systems: tuple[System, System], pairs: int,
              log_dir: Path, start_timeout: float, messages: int | None,
              progress: Callable[[Run], None], mirror_properties: Sequence[str] = ()
              ) -> list[Run]:
    """Every scenario, `pairs` times A then B (`mirror_properties`: KEY=VALUE settings for
    both mirrors)."""
    runs = []
    for scenario in scenarios:
        for pair in range(1, pairs + 1):
            for system in systems:
                run = one_run(scenario, system, pair, log_dir, start_timeout, messages,
                              mirror_properties)
                runs.append(run)
                progress(run)
    return runs
