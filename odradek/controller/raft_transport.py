"""Raft messages between controllers over gRPC: one sender task per peer batches what the
driver emits; the servicer hands what arrives to the driver. Best effort by design."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import grpc

from odradek.controller.raft_codec import message_from_proto, message_to_proto
from odradek.net.grpc_tls import ControllerChannels
from odradek.raft.types import Message
from odradek.rpc import raft_pb2, raft_pb2_grpc

log = logging.getLogger("odradek.controller.transport")

MAX_QUEUED = 4096
"""Messages kept per unreachable peer; older ones are dropped (Raft resends what matters)."""
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


def channel_options() -> list[tuple[str, int]]:
    """Large messages (snapshots), and the brokers' keepalive pings allowed."""
    return [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 1000),
        ("grpc.http2.max_ping_strikes", 0),
    ]


@dataclass
class ChannelStats:
    """Running totals of this node's Raft channel, for Kafka's raft-channel-metrics: calls
    made to peers and their answers, bytes of the Raft messages sent and received."""

    requests: int = 0
    responses: int = 0
    outgoing_bytes: int = 0
    incoming_bytes: int = 0


class _Peer:
    def __init__(self, node_id: int, address: tuple[str, int], cluster_id: str,
                 timeout_s: float, backoff_s: float, stats: ChannelStats,
                 channels: ControllerChannels) -> None:
        self.node_id = node_id
        self.address = address
        self.cluster_id = cluster_id
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.channels = channels
        self.channel: grpc.aio.Channel | None = None
        self.generation = 0
        """The generation of `channels` the channel was opened in."""
        self.queue: collections.deque[Message] = collections.deque(maxlen=MAX_QUEUED)
        self.ready = asyncio.Event()
        self.reachable = True
        self.stats = stats

    def _unreachable(self, reason: str) -> None:
        if self.reachable:
            log.warning("controller %d unreachable: %s", self.node_id, reason)
        self.reachable = False

    async def _stub(self) -> raft_pb2_grpc.RaftTransportStub | None:
        """The peer's stub, its channel opened on first use and again after the client's
        stores were reloaded; None (after a backoff) while it cannot be opened."""
        generation = self.channels.refresh()
        if self.channel is not None and generation != self.generation:
            await self.channel.close()
            self.channel = None
        if self.channel is None:
            try:
                self.channel = await self.channels.open(*self.address, channel_options())
            except OSError as error:
                self._unreachable(repr(error))
                await asyncio.sleep(self.backoff_s)
                return None
            self.generation = generation
        return raft_pb2_grpc.RaftTransportStub(self.channel)

    async def run(self) -> None:
        while True:
            await self.ready.wait()
            self.ready.clear()
            while self.queue:
                stub = await self._stub()
                if stub is None:
                    continue
                batch = raft_pb2.RaftBatch(cluster_id=self.cluster_id, messages=[
                    message_to_proto(self.queue.popleft()) for _ in range(len(self.queue))])
                self.stats.requests += 1
                self.stats.outgoing_bytes += batch.ByteSize()
                try:
                    await stub.Send(batch, timeout=self.timeout_s)
                except grpc.aio.AioRpcError as error:
                    self._unreachable(error.code().name)
                    await asyncio.sleep(self.backoff_s)
                    continue
                self.stats.responses += 1
                if not self.reachable:
                    log.info("controller %d reachable again", self.node_id)
                self.reachable = True


class RaftPeers:
    """The outbox of the Raft driver."""

    def __init__(self, addresses: Mapping[int, tuple[str, int]], cluster_id: str,
                 timeout_ms: int, backoff_ms: int, stats: ChannelStats,
                 channels: ControllerChannels) -> None:
        self._peers = {
            node_id: _Peer(node_id, address, cluster_id, timeout_ms / 1000,
                           max(backoff_ms, 50) / 1000, stats, channels)
            for node_id, address in addresses.items()
        }
        self._tasks = [asyncio.create_task(peer.run()) for peer in self._peers.values()]

    def reachable(self) -> list[int]:
        """Peers whose last call went through."""
        return sorted(i for i, peer in self._peers.items() if peer.reachable)

    def send(self, messages: list[Message]) -> None:
        for message in messages:
            peer = self._peers.get(message.target)
            if peer is None:
                log.warning("raft message for unknown node %d dropped", message.target)
                continue
            peer.queue.append(message)
            peer.ready.set()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(peer.channel.close() for peer in self._peers.values()
                               if peer.channel is not None))


class RaftTransportServicer(raft_pb2_grpc.RaftTransportServicer):
    def __init__(self, node_id: int, cluster_id: str, step: Callable[[Message], None],
                 stats: ChannelStats) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.step = step
        self.stats = stats

    async def Send(  # noqa: N802 - gRPC method name
        self, request: raft_pb2.RaftBatch, context: grpc.aio.ServicerContext
    ) -> raft_pb2.RaftAck:
        if request.cluster_id != self.cluster_id:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"cluster id {request.cluster_id!r} is not this quorum's {self.cluster_id!r}",
            )
        self.stats.incoming_bytes += request.ByteSize()
        for wire in request.messages:
            try:
                message = message_from_proto(wire)
            except KeyError:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown message type")
            if message.target != self.node_id:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"message for node {message.target} reached node {self.node_id}",
                )
            self.step(message)
        return raft_pb2.RaftAck()
