"""Apache Kafka as a three-broker cluster, laid out as `odradek cluster up` lays out
Odradek's: one KRaft controller and three brokers, each a `scripts/apache_kafka.sh` node with
Kafka's own configs and default JVM heap; broker 1 on PORT, brokers 2 and 3 and the
controller (id 1001) on free ports below the ephemeral range, picked at start (PORT+1.. may
be some client's ephemeral port on a busy machine). The internal topics take Kafka's
default replication (3, min ISR 2).

    python bench/sidebyside/kafka_cluster.py up --data-dir DIR --base-port PORT
    python bench/sidebyside/kafka_cluster.py down --data-dir DIR

`up` starts the nodes detached and returns once Metadata lists the three brokers; `down`
stops the brokers (controlled shutdown needs the controller), then the controller.

It runs as a script from the side-by-side harness's cluster template (in a fresh working
directory), so it imports only installed packages (odradek's, not the checkout's `bench`)."""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from odradek.cli.cluster.layout import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apache_kafka.sh"
BROKERS = 3
CONTROLLER_ID = 1001
START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0
INTERNAL_TOPICS = ["offsets.topic.replication.factor=3",
                   "transaction.state.log.replication.factor=3",
                   "transaction.state.log.min.isr=2",
                   "share.coordinator.state.topic.replication.factor=3",
                   "share.coordinator.state.topic.min.isr=2"]


def node_commands(data_dir: Path, base_port: int,
                  overrides: Sequence[str] = ()) -> dict[str, list[str]]:
    """Each node's name and command line, the controller first; `overrides` are
    `key=value` lines every node's server.properties gets after the internal topics'."""
    broker_ports = [base_port, *(free_port() for _ in range(BROKERS - 1))]
    controller_port = free_port()
    voters = f"{CONTROLLER_ID}@127.0.0.1:{controller_port}"
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    common = ["--controller-quorum-voters", voters, "--cluster-id", cluster_id]
    for override in [*INTERNAL_TOPICS, *overrides]:
        common += ["--override", override]
    commands = {"controller": ["bash", str(SCRIPT), "--data-dir", str(data_dir / "controller"),
                               "--process-roles", "controller", "--node-id", str(CONTROLLER_ID),
                               "--controller-port", str(controller_port), *common]}
    for i in range(1, BROKERS + 1):
        commands[f"broker-{i}"] = ["bash", str(SCRIPT), "--data-dir", str(data_dir / f"broker-{i}"),
                                   "--process-roles", "broker", "--node-id", str(i),
                                   "--port", str(broker_ports[i - 1]), *common]
    return commands


def up(data_dir: Path, base_port: int, overrides: Sequence[str] = ()) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, command in node_commands(data_dir, base_port, overrides).items():
        print(f"kafka_cluster: {name}: {' '.join(command[2:])}", flush=True)
        with open(data_dir / f"{name}.log", "ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        (data_dir / f"{name}.pid").write_text(str(process.pid))
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{base_port}", "log_level": 0})
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if len(admin.list_topics(timeout=2.0).brokers) == BROKERS:
                return
        except KafkaException:
            pass
        time.sleep(0.2)
    down(data_dir)
    tails = "".join(f"\n--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-15:])
                    for log in sorted(data_dir.glob("*.log")))
    raise SystemExit(f"kafka_cluster: {BROKERS} brokers not listed after "
                     f"{START_TIMEOUT_S:.0f} s{tails}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL whatever is left after STOP_TIMEOUT_S."""
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    _signal(pids, signal.SIGKILL)


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def down(data_dir: Path) -> None:
    def pids(names: list[str]) -> list[int]:
        files = [data_dir / f"{name}.pid" for name in names]
        return [int(f.read_text()) for f in files if f.exists()]

    _stop(pids([f"broker-{i}" for i in range(1, BROKERS + 1)]))
    _stop(pids(["controller"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--base-port", type=int)
    args = parser.parse_args(argv)
    if args.action == "up":
        if args.base_port is None:
            parser.error("up needs --base-port")
        up(args.data_dir.resolve(), args.base_port)
    else:
        down(args.data_dir.resolve())


if __name__ == "__main__":
    main()
