"""The shells' Kafka client against a scripted broker on loopback: concurrent requests to one
broker take turns on one connection (sent at once, their answers would be read as each
other's and fail the correlation check), a failed connection is opened again, and the
cluster layer routes by broker id and by partition leader as Metadata says."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvloop

from odradek.net.kafka_client import (
    BrokerConnection,
    BrokerConnectionError,
    ConnectionPool,
    KafkaCluster,
    NoLeaderError,
    UnknownBrokerError,
)
from odradek.protocol.codec import INT32, build_request, decode_header, encode_response

API_VERSIONS = (18, 0)
NODE_ID = 7
TIMEOUT_S = 5.0


class ScriptedBroker:
    """Answers ApiVersions, and Metadata naming itself as broker 7, the leader of t-0, and
    no leader for t-1. Counts its connections; hangs up after an answer when told to."""

    def __init__(self) -> None:
        self.connections = 0
        self.hang_up_after_answering = False
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = INT32.unpack(await reader.readexactly(4))
                header, _ = decode_header(await reader.readexactly(size))
                writer.write(encode_response(header, self._answer(header.api_key)))
                await writer.drain()
                if self.hang_up_after_answering:
                    self.hang_up_after_answering = False
                    return
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()

    def _answer(self, api_key: int) -> dict[str, Any]:
        if api_key == API_VERSIONS[0]:
            return {"error_code": 0, "api_keys": []}
        return {
            "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port}],
            "cluster_id": "scripted", "controller_id": NODE_ID,
            "topics": [{"error_code": 0, "name": "t", "topic_id": uuid.UUID(int=1),
                        "partitions": [{"error_code": 0, "partition_index": 0,
                                        "leader_id": NODE_ID, "leader_epoch": 0,
                                        "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID],
                                        "offline_replicas": []},
                                       {"error_code": 5, "partition_index": 1,
                                        "leader_id": -1, "leader_epoch": 0,
                                        "replica_nodes": [NODE_ID], "isr_nodes": [],
                                        "offline_replicas": [NODE_ID]}]}],
        }


@contextlib.asynccontextmanager
async def scripted_broker() -> AsyncIterator[ScriptedBroker]:
    scripted = ScriptedBroker()
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0)
    scripted.port = server.sockets[0].getsockname()[1]
    async with server:
        yield scripted


def with_broker(scenario: Callable[[ScriptedBroker], Awaitable[None]]) -> None:
    async def run() -> None:
        async with scripted_broker() as broker:
            await scenario(broker)

    asyncio.run(run())


def api_versions() -> Any:
    return build_request(*API_VERSIONS, {})


def test_requests_to_one_broker_take_turns_on_one_connection() -> None:
    with_broker(_requests_to_one_broker_take_turns_on_one_connection)


async def _requests_to_one_broker_take_turns_on_one_connection(broker: ScriptedBroker) -> None:
    address = ("127.0.0.1", broker.port)
    pool = ConnectionPool("test", TIMEOUT_S)
    try:
        opening = await asyncio.gather(*(pool.send(address, api_versions()) for _ in range(3)))
        reusing = await asyncio.gather(*(pool.send(address, api_versions()) for _ in range(3)))
    finally:
        pool.close()
    assert [a.error_code for a in opening + reusing] == [0] * 6
    assert broker.connections == 1


def test_a_failed_connection_is_opened_again_by_the_next_request() -> None:
    with_broker(_a_failed_connection_is_opened_again_by_the_next_request)


async def _a_failed_connection_is_opened_again_by_the_next_request(broker: ScriptedBroker) -> None:
    address = ("127.0.0.1", broker.port)
    pool = ConnectionPool("test", TIMEOUT_S)
    try:
        broker.hang_up_after_answering = True
        await pool.send(address, api_versions())
        with pytest.raises(BrokerConnectionError, match=f"^127.0.0.1:{broker.port}: "):
            await pool.send(address, api_versions())
        assert (await pool.send(address, api_versions())).error_code == 0
    finally:
        pool.close()
    assert broker.connections == 2


def test_the_cluster_routes_by_broker_id_and_partition_leader() -> None:
    with_broker(_the_cluster_routes_by_broker_id_and_partition_leader)


async def _the_cluster_routes_by_broker_id_and_partition_leader(broker: ScriptedBroker) -> None:
    closed = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    closed_port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()
    bootstrap = [("127.0.0.1", closed_port), ("127.0.0.1", broker.port)]
    async with KafkaCluster(bootstrap, "test", TIMEOUT_S) as cluster:
        assert await cluster.leader("t", 0) == NODE_ID
        assert await cluster.brokers() == {NODE_ID: ("127.0.0.1", broker.port)}
        assert (await cluster.send_to_leader("t", 0, api_versions())).error_code == 0
        with pytest.raises(NoLeaderError, match="t-1 has no leader"):
            await cluster.leader("t", 1)
        with pytest.raises(UnknownBrokerError, match="broker 8 is not in"):
            await cluster.send_to_broker(8, api_versions())
    async with KafkaCluster(bootstrap[:1], "test", TIMEOUT_S) as unreachable:
        with pytest.raises(BrokerConnectionError, match=(
                f"^no bootstrap server answered: 127.0.0.1:{closed_port}: cannot connect")):
            await unreachable.metadata([])


def test_a_connection_the_broker_reset_fails_with_a_connection_error_under_uvloop() -> None:
    """uvloop closes a transport on a reset and raises RuntimeError on a write to it; the
    transaction markers' task died of that when a broker was killed (a transaction stuck in
    its prepared state, CONCURRENT_TRANSACTIONS to its producer ever after)."""
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def scenario() -> None:
        server = await asyncio.start_server(reset, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            connection = await BrokerConnection.connect("127.0.0.1", port, "test", TIMEOUT_S)
            while not connection._writer.transport.is_closing():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # uvloop closes the handle a few loop turns later
            with pytest.raises(BrokerConnectionError, match="the broker closed the connection"):
                await connection.send(api_versions(), TIMEOUT_S)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
