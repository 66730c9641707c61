"""A cluster whose every node runs in its own Linux network namespace, so that a test can cut
one node off the network (nftables rules inside its namespace) while the test's own clients,
in the root namespace, still reach it through the bridge.

Layout: a bridge `odr<n>` holding 10.<a>.<b>.1/24 in the root namespace; node i lives in
namespace `odr<n>-<i>` at 10.<a>.<b>.<10+i>, linked to the bridge by a veth pair. Brokers
listen on :9092 and controllers on :9093 of their own address. Needs root, `ip` and `nft`.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.waiting import wait_until

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
CONTROLLER_ID_BASE = 1000
NFT_TIMEOUT_S = 30.0


@dataclass
class NetnsNode:
    name: str
    role: str
    node_id: int
    namespace: str
    address: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        return BROKER_PORT if self.role == "broker" else CONTROLLER_PORT


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def nft(namespace: str, *arguments: str, check: bool = True) -> None:
    """`nft` in a namespace, without pipes, killed and run again after NFT_TIMEOUT_S (three
    tries): in long campaigns one cut waited for ever to write its rules to nft's stdin, and
    one `nft delete` did not return in 30 s. Its errors are read from a file."""
    with tempfile.TemporaryFile() as errors:
        for attempt in range(3):
            try:
                result = subprocess.run(["ip", "netns", "exec", namespace, "nft", *arguments],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=errors, timeout=NFT_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                if attempt == 2:
                    raise
        if check and result.returncode:
            errors.seek(0)
            raise RuntimeError(f"nft {' '.join(arguments)} in {namespace}: "
                               f"{errors.read().decode(errors='replace').strip()}")


class NetnsCluster:
    def __init__(self, data_dir: Path, controllers: int = 3, brokers: int = 3,
                 overrides: dict[str, str] | None = None) -> None:
        missing = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]
        if os.geteuid() != 0 or missing:
            raise RuntimeError(f"network namespaces need root and {missing or 'ip, nft'} "
                               "(scripts/bootstrap.sh --dev installs nftables)")
        self.data_dir = data_dir
        self.overrides = overrides or {}
        tag = random.randrange(1, 60000)
        self.bridge = f"odr{tag}"
        self.subnet = f"10.{200 + tag // 256 % 50}.{tag % 256}"
        names = [(f"broker-{i}", "broker", i) for i in range(1, brokers + 1)]
        names += [(f"controller-{i}", "controller", CONTROLLER_ID_BASE + i)
                  for i in range(1, controllers + 1)]
        self.nodes = {
            name: NetnsNode(name, role, node_id, f"{self.bridge}-{slot}",
                            f"{self.subnet}.{10 + slot}")
            for slot, (name, role, node_id) in enumerate(names, 1)
        }

    @property
    def gateway(self) -> str:
        """The test's own address on the bridge."""
        return f"{self.subnet}.1"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{n.address}:{n.port}" for n in self.brokers())

    def brokers(self) -> list[NetnsNode]:
        return [n for n in self.nodes.values() if n.role == "broker"]

    def broker(self, node_id: int) -> NetnsNode:
        return self.nodes[f"broker-{node_id}"]

    # --- network -------------------------------------------------------------------------

    def _create_network(self) -> None:
        run("ip", "link", "add", self.bridge, "type", "bridge")
        if shutil.which("iptables"):
            # A Docker engine (the container tests start one) loads br_netfilter, so bridged
            # packets pass the host's FORWARD chain, whose policy it sets to DROP.
            run("iptables", *self._forward_rule("-I"))
        run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for slot, node in enumerate(self.nodes.values(), 1):
            outside, inside = f"{self.bridge}v{slot}", f"{self.bridge}p{slot}"
            run("ip", "netns", "add", node.namespace)
            run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            run("ip", "link", "set", inside, "netns", node.namespace)
            run("ip", "link", "set", outside, "master", self.bridge)
            run("ip", "link", "set", outside, "up")
            inns = ("ip", "netns", "exec", node.namespace)
            run(*inns, "ip", "addr", "add", f"{node.address}/24", "dev", inside)
            run(*inns, "ip", "link", "set", inside, "up")
            run(*inns, "ip", "link", "set", "lo", "up")

    def isolate(self, name: str) -> None:
        """Drop everything between `name` and the other nodes (not the test's clients)."""
        self.cut(name, [n for n in self.nodes if n != name])

    def cut(self, name: str, peers: list[str], inbound: bool = True,
            outbound: bool = True) -> None:
        """Drop the packets `name` receives from (inbound) and sends to (outbound) `peers`,
        by nftables rules in its namespace; cuts add up until `heal`."""
        addresses = ", ".join(self.nodes[peer].address for peer in peers)
        rules = ["add table inet cut",
                 "add chain inet cut in { type filter hook input priority 0; }",
                 "add chain inet cut out { type filter hook output priority 0; }"]
        if inbound:
            rules.append(f"add rule inet cut in ip saddr {{ {addresses} }} drop")
        if outbound:
            rules.append(f"add rule inet cut out ip daddr {{ {addresses} }} drop")
        path = self.data_dir / f"{name}-cut.nft"
        path.write_text("\n".join(rules) + "\n")
        nft(self.nodes[name].namespace, "-f", str(path))

    def heal(self, name: str) -> None:
        """Remove every cut of `name` (none is fine)."""
        nft(self.nodes[name].namespace, "delete", "table", "inet", "cut", check=False)

    # --- processes -----------------------------------------------------------------------

    def _properties(self, node: NetnsNode) -> str:
        voters = ",".join(f"{n.node_id}@{n.address}:{CONTROLLER_PORT}"
                          for n in self.nodes.values() if n.role == "controller")
        listener = "CONTROLLER" if node.role == "controller" else "PLAINTEXT"
        values = {
            "process.roles": node.role,
            "node.id": str(node.node_id),
            "listeners": f"{listener}://{node.address}:{node.port}",
            "controller.quorum.voters": voters,
            "log.dir": str(self.data_dir / node.name),
            "cluster.id": "netns-cluster-00000000",
            "metrics.port": "-1",
            "offsets.topic.replication.factor": str(min(3, len(self.brokers()))),
            **self.overrides,
        }
        return "".join(f"{key}={value}\n" for key, value in values.items())

    def start(self, name: str) -> None:
        node = self.nodes[name]
        directory = self.data_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "server.properties"
        config.write_text(self._properties(node))
        log = open(self.data_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        node.process = subprocess.Popen(
            ["ip", "netns", "exec", node.namespace, sys.executable, "-m", "odradek.cli",
             node.role, "--config", str(config)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def kill(self, name: str) -> None:
        process = self.nodes[name].process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(60)  # a loaded machine reaped one after more than 10 s

    def send_signal(self, name: str, number: signal.Signals) -> None:
        """Send a signal to the node's process group (SIGSTOP, SIGCONT, SIGTERM, ...)."""
        process = self.nodes[name].process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, number)

    def alive(self, name: str) -> bool:
        process = self.nodes[name].process
        return process is not None and process.poll() is None

    def up(self, timeout: float = 60.0) -> None:
        self._create_network()
        for name, node in self.nodes.items():
            if node.role == "controller":
                self.start(name)
        for node in self.brokers():
            self.start(node.name)
        wait_until(self._every_broker_registered, timeout,
                   lambda: f"the netns cluster up\n{self.logs()}", interval=0.2,
                   ignoring=Exception)

    def _every_broker_registered(self) -> bool:
        metadata = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
        return len(metadata.brokers) == len(self.brokers())

    def down(self) -> None:
        for name in self.nodes:
            self.kill(name)
        for node in self.nodes.values():
            subprocess.run(["ip", "netns", "del", node.namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        if shutil.which("iptables"):
            subprocess.run(["iptables", *self._forward_rule("-D")], capture_output=True)

    def _forward_rule(self, action: str) -> list[str]:
        return [action, "FORWARD", "-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT"]

    def logs(self) -> str:
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
                         for path in sorted(self.data_dir.glob("*.log")))
