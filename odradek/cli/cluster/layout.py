"""The shape of a local cluster: node names, ids, ports and each node's server.properties,
and `cluster.json`, the record of it that every other command reads."""

from __future__ import annotations

import json
import os
import random
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from odradek.config.kafka_configs import SECURITY_PROTOCOLS
from odradek.config.listeners import PLAINTEXT

HOST = "127.0.0.1"
_random = random.SystemRandom()
CONTROLLER_ID_BASE = 1000
"""Controllers are node 1001, 1002, ...: node ids are unique across roles, as Kafka requires."""
OFFSETS_REPLICATION = 3
"""Kafka's offsets.topic.replication.factor (and transaction.state.log.replication.factor,
share.coordinator.state.topic.replication.factor), capped at the broker count of small
clusters."""
TRANSACTION_LOG_MIN_ISR = 2
"""Kafka's transaction.state.log.min.isr (and share.coordinator.state.topic.min.isr), capped at
the topic's replication."""
CLUSTER_FILE = "cluster.json"
CONTROLLER = "CONTROLLER"
"""The controllers' listener name (Kafka's controller.listener.names default)."""


@dataclass(slots=True)
class Node:
    name: str
    role: str
    id: int
    port: int
    metrics_port: int
    log: str
    config: str
    pid: int = 0
    start_time: int = 0
    """The process's start time in clock ticks (/proc/<pid>/stat field 22): guards against
    a recycled pid."""
    listeners: dict[str, int] = field(default_factory=dict)
    """Every listener's port by name; `port` is the first one's (clients and probes use
    it). Empty in a cluster.json from before named listeners: one listener on `port`."""


@dataclass(slots=True)
class Layout:
    bootstrap: str
    cluster_id: str
    nodes: list[Node]

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        names = ", ".join(n.name for n in self.nodes)
        raise KeyError(f"no node {name!r} in this cluster (nodes: {names})")

    def to_json(self) -> dict[str, Any]:
        return {"bootstrap": self.bootstrap, "cluster_id": self.cluster_id,
                "nodes": [asdict(n) for n in self.nodes]}


def free_port() -> int:
    """A free port below Linux's ephemeral range (32768-60999 by default), so that no
    outgoing connection takes it before its node binds it."""
    for _ in range(1000):
        port = _random.randrange(20000, 32768)
        if not port_taken(port):
            return port
    raise OSError("no free port found in 20000-32767")


def port_taken(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


def plan(data_dir: Path, controllers: int, brokers: int, base_port: int,
         cluster_id: str, listeners: Sequence[str] = (PLAINTEXT,)) -> Layout:
    """Brokers take base..base+M-1 (their first listener), controllers the next N ports,
    metrics ports follow, then the brokers' further listeners; base 0 picks free ports."""
    count = brokers + controllers
    total = 2 * count + brokers * (len(listeners) - 1)
    if base_port:
        ports = list(range(base_port, base_port + total))
    else:
        ports = []
        while len(ports) < total:  # free ports picked at random may repeat
            if (port := free_port()) not in ports:
                ports.append(port)
    names = [(f"broker-{i}", "broker", i) for i in range(1, brokers + 1)]
    names += [(f"controller-{i}", "controller", CONTROLLER_ID_BASE + i)
              for i in range(1, controllers + 1)]
    further = iter(ports[2 * count:])
    nodes = []
    for i, (name, role, node_id) in enumerate(names):
        own = ({listeners[0]: ports[i], **{n: next(further) for n in listeners[1:]}}
               if role == "broker" else {CONTROLLER: ports[i]})
        nodes.append(Node(name, role, node_id, ports[i], ports[count + i],
                          str(data_dir / f"{name}.log"), str(data_dir / name / "server.properties"),
                          listeners=own))
    bootstrap = ",".join(f"{HOST}:{n.port}" for n in nodes if n.role == "broker")
    return Layout(bootstrap, cluster_id, nodes)


def voters(layout: Layout) -> str:
    return ",".join(f"{n.id}@{HOST}:{n.port}" for n in layout.nodes if n.role == "controller")


def properties(layout: Layout, node: Node, overrides: dict[str, str],
               racks: Sequence[str] = ()) -> str:
    """A node's server.properties; broker i gets `broker.rack` racks[i-1], round the list;
    overrides come last and win."""
    brokers = sum(n.role == "broker" for n in layout.nodes)
    values = {
        "process.roles": node.role,
        "node.id": str(node.id),
        "listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in node_ports(node)),
        **protocol_map(layout),
        "controller.quorum.voters": voters(layout),
        "log.dir": str(Path(node.config).parent),
        "cluster.id": layout.cluster_id,
        "metrics.port": str(node.metrics_port),
        "offsets.topic.replication.factor": str(min(OFFSETS_REPLICATION, brokers)),
        "transaction.state.log.replication.factor": str(min(OFFSETS_REPLICATION, brokers)),
        "transaction.state.log.min.isr": str(min(TRANSACTION_LOG_MIN_ISR, brokers)),
        "share.coordinator.state.topic.replication.factor": str(min(OFFSETS_REPLICATION,
                                                                    brokers)),
        "share.coordinator.state.topic.min.isr": str(min(TRANSACTION_LOG_MIN_ISR, brokers)),
        **({"broker.rack": racks[(node.id - 1) % len(racks)]}
           if racks and node.role == "broker" else {}),
        **overrides,
    }
    return "".join(f"{key}={value}\n" for key, value in values.items())


def node_ports(node: Node) -> list[tuple[str, int]]:
    """The node's listeners as (name, port)."""
    if node.listeners:
        return list(node.listeners.items())
    return [(CONTROLLER if node.role == "controller" else PLAINTEXT, node.port)]


def protocol_map(layout: Layout) -> dict[str, str]:
    """listener.security.protocol.map unless every listener is PLAINTEXT (Kafka then requires
    the controller listener's entry): a listener named after a protocol uses it, as in Kafka's
    default map; any other name is PLAINTEXT (an override of the map secures it)."""
    names = dict.fromkeys(name for n in layout.nodes for name, _ in node_ports(n))
    if all(name in (PLAINTEXT, CONTROLLER) for name in names):
        return {}
    return {"listener.security.protocol.map": ",".join(
        f"{n}:{n if n in SECURITY_PROTOCOLS else PLAINTEXT}" for n in names)}


def write_layout(data_dir: Path, layout: Layout) -> None:
    """Atomically (tmp + rename)."""
    path = data_dir / CLUSTER_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(layout.to_json(), indent=2) + "\n")
    os.replace(tmp, path)


def read_layout(data_dir: Path) -> Layout:
    data = json.loads((data_dir / CLUSTER_FILE).read_text())
    return Layout(data["bootstrap"], data["cluster_id"], [Node(**n) for n in data["nodes"]])
