"""Controller metrics under Kafka's JMX names as the Prometheus JMX exporter spells them."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from odradek.controller.machine import ControllerMachine
from odradek.controller.raft_driver import RaftDriver
from odradek.raft.types import Role

LATENCY_WINDOW = 1024
"""Commit latencies kept for commit-latency-avg/max."""


class ControllerMetrics(Collector):
    def __init__(self, registry: CollectorRegistry, driver: RaftDriver,
                 machine: ControllerMachine) -> None:
        self.driver = driver
        self.machine = machine
        self.latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
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
        state = GaugeMetricFamily("kafka_server_raftmetrics_current_state",
                                  "The Raft role of this controller (1 for the current one).",
                                  labels=["state"])
        for role in Role:
            state.add_metric([role.value], int(driver.role is role))
        yield state
        raft = "kafka_server_raftmetrics_"
        yield gauge(raft + "current_leader", "The known leader (-1 if none).", driver.leader)
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
