"""The mirror reads a source group's committed offsets with its own client
(odradek/mirror/clients.py `ClusterClient.group_offsets`), not librdkafka's
ListConsumerGroupOffsets, which crashes the process when the coordinator answers that it
moved (CI: the mirror died of SIGSEGV when a cluster stopped). Against a scripted
coordinator on loopback: the offsets as answered, and NOT_COORDINATOR as a call to retry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from odradek.mirror.clients import ClusterClient, ClusterHealth, ClusterUnavailable
from odradek.mirror.translation import GroupOffset
from odradek.net.kafka_client import KafkaCluster
from odradek.protocol.codec import INT32, decode_header, encode_response

FIND_COORDINATOR, OFFSET_FETCH = 10, 9


class ScriptedCoordinator:
    """Answers FindCoordinator naming itself, and OffsetFetch with `group_error` or one
    committed offset (and a partition without one); hangs up on anything else."""

    def __init__(self) -> None:
        self.port = 0
        self.group_error = ErrorCode.none

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = INT32.unpack(await reader.readexactly(4))
                header, _ = decode_header(await reader.readexactly(size))
                if header.api_key not in (FIND_COORDINATOR, OFFSET_FETCH):
                    return  # librdkafka's clients of the ClusterClient: not served here
                writer.write(encode_response(header, self._answer(header.api_key)))
                await writer.drain()
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()

    def _answer(self, api_key: int) -> dict[str, Any]:
        if api_key == FIND_COORDINATOR:
            return {"throttle_time_ms": 0, "coordinators": [{
                "key": "g", "node_id": 1, "host": "127.0.0.1", "port": self.port,
                "error_code": 0, "error_message": None}]}
        return {"throttle_time_ms": 0, "groups": [{
            "group_id": "g", "error_code": self.group_error, "topics": [] if self.group_error
            else [{"name": "orders", "partitions": [
                {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3,
                 "metadata": "m", "error_code": 0},
                {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": "", "error_code": 0}]}]}]}


@asynccontextmanager
async def source_cluster() -> AsyncIterator[tuple[ScriptedCoordinator, ClusterClient,
                                                  ClusterHealth]]:
    scripted = ScriptedCoordinator()
    server = await asyncio.start_server(scripted.serve, "127.0.0.1", 0)
    scripted.port = server.sockets[0].getsockname()[1]
    bootstrap = f"127.0.0.1:{scripted.port}"
    health = ClusterHealth()
    client = ClusterClient("east", {"bootstrap.servers": bootstrap},
                           {"bootstrap.servers": bootstrap}, health,
                           KafkaCluster([("127.0.0.1", scripted.port)], "test", 5.0))
    async with server:
        try:
            yield scripted, client, health
        finally:
            client.close()


def test_the_offsets_the_coordinator_answers() -> None:
    async def scenario() -> dict[tuple[str, int], GroupOffset]:
        async with source_cluster() as (_, client, _):
            return await client.group_offsets("g")

    assert asyncio.run(scenario()) == {("orders", 0): GroupOffset(42, "m")}


def test_a_coordinator_that_moved_is_a_call_to_retry() -> None:
    async def scenario() -> dict[str, str]:
        async with source_cluster() as (scripted, client, health):
            scripted.group_error = ErrorCode.not_coordinator
            with pytest.raises(ClusterUnavailable, match="offsets of group g: NOT_COORDINATOR"):
                await client.group_offsets("g")
            return health.down()

    assert asyncio.run(scenario()) == {}, "the cluster answered: it is reachable"
