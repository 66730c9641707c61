"""Controller metrics under Kafka's JMX names as the Prometheus JMX exporter spells them."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from odradek.controller.machine import ControllerMachine
from odradek.controller.raft_driver import RaftDriver
from odradek.controller.raft_transport import ChannelStats
from odradek.raft.types import NO_NODE, Role
from odradek.runtime.windowed_rate import WindowedRate

LATENCY_WINDOW = 1024
"""Commit latencies kept for commit-latency-avg/max."""


def raft_state(role: Role, leader: int, vote: int) -> str:
    """Kafka's raft-metrics current-state: leader, candidate, voted, follower, unattached or
    observer. A voter that knows no leader is `voted` once it voted this epoch (a
    pre-candidate has not), else `unattached`."""
    if role is Role.LEADER or role is Role.CANDIDATE or role is Role.OBSERVER:
        return role.value
    if role is Role.FOLLOWER and leader != NO_NODE:
        return "follower"
    return "voted" if vote != NO_NODE and role is Role.FOLLOWER else "unattached"


def current_vote(role: Role, node_id: int, state: str, vote: int) -> int:
    """Kafka's current-vote: this node as leader or candidate, the voted-for node while
    `voted`, else -1 (Kafka's followers report no vote)."""
    if role is Role.LEADER or role is Role.CANDIDATE:
        return node_id
    return vote if state == "voted" else NO_NODE


class ControllerMetrics(Collector):
    def __init__(self, registry: CollectorRegistry, driver: RaftDriver,
                 machine: ControllerMachine, channel: ChannelStats) -> None:
        self.driver = driver
        self.machine = machine
        self.channel = channel
        self.latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        start = time.monotonic()
        self.append_rate = WindowedRate(start, driver.appended_entries)
        self.fetch_rate = WindowedRate(start, driver.fetched_entries)
        self._rates_lock = threading.Lock()
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        driver, controller = self.driver, self.machine.controller
        active = driver.active
        self.latencies.extend(driver.commit_latency_ms)
        driver.commit_latency_ms.clear()

        def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, documentation, value=value)

        prefix = "kafka_controller_kafkacontroller_"
        yield gauge(prefix + "activecontrollercount",
                    "1 on the active controller, else 0.", int(active))
        yield gauge(prefix + "offlinepartitionscount", "Partitions without a leader "
                    "(reported by the active controller).",
                    controller.offline_partition_count() if active else 0)
        yield gauge(prefix + "fencedbrokercount", "Registered brokers that are fenced.",
                    controller.fenced_broker_count() if active else 0)
        yield gauge(prefix + "activebrokercount", "Registered brokers that are unfenced.",
                    len(controller.metadata.unfenced_brokers()) if active else 0)
        yield gauge(prefix + "globaltopiccount", "Topics in the cluster.",
                    len(controller.metadata.topics) if active else 0)
        yield gauge(prefix + "globalpartitioncount", "Partitions in the cluster.",
                    sum(len(t.partitions) for t in controller.metadata.topics.values())
                    if active else 0)
        yield CounterMetricFamily(
            "kafka_controller_controllerstats_uncleanleaderelections", "Leaders this "
            "controller elected from outside the ISR (unclean.leader.election.enable).",
            value=controller.unclean_elections)
        node = driver.node
        state_name = raft_state(driver.role, driver.leader, node.vote)
        state = GaugeMetricFamily("kafka_server_raftmetrics_current_state", "1, labelled "
                                  "with this node's Raft state.", labels=["current_state"])
        state.add_metric([state_name], 1)
        yield state
        raft = "kafka_server_raftmetrics_"
        yield gauge(raft + "current_leader", "The known leader (-1 if none).", driver.leader)
        yield gauge(raft + "current_vote", "The node voted for in this epoch (-1: none).",
                    current_vote(driver.role, node.node_id, state_name, node.vote))
        yield gauge(raft + "current_epoch", "The current Raft term (KRaft's epoch).",
                    driver.node.term)
        yield gauge(raft + "high_watermark", "The committed offset of the metadata log.",
                    driver.node.commit_index)
        yield gauge(raft + "log_end_offset", "The end offset of this node's metadata log.",
                    driver.node.last_index)
        yield gauge(raft + "applied_offset", "The last metadata offset applied here.",
                    driver.applied)
        latencies = self.latencies
        yield gauge(raft + "commit_latency_avg", "Average time from proposal to commit of "
                    "this controller's recent writes, in ms.",
                    sum(latencies) / len(latencies) if latencies else 0.0)
        yield gauge(raft + "commit_latency_max", "Longest of those, in ms.",
                    max(latencies, default=0.0))
        with self._rates_lock:  # scrapes may run at once, on the metrics server's threads
            now = time.monotonic()
            appended = self.append_rate.measure(now, driver.appended_entries)
            fetched = self.fetch_rate.measure(now, driver.fetched_entries)
        yield gauge(raft + "append_records_rate", "Metadata log offsets appended per second "
                    "by this node as the leader, over the last minute.", appended)
        yield gauge(raft + "fetch_records_rate", "Metadata log offsets per second this node "
                    "received from the leader, over the last minute.", fetched)
        yield from self._channel()

    def _channel(self) -> Iterator[Metric]:
        channel = self.channel
        prefix = "kafka_server_raftchannelmetrics_"
        for name, doc, value in (
            ("request", "Raft message batches sent to other controllers.", channel.requests),
            ("response", "Acknowledgements of those batches received.", channel.responses),
            ("outgoing_byte", "Bytes of Raft messages sent to other controllers.",
             channel.outgoing_bytes),
            ("incoming_byte", "Bytes of Raft messages received from other controllers.",
             channel.incoming_bytes),
        ):
            yield CounterMetricFamily(prefix + name, doc, value=value)
