"""The broker's client quotas (Kafka's QuotaFactory): the produce, fetch, request and controller
mutation measurements of security/client_quotas.py, kept in step with the quotas of the
metadata image, and their gauges under the names Strimzi's JMX exporter rules give Kafka's
quota sensors (`kafka.server:type=Produce,user=...,client-id=...` attribute `byte-rate` is
`kafka_server_quota_byte_rate{resource="Produce",user=...,clientId=...}`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from odradek.config.kafka_configs import BrokerConfig
from odradek.security.client_quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuota,
    ControllerMutationQuota,
    Entity,
)

Quotas = Callable[[], Mapping[Entity, Mapping[str, float]]]


class QuotaManager:
    """The four client quota types of a broker, by Kafka's sensor group names."""

    def __init__(self, config: BrokerConfig, quotas: Quotas, now_ms: Callable[[], int]) -> None:
        samples = config.integer("quota.window.num")
        window_ms = config.integer("quota.window.size.seconds") * 1000
        self.produce = ClientQuota(PRODUCER_BYTE_RATE, samples, window_ms)
        self.fetch = ClientQuota(CONSUMER_BYTE_RATE, samples, window_ms)
        self.request = ClientQuota(REQUEST_PERCENTAGE, samples, window_ms,
                                   max_throttle_ms=window_ms)
        self.controller_mutation = ControllerMutationQuota(
            config.integer("controller.quota.window.num"),
            config.integer("controller.quota.window.size.seconds") * 1000)
        self.by_group: dict[str, ClientQuota] = {
            "Produce": self.produce, "Fetch": self.fetch, "Request": self.request,
            "ControllerMutation": self.controller_mutation}
        self._quotas = quotas
        self.now_ms = now_ms

    def refresh(self) -> None:
        """Take the quotas of the image as it now stands (after every metadata batch)."""
        quotas = self._quotas()
        for quota in self.by_group.values():
            quota.refresh(quotas)

    def register(self, registry: CollectorRegistry) -> None:
        registry.register(_QuotaCollector(self))


class _QuotaCollector(Collector):
    def __init__(self, manager: QuotaManager) -> None:
        self._manager = manager

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self._manager.now_ms()
        families: dict[str, GaugeMetricFamily] = {}
        for group, quota in self._manager.by_group.items():
            for usage in quota.figures(now):
                for attribute, value in usage.values.items():
                    name = "kafka_server_quota_" + attribute.replace("-", "_")
                    family = families.get(name)
                    if family is None:
                        family = families[name] = GaugeMetricFamily(
                            name, f"Kafka's client quota sensor attribute {attribute}",
                            labels=["resource", "user", "clientId"])
                    family.add_metric([group, *usage.tags], value)
        yield from families.values()
