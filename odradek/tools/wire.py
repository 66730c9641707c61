"""Kafka requests sent straight over the wire, for the admin APIs confluent-kafka has no
call for (reassignments, log dirs, the metadata quorum, transactions). Requests and responses
are kio entities; a request goes to the bootstrap servers, a broker by id, or the controller
Metadata names (in KRaft mode, any broker forwards controller requests)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.client import BrokerConnection, BrokerConnectionError
from odradek.protocol.codec import build_request
from odradek.tools.common import ToolError, client_properties

METADATA = (3, 12)
PLAINTEXT = "PLAINTEXT"


def split_host_port(address: str) -> tuple[str, int]:
    host, separator, port = address.strip().rpartition(":")
    if not separator or not port.isdigit():
        raise ToolError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


class WireClient:
    """Connections to a cluster's brokers, opened on first use, closed on exit."""

    def __init__(self, args: argparse.Namespace, client_id: str) -> None:
        properties = client_properties(args)
        protocol = properties.get("security.protocol", PLAINTEXT).upper()
        if protocol != PLAINTEXT:
            raise ToolError(f"security.protocol={protocol} is not supported by this tool")
        self.bootstrap = [split_host_port(a) for a in args.bootstrap_server.split(",") if a]
        self.client_id = properties.get("client.id", client_id)
        self.timeout: float = args.timeout
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._brokers: dict[int, tuple[str, int]] | None = None

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    async def _connection(self, address: tuple[str, int]) -> BrokerConnection:
        connection = self._connections.get(address)
        if connection is None:
            connection = await BrokerConnection.connect(*address, self.client_id, self.timeout)
            self._connections[address] = connection
        return connection

    async def send_to(self, address: tuple[str, int], api: tuple[int, int],
                      body: Mapping[str, Any]) -> Any:
        """One request to one address; a broken connection is a ToolError."""
        try:
            connection = await self._connection(address)
            return await connection.send(build_request(*api, body), self.timeout)
        except BrokerConnectionError as error:
            self._connections.pop(address, None)
            raise ToolError(f"{address[0]}:{address[1]}: {error}") from None

    async def send(self, api: tuple[int, int], body: Mapping[str, Any]) -> Any:
        """One request to the first bootstrap server that answers."""
        failures = []
        for address in self.bootstrap:
            try:
                return await self.send_to(address, api, body)
            except ToolError as error:
                failures.append(str(error))
        raise ToolError("no bootstrap server answered: " + "; ".join(failures))

    async def metadata(self, topics: list[str] | None = None) -> Any:
        """A Metadata response: every topic (None), or just these (an empty list: none)."""
        response = await self.send(METADATA, {
            "topics": None if topics is None else [{"name": t, "topic_id": None}
                                                   for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        })
        self._brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        return response

    async def brokers(self) -> dict[int, tuple[str, int]]:
        """Each live broker's id and address."""
        if self._brokers is None:
            await self.metadata([])
        assert self._brokers is not None
        return self._brokers

    async def send_to_broker(self, node_id: int, api: tuple[int, int],
                             body: Mapping[str, Any]) -> Any:
        brokers = await self.brokers()
        if node_id not in brokers:
            raise ToolError(f"broker {node_id} is not in the cluster's metadata")
        return await self.send_to(brokers[node_id], api, body)


def check(code: int, what: str, message: str | None = None) -> None:
    """A non-zero Kafka error code as a ToolError naming `what`."""
    if code != ErrorCode.none:
        detail = f": {message}" if message else ""
        raise ToolError(f"{what}: {ErrorCode(code).name.upper()}{detail}")
