"""Faults, drawn one after another from a seeded RNG, against a NetnsCluster: kill -9 and
SIGSTOP of brokers and controllers (active or not, partition leaders), network partitions
(a minority, a leader, the active controller, a bridge, one-way links), a full disk on the
broker whose log dir is a small tmpfs, and one rolling restart. Each fault is healed before
the next; the History gets its kind, target and span."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import grpc
from confluent_kafka.admin import AdminClient

from odradek.rpc import controller_pb2, controller_pb2_grpc
from tests.campaign.history import Fault, History
from tests.integration.netns import CONTROLLER_PORT, NetnsCluster
from tests.waiting import wait_until

LOG = logging.getLogger("campaign")
SMALL_DISK = "broker-5"
"""The broker whose log dir is a size-limited tmpfs."""
SMALL_DISK_SIZE = "256m"
BALLAST = ".campaign-ballast"
RESTART_TIMEOUT = 120.0


class Nemesis:
    def __init__(self, cluster: NetnsCluster, history: History, seed: int, topics: list[str],
                 session_seconds: float, duration: float, minimum: int) -> None:
        self.cluster = cluster
        self.history = history
        self.random = random.Random(f"{seed}/nemesis")
        self.topics = topics
        self.session = session_seconds
        self.duration = duration
        self.minimum = minimum
        self.rolling_at = self.random.randrange(minimum // 4, minimum // 2)
        self.count = 0
        self.crash: str | None = None
        self.name = "nemesis"
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
        self.faults: dict[str, Callable[[], str]] = {
            "kill-broker": lambda: self.kill(self.any_broker()),
            "kill-leader": lambda: self.kill(self.leader()),
            "kill-active-controller": lambda: self.kill(self.active_controller()),
            "kill-controller": lambda: self.kill(self.inactive_controller()),
            "pause-broker": lambda: self.pause(self.any_broker()),
            "pause-leader": lambda: self.pause(self.leader()),
            "pause-active-controller": lambda: self.pause(self.active_controller()),
            "partition-minority": self.partition_minority,
            "partition-leader": lambda: self.isolate(self.leader()),
            "partition-active-controller": lambda: self.isolate(self.active_controller()),
            "partition-bridge": self.bridge,
            "partition-one-way": self.one_way,
            "disk-full": self.fill_disk,
        }

    def run(self) -> None:
        """Faults until `duration` seconds passed and at least `minimum` were injected, one
        of them (at a seeded place) the rolling restart."""
        deadline = time.monotonic() + self.duration
        try:
            while time.monotonic() < deadline or self.count < self.minimum:
                kind = ("rolling-restart" if self.count == self.rolling_at
                        else self.random.choice(sorted(self.faults)))
                self.one_fault(kind)
                self.count += 1
                self.hold(0.3, 1.5)
        except Exception as error:  # noqa: BLE001 - reported, not raised
            self.crash = f"{type(error).__name__}: {error}"
        finally:
            self.heal_all()

    def one_fault(self, kind: str) -> None:
        start = time.monotonic()
        target = self.rolling_restart() if kind == "rolling-restart" else self.faults[kind]()
        self.history.add(Fault(kind, target, start, time.monotonic()))
        LOG.info("fault %d: %s %s (%.1f s)", self.count + 1, kind, target,
                 time.monotonic() - start)

    # --- targets ---------------------------------------------------------------------

    def brokers(self) -> list[str]:
        return [node.name for node in self.cluster.brokers()]

    def controllers(self) -> list[str]:
        return [name for name, node in self.cluster.nodes.items() if node.role == "controller"]

    def any_broker(self) -> str:
        return self.random.choice(self.brokers())

    def leader(self) -> str:
        """The leader of a random partition of the workload's topics (any broker if none
        is known now)."""
        topic = self.random.choice(self.topics)
        try:
            metadata = self.admin.list_topics(topic, timeout=10)
            partitions = metadata.topics[topic].partitions
            leader = partitions[self.random.choice(sorted(partitions))].leader
        except Exception:  # noqa: BLE001 - a cluster in failover
            leader = -1
        return f"broker-{leader}" if leader > 0 else self.any_broker()

    def quorum_roles(self) -> dict[str, bool]:
        roles = {}
        for name in self.controllers():
            node = self.cluster.nodes[name]
            try:
                with grpc.insecure_channel(f"{node.address}:{CONTROLLER_PORT}") as channel:
                    response = controller_pb2_grpc.ControllerStub(channel).DescribeQuorum(
                        controller_pb2.DescribeQuorumRequest(), timeout=2)
                roles[name] = bool(response.active)
            except grpc.RpcError:
                continue
        return roles

    def active_controller(self) -> str:
        active = [name for name, is_active in self.quorum_roles().items() if is_active]
        return active[0] if active else self.random.choice(self.controllers())

    def inactive_controller(self) -> str:
        active = self.active_controller()
        return self.random.choice([n for n in self.controllers() if n != active])

    def hold(self, low: float = 1.0, high: float = 4.0) -> None:
        time.sleep(self.random.uniform(low, high))

    # --- faults ----------------------------------------------------------------------

    def kill(self, name: str) -> str:
        self.cluster.kill(name)
        self.hold(0.5, 3.0)
        self.cluster.start(name)
        return name

    def pause(self, name: str) -> str:
        self.cluster.send_signal(name, signal.SIGSTOP)
        self.hold(self.session + 1, self.session + 2)
        self.cluster.send_signal(name, signal.SIGCONT)
        return name

    def split(self, side: list[str]) -> str:
        """Cut `side` off from every other node, both ways, for a while."""
        rest = [n for n in self.cluster.nodes if n not in side]
        for name in side:
            self.cluster.cut(name, rest)
        for name in rest:
            self.cluster.cut(name, side)
        self.hold(1.5, 4.0)
        self.heal_network()
        return ",".join(side)

    def isolate(self, name: str) -> str:
        return self.split([name])

    def partition_minority(self) -> str:
        nodes = sorted(self.cluster.nodes)
        return self.split(self.random.sample(nodes, self.random.choice([1, 2, 3])))

    def bridge(self) -> str:
        """Two halves that cannot talk, and one node that talks to both."""
        nodes = sorted(self.cluster.nodes)
        self.random.shuffle(nodes)
        middle = nodes.pop()
        left, right = nodes[:len(nodes) // 2], nodes[len(nodes) // 2:]
        for name in left:
            self.cluster.cut(name, right)
        for name in right:
            self.cluster.cut(name, left)
        self.hold(1.5, 4.0)
        self.heal_network()
        return f"{','.join(left)}|{middle}|{','.join(right)}"

    def one_way(self) -> str:
        """A node that hears nobody while the others still hear it."""
        name = self.random.choice(sorted(self.cluster.nodes))
        self.cluster.cut(name, [n for n in self.cluster.nodes if n != name], outbound=False)
        self.hold(1.5, 4.0)
        self.heal_network()
        return f"{name} deaf"

    def fill_disk(self) -> str:
        directory = self.cluster.data_dir / SMALL_DISK
        ballast = directory / BALLAST
        free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
        with open(ballast, "wb") as file, contextlib.suppress(OSError):  # full, as wanted
            os.posix_fallocate(file.fileno(), 0, max(free, 1))
        self.hold(3.0, 6.0)
        ballast.unlink()
        if not self.cluster.alive(SMALL_DISK):
            self.cluster.start(SMALL_DISK)
        return SMALL_DISK

    def rolling_restart(self) -> str:
        """Every broker in turn stopped with SIGTERM (a controlled shutdown) and started
        again, each registered again before the next."""
        for name in self.brokers():
            self.terminate(name)
            wait_until(partial(self.registered, self.cluster.nodes[name].node_id),
                       RESTART_TIMEOUT, f"{name} registered again", ignoring=Exception)
        return "every broker"

    def registered(self, broker_id: int) -> bool:
        return broker_id in self.admin.list_topics(timeout=5).brokers

    def terminate(self, name: str) -> None:
        """SIGTERM, then kill -9 if it has not stopped in time; started again."""
        self.cluster.send_signal(name, signal.SIGTERM)
        process = self.cluster.nodes[name].process
        try:
            if process is not None:
                process.wait(RESTART_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.cluster.kill(name)
        self.cluster.start(name)

    # --- healing ---------------------------------------------------------------------

    def heal_network(self) -> None:
        for name in self.cluster.nodes:
            self.cluster.heal(name)

    def heal_all(self) -> None:
        """No cut, no pause, no ballast, every node running."""
        self.heal_network()
        for name in self.cluster.nodes:
            self.cluster.send_signal(name, signal.SIGCONT)
        ballast = Path(self.cluster.data_dir / SMALL_DISK / BALLAST)
        ballast.unlink(missing_ok=True)
        for name in self.cluster.nodes:
            if not self.cluster.alive(name):
                self.cluster.start(name)
