"""`odradek cluster up|status|stop|start|pause|resume|down`."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from odradek.cli.cluster.layout import (
    CLUSTER_FILE,
    CONTROLLER,
    Layout,
    Node,
    node_ports,
    plan,
    port_taken,
    properties,
    read_layout,
    write_layout,
)
from odradek.cli.cluster.probe import broker_sees, controller_active
from odradek.cli.cluster.processes import alive, signal_node, spawn, wait_dead
from odradek.cli.tools.storage import format_storage
from odradek.config.kafka_configs import (
    BrokerConfig,
    InvalidConfigError,
    key_value,
    load_properties,
)
from odradek.log.meta_properties import new_cluster_id
from odradek.metadata.scram_bootstrap import FormatterError

STOP_TIMEOUT_S = 30.0
# Free ports are picked, then bound by the nodes: another process may bind one in between.
FREE_PORT_ATTEMPTS = 3


def add_cluster_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("cluster", help="run a local multi-process cluster")
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, help_text: str, run: Any) -> argparse.ArgumentParser:
        sub = verbs.add_parser(name, help=help_text)
        sub.add_argument("--data-dir", required=True, type=Path)
        sub.set_defaults(run=run)
        return sub

    up = verb("up", "write the nodes' configs, start them and wait until ready", run_up)
    up.add_argument("--controllers", type=int, default=3)
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--base-port", type=int, default=9092,
                    help="brokers from here, then controllers, then metrics; 0: free ports")
    up.add_argument("--override", action="append", type=key_value, default=[],
                    metavar="KEY=VALUE", help="a config for every node (repeatable)")
    up.add_argument("--listeners", type=_listener_names, default=["PLAINTEXT"],
                    metavar="NAME,NAME,...", help="the brokers' listeners, each on its own "
                    "port; clients bootstrap from the first (set the others' roles with "
                    "--override inter.broker.listener.name=NAME)")
    up.add_argument("--racks", type=lambda text: [r for r in text.split(",") if r], default=[],
                    metavar="RACK,RACK,...", help="broker.rack of broker 1, 2, ... in turn")
    up.add_argument("--add-scram", action="append", default=[], metavar="SCRAM_CREDENTIAL",
                    help="format every node first (`odradek storage format`) with this SCRAM "
                    "credential for the first active controller to write (repeatable)")
    up.add_argument("--timeout", type=float, default=60.0)
    status = verb("status", "which nodes are alive, which controller is active", run_status)
    status.add_argument("--json", action="store_true")
    for name, help_text in (("stop", "SIGTERM a node and wait for it to exit"),
                            ("start", "start a stopped node again"),
                            ("pause", "SIGSTOP a node (its heartbeats stop)"),
                            ("resume", "SIGCONT a paused node")):
        sub = verb(name, help_text, run_node_verb)
        sub.add_argument("node")
        if name == "stop":
            sub.add_argument("--kill", action="store_true", help="SIGKILL instead")
    verb("down", "stop every node (brokers first); data is kept", run_down)


def _listener_names(text: str) -> list[str]:
    names = [name.strip().upper() for name in text.split(",") if name.strip()]
    if not names or len(set(names)) != len(names) or CONTROLLER in names:
        raise argparse.ArgumentTypeError(f"expected distinct listener names other than "
                                         f"{CONTROLLER}, e.g. EXTERNAL,INTERNAL")
    return names


def _fail(message: str) -> int:
    print(f"odradek cluster: {message}", file=sys.stderr)
    return 2


def run_up(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir.resolve()
    if (data_dir / CLUSTER_FILE).exists():
        running = [n.name for n in read_layout(data_dir).nodes if alive(n)]
        if running:
            return _fail(f"{data_dir} already runs {', '.join(running)}; `down` it first")
    if args.controllers < 1 or args.brokers < 1:
        return _fail("a cluster needs at least one controller and one broker")
    attempts = 1 if args.base_port else FREE_PORT_ATTEMPTS
    for attempt in range(1, attempts + 1):
        layout = plan(data_dir, args.controllers, args.brokers, args.base_port,
                      new_cluster_id(), args.listeners)
        taken = [p for n in layout.nodes for p in (*n.listeners.values(), n.metrics_port)
                 if port_taken(p)]
        if taken and args.base_port:
            return _fail(f"port(s) {', '.join(map(str, taken))} are taken; pick another "
                         "--base-port (or 0 for free ports)")
        if taken:
            continue
        if (failure := _start(data_dir, layout, args)) is not None:
            return failure
        unready = wait_ready(layout, args.timeout)
        if unready is None:
            print(layout.bootstrap)
            return 0
        problem, nodes = unready
        if attempt < attempts and any(_lost_its_port(n) for n in nodes):
            print(f"odradek cluster: another process bound a free port first: "
                  f"starting again on other ports ({attempt}/{attempts})", file=sys.stderr)
            _stop(layout.nodes)
            _discard(layout)
            continue
        _report(problem, nodes)
        return 1
    return _fail(f"no {attempts} sets of free ports could be bound")


def _start(data_dir: Path, layout: Layout, args: argparse.Namespace) -> int | None:
    """Write each node's config (formatting its storage for --add-scram), start the
    controllers, then the brokers; a failure's exit status, or None."""
    overrides = dict(args.override)
    for node in layout.nodes:
        Path(node.config).parent.mkdir(parents=True, exist_ok=True)
        Path(node.config).write_text(properties(layout, node, overrides, args.racks))
        if args.add_scram:
            try:
                format_storage(BrokerConfig(load_properties(Path(node.config))),
                               layout.cluster_id, args.add_scram, ignore_formatted=False)
            except (FormatterError, InvalidConfigError) as error:
                return _fail(f"formatting {node.name}: {error}")
    for node in sorted(layout.nodes, key=lambda n: n.role != "controller"):
        spawn(node)
    write_layout(data_dir, layout)
    return None


