"""Kafka Exporter's series, served by the active controller and by no other process, so
that each series exists once in the cluster. The active controller is the one process Raft
makes unique, and it holds the committed metadata (brokers, partitions, replicas, ISRs,
leaders) itself; offsets and groups it asks the brokers for with the Kafka protocol, as
Kafka Exporter does, when Prometheus scrapes. Standby controllers export none of it. The
latest mirror audit results (`audit_series`), read from the audit topic on this cluster, come
with them for the same reason."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from odradek.controller.machine import ControllerMachine
from odradek.controller.raft_driver import RaftDriver
from odradek.exporter.audit_reader import AuditReader
from odradek.exporter.audit_series import audit_families
from odradek.exporter.series import (
    ClusterView,
    PartitionView,
    TopicPartition,
    exporter_families,
)
from odradek.net.kafka_client import (
    PLAINTEXT_CLIENT,
    ClientSecurity,
    ConnectionPool,
    KafkaClientError,
)
from odradek.net.kafka_client.request_versions import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    LIST_OFFSETS,
    OFFSET_FETCH,
)
from odradek.protocol.codec import build_request

log = logging.getLogger("odradek.controller.exporter")

TIMEOUT_S = 5.0
"""For each request to a broker, and (twice over) for the whole look at the cluster."""
LATEST, EARLIEST = -1, -2
Address = tuple[str, int]


class ClusterExporter(Collector):
    def __init__(self, registry: CollectorRegistry, driver: RaftDriver,
                 machine: ControllerMachine, loop: asyncio.AbstractEventLoop,
                 listener: str, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        """`listener`: the brokers' listener to ask (the inter-broker one), with `security`;
        a broker without an endpoint there is asked on its first."""
        self.listener = listener
        self.driver = driver
        self.machine = machine
        self.loop = loop
        self.pool = ConnectionPool("odradek-cluster-exporter", TIMEOUT_S, security)
        self.audit = AuditReader(TIMEOUT_S, security=security)
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        """On a scrape (the metrics server's thread): the view gathered on the loop."""
        if not self.driver.active or self.loop.is_closed() or _on_a_loop():
            return  # on the loop itself, waiting for the loop would only time out
        future = asyncio.run_coroutine_threadsafe(self.view(), self.loop)
        try:
            view = future.result(2 * TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - a scrape reports what it can
            future.cancel()
            log.warning("Kafka Exporter series left out of this scrape: %r", error)
            return
        yield from exporter_families(view)
        yield from audit_families(view.audit)

    def close(self) -> None:
        self.pool.close()
        self.audit.close()

    async def view(self) -> ClusterView:
        metadata = self.machine.controller.metadata
        view = ClusterView()
        addresses: dict[int, Address] = {}
        for broker in metadata.unfenced_brokers():
            endpoint = broker.endpoint(self.listener) or broker.endpoints[0]
            addresses[broker.broker_id] = (endpoint.host, endpoint.port)
            view.brokers[broker.broker_id] = f"{endpoint.host}:{endpoint.port}"
        led: dict[int, list[TopicPartition]] = {}
        for name, topic in sorted(metadata.topics.items()):
            for index, record in sorted(topic.partitions.items()):
                view.partitions.append(PartitionView(name, index, record.leader,
                                                     record.replicas, record.isr))
                if record.leader in addresses:
                    led.setdefault(record.leader, []).append((name, index))
        await asyncio.gather(
            self._audit(addresses, view),
            *(self._offsets(addresses[b], partitions, which, into)
              for b, partitions in led.items()
              for which, into in ((LATEST, view.newest), (EARLIEST, view.oldest))),
            *(self._groups(address, view) for address in addresses.values()))
        return view

    async def _audit(self, addresses: dict[int, Address], view: ClusterView) -> None:
        topic = self.machine.controller.metadata.topics.get(self.audit.topic)
        await self.audit.refresh(topic, list(addresses.values()))
        view.audit = self.audit.results.latest()

    async def _send(self, address: Address, api: tuple[int, int], body: dict[str, Any]
                    ) -> Any:
        return await self.pool.send(address, build_request(*api, body))

    async def _offsets(self, address: Address, partitions: list[TopicPartition],
                       timestamp: int, into: dict[TopicPartition, int]) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        try:
            response = await self._send(address, LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": 0, "topics": [
                    {"name": topic, "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1,
                         "timestamp": timestamp} for p in indexes]}
                    for topic, indexes in by_topic.items()]})
        except KafkaClientError as error:
            log.info("offsets from %s:%d left out: %s", *address, error)
            return
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error_code == ErrorCode.none:
                    into[(topic.name, partition.partition_index)] = partition.offset

    async def _groups(self, address: Address, view: ClusterView) -> None:
        """The groups `address` coordinates: members and committed offsets."""
        try:
            listed = await self._send(address, LIST_GROUPS,
                                      {"states_filter": [], "types_filter": []})
            classic = [g.group_id for g in listed.groups if g.group_type != "consumer"]
            consumer = [g.group_id for g in listed.groups if g.group_type == "consumer"]
            if not classic and not consumer:
                return
            described = []
            if classic:
                described += (await self._send(address, DESCRIBE_GROUPS, {
                    "groups": classic, "include_authorized_operations": False})).groups
            if consumer:
                described += (await self._send(address, CONSUMER_GROUP_DESCRIBE, {
                    "group_ids": consumer, "include_authorized_operations": False})).groups
            fetched = await self._send(address, OFFSET_FETCH, {
                "groups": [{"group_id": g, "topics": None} for g in classic + consumer],
                "require_stable": False})
        except KafkaClientError as error:
            log.info("groups of %s:%d left out: %s", *address, error)
            return
        for group in described:
            if group.error_code == ErrorCode.none:
                view.members[group.group_id] = len(group.members)
        for group in fetched.groups:
            if group.error_code != ErrorCode.none:
                continue
            view.committed[group.group_id] = {
                (topic.name, p.partition_index): p.committed_offset
                for topic in group.topics for p in topic.partitions
                if p.error_code == ErrorCode.none}


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
