"""A Kafka cluster as a client sees it: its bootstrap servers, the brokers and partition
leaders Metadata names, and one connection per broker. A request goes to the first bootstrap
server that answers, to a broker by id or to a partition's leader.

`ConnectionPool` is the layer below: connections by address, opened on first use and opened
again after a failure. A client that learns addresses elsewhere (a broker reaching the other
brokers of its own cluster, whose addresses are in its metadata image) needs only the pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from odradek.net.kafka_client.request_versions import METADATA
from odradek.protocol.codec import build_request

from .connection import BrokerConnection, BrokerConnectionError, KafkaClientError
from .security import PLAINTEXT_CLIENT, ClientSecurity

Address = tuple[str, int]


class UnknownBrokerError(KafkaClientError, LookupError):
    """A broker id the cluster's metadata does not name."""


class NoLeaderError(KafkaClientError, LookupError):
    """A partition the cluster's metadata names no leader for."""


class ConnectionPool:
    """One connection per broker address. Requests to one broker go one at a time, in order
    (a connection has one request in flight); requests to different brokers run at once."""

    def __init__(self, client_id: str, timeout_s: float,
                 security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security
        self._connections: dict[Address, BrokerConnection] = {}
        self._turns: dict[Address, asyncio.Lock] = {}

    async def send(self, address: Address, request: Any) -> Any:
        """`request` (a kio entity) to the broker at `address`: its response entity. The
        connection is opened if there is none; a failure drops it, so that the next request
        opens a new one, and raises BrokerConnectionError naming the address."""
        (response,) = await self.send_all(address, [request])
        return response

    async def send_all(self, address: Address, requests: list[Any]) -> list[Any]:
        """Several requests to one broker in one round trip (`BrokerConnection.send_all`)."""
        async with self._turns.setdefault(address, asyncio.Lock()):
            try:
                connection = self._connections.get(address)
                if connection is None:
                    connection = await BrokerConnection.connect(
                        *address, self.client_id, self.timeout_s, self.security)
                    self._connections[address] = connection
                return await connection.send_all(requests, self.timeout_s)
            except BrokerConnectionError as error:
                self._connections.pop(address, None)
                raise BrokerConnectionError(f"{address[0]}:{address[1]}: {error}") from None
            except asyncio.CancelledError:
                # its response may still come, and must not be read as the next request's
                self._drop(address)
                raise

    def _drop(self, address: Address) -> None:
        connection = self._connections.pop(address, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for address in list(self._connections):
            self._drop(address)


class KafkaCluster:
    """Requests to one cluster. The brokers' addresses and the partitions' leaders are
    learned from Metadata responses, and asked for again when an id or a leader is not
    known; a caller told NOT_LEADER_OR_FOLLOWER calls `metadata` to learn the new leader."""

    def __init__(self, bootstrap: Sequence[Address], client_id: str, timeout_s: float,
                 security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.bootstrap = list(bootstrap)
        self.connections = ConnectionPool(client_id, timeout_s, security)
        self._brokers: dict[int, Address] = {}
        self._leaders: dict[tuple[str, int], int] = {}

    async def __aenter__(self) -> KafkaCluster:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.connections.close()

    async def send(self, request: Any) -> Any:
        """`request` to the first bootstrap server that answers."""
        failures = []
        for address in self.bootstrap:
            try:
                return await self.connections.send(address, request)
            except BrokerConnectionError as error:
                failures.append(str(error))
        raise BrokerConnectionError("no bootstrap server answered: " + "; ".join(failures))

    async def metadata(self, topics: Sequence[str] | None = None) -> Any:
        """A Metadata response (every topic for None, none for an empty list), from which the
        brokers and these topics' leaders are learned."""
        response = await self.send(build_request(*METADATA, {
            "topics": None if topics is None else [{"name": t, "topic_id": None}
                                                   for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }))
        self._brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        for topic in response.topics:
            for partition in topic.partitions:
                key = (topic.name, partition.partition_index)
                if partition.leader_id >= 0:
                    self._leaders[key] = partition.leader_id
                else:
                    self._leaders.pop(key, None)
        return response

    async def brokers(self) -> dict[int, Address]:
        """Each live broker's id and address, as last learned."""
        if not self._brokers:
            await self.metadata([])
        return self._brokers

    async def send_to_broker(self, node_id: int, request: Any) -> Any:
        if node_id not in self._brokers:
            await self.metadata([])
        address = self._brokers.get(node_id)
        if address is None:
            raise UnknownBrokerError(f"broker {node_id} is not in the cluster's metadata")
        return await self.connections.send(address, request)

    async def leader(self, topic: str, partition: int) -> int:
        """The partition's leader, as last learned."""
        if (topic, partition) not in self._leaders:
            await self.metadata([topic])
        leader = self._leaders.get((topic, partition))
        if leader is None:
            raise NoLeaderError(f"{topic}-{partition} has no leader")
        return leader

    async def send_to_leader(self, topic: str, partition: int, request: Any) -> Any:
        return await self.send_to_broker(await self.leader(topic, partition), request)

    async def send_all_to_leader(self, topic: str, partition: int,
                                 requests: list[Any]) -> list[Any]:
        """Several requests to a partition's leader in one round trip."""
        address = (await self.brokers()).get(await self.leader(topic, partition))
        if address is None:
            await self.metadata([])
            address = self._brokers.get(await self.leader(topic, partition))
        if address is None:
            raise UnknownBrokerError(f"the leader of {topic}-{partition} has no address")
        return await self.connections.send_all(address, requests)