def _lost_its_port(node: Node) -> bool:
    """The node exited because a port picked free was bound by another process first."""
    return (not alive(node)
            and "address already in use" in Path(node.log).read_text(errors="replace").lower())


def _discard(layout: Layout) -> None:
    """Remove a failed start's node directories and logs, so a new one begins clean."""
    for node in layout.nodes:
        shutil.rmtree(Path(node.config).parent, ignore_errors=True)
        Path(node.log).unlink(missing_ok=True)


def wait_ready(layout: Layout, timeout: float) -> tuple[str, list[Node]] | None:
    """None once every broker sees all brokers and a controller is active; else the
    problem and the nodes it concerns."""
    brokers = [n for n in layout.nodes if n.role == "broker"]
    controllers = [n for n in layout.nodes if n.role == "controller"]
    ready: set[str] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = [n for n in layout.nodes if not alive(n)]
        if dead:
            return "exited", dead
        if not any(n.name in ready for n in controllers):
            ready.update(n.name for n in controllers if controller_active(n))
        ready.update(n.name for n in brokers
                     if n.name not in ready and broker_sees(n.port, len(brokers)))
        if all(n.name in ready for n in brokers) and any(n.name in ready for n in controllers):
            return None
        time.sleep(0.2)
    return f"not ready within {timeout:.0f}s", [n for n in layout.nodes if n.name not in ready]


def _report(problem: str, nodes: list[Node]) -> None:
    print(f"odradek cluster: {problem}: {', '.join(n.name for n in nodes)}", file=sys.stderr)
    for node in nodes:
        tail = Path(node.log).read_text(errors="replace").splitlines()[-15:]
        print(f"--- {node.log}\n" + "\n".join(tail), file=sys.stderr)


def run_status(args: argparse.Namespace) -> int:
    layout = read_layout(args.data_dir.resolve())
    rows = []
    for node in layout.nodes:
        row: dict[str, Any] = {"name": node.name, "role": node.role, "id": node.id,
                               "pid": node.pid, "port": node.port,
                               "listeners": dict(node_ports(node)), "log": node.log,
                               "alive": alive(node)}
        if node.role == "controller":
            row["leader"] = bool(row["alive"] and controller_active(node))
        rows.append(row)
    if args.json:
        print(json.dumps({"bootstrap": layout.bootstrap, "nodes": rows}, indent=2))
        return 0
    print(f"bootstrap: {layout.bootstrap}")
    for row in rows:
        state = "alive" if row["alive"] else "dead"
        active = " (active controller)" if row.get("leader") else ""
        print(f"{row['name']:<14} id {row['id']:<5} pid {row['pid']:<8} port {row['port']:<6}"
              f" {state}{active}")
    return 0


def run_node_verb(args: argparse.Namespace) -> int:
    data_dir = args.data_dir.resolve()
    layout = read_layout(data_dir)
    try:
        node = layout.node(args.node)
    except KeyError as error:
        return _fail(str(error.args[0]))
    if args.verb == "start":
        if alive(node):
            print(f"{node.name} is already running (pid {node.pid})")
            return 0
        spawn(node)
        write_layout(data_dir, layout)
        return 0 if _wait_listening(node) else 1
    if args.verb == "stop":
        sig = signal.SIGKILL if args.kill else signal.SIGTERM
        if not signal_node(node, sig):
            print(f"{node.name} is not running")
            return 0
        signal_node(node, signal.SIGCONT)
        if wait_dead([node], STOP_TIMEOUT_S):
            return _fail(f"{node.name} did not exit within {STOP_TIMEOUT_S:.0f}s")
        return 0
    sig = signal.SIGSTOP if args.verb == "pause" else signal.SIGCONT
    if not signal_node(node, sig):
        return _fail(f"{node.name} is not running")
    return 0


def _wait_listening(node: Node, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(node):
            _report("exited", [node])
            return False
        try:
            with socket.create_connection(("127.0.0.1", node.port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    _report(f"not listening within {timeout:.0f}s", [node])
    return False


def run_down(args: argparse.Namespace) -> int:
    _stop(read_layout(args.data_dir.resolve()).nodes)
    return 0


def _stop(nodes: list[Node]) -> None:
    """SIGTERM brokers, then controllers; SIGKILL any still running after STOP_TIMEOUT_S."""
    for role in ("broker", "controller"):
        group = [n for n in nodes if n.role == role]
        for node in group:
            signal_node(node, signal.SIGCONT)
            signal_node(node, signal.SIGTERM)
        for node in wait_dead(group, STOP_TIMEOUT_S):
            print(f"{node.name} did not stop: killing it", file=sys.stderr)
            signal_node(node, signal.SIGKILL)
        wait_dead(group, 5.0)
