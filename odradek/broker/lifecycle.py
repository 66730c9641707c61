"""The broker's life with the controllers: register, heartbeat, follow the committed metadata
log into the broker's image, and, on shutdown, ask to be fenced (controlled shutdown).

A new broker is fenced; it is unfenced once it has applied the metadata log up to its own
registration, so heartbeats go out quickly until then and every heartbeat interval after."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
from kio.schema.errors import ErrorCode

from odradek.broker.controller_client import ControllerClient, ControllerUnavailable
from odradek.config.listeners import Endpoint
from odradek.metadata.records import MetadataRecord, decode_batch
from odradek.rpc import controller_pb2 as pb

log = logging.getLogger("odradek.broker.lifecycle")

CATCH_UP_HEARTBEAT_S = 0.01
"""Heartbeats until first unfenced, catching up with the metadata log: Kafka's 10 ms
(STARTING); a broker fenced later heartbeats at its interval, as Kafka's does once RUNNING."""
SHUTDOWN_HEARTBEAT_S = 0.05
"""How often a controlled shutdown heartbeats until the controller lets the broker go (Kafka's
first is 50 ms after the last): a lone broker is let go on the second. Each heartbeat scans
the partitions at the controller, so not as often as while catching up."""
SHUTDOWN_POLL_S = 0.05
"""How often a controlled shutdown then looks for this broker fenced in the image."""
SHUTDOWN_WAIT_S = 5.0
"""The least a controlled shutdown waits for the controller; it waits at least a session
timeout and a heartbeat interval, for the controller waits for every unfenced broker, and a
paused or killed one is fenced only when its session expires."""
_REREGISTER = {ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered}

ApplyMetadata = Callable[[list[MetadataRecord], int, bool], Awaitable[None]]
"""(records, offset, is_snapshot): apply a committed batch, or replace the image."""


@dataclass(slots=True)
class Registration:
    """This broker's registration with the controllers, which calls to them carry."""

    node_id: int
    broker_epoch: int = -1
    """The epoch the last registration got (-1 before the first)."""


class MetadataProgress:
    """How far this broker has applied the metadata log, and who waits for it to get further
    (admin writes wait for their records)."""

    def __init__(self) -> None:
        self.offset = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def wait_for_offset(self, offset: int, timeout_s: float) -> None:
        """Until this broker has applied the metadata log up to `offset` (or the timeout)."""
        if self.offset >= offset:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, future))
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            log.warning("metadata offset %d not reached in %.1fs (at %d)", offset, timeout_s,
                        self.offset)

    def advance(self, offset: int) -> None:
        self.offset = offset
        waiting = []
        for wanted, future in self._waiters:
            if wanted <= self.offset:
                if not future.done():
                    future.set_result(None)
            elif not future.done():
                waiting.append((wanted, future))
        self._waiters = waiting


class BrokerLifecycle:
    def __init__(self, client: ControllerClient, registration: Registration,
                 progress: MetadataProgress, cluster_id: str, endpoints: Sequence[Endpoint],
                 rack: str | None, heartbeat_ms: int, apply: ApplyMetadata,
                 session_timeout_ms: int) -> None:
        """`endpoints`: the broker's advertised listeners, registered with the controller."""
        self.client = client
        self.registration = registration
        self.progress = progress
        self.cluster_id = cluster_id
        self.node_id = registration.node_id
        self.endpoints, self.rack = tuple(endpoints), rack
        self.heartbeat_s = heartbeat_ms / 1000
        self.shutdown_wait_s = max(SHUTDOWN_WAIT_S, (session_timeout_ms + heartbeat_ms) / 1000)
        self.apply = apply
        self.incarnation_id = str(uuid.uuid4())
        self.fenced = True
        self.unfenced = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._shutting_down = False

    async def start(self) -> None:
        """Register, then heartbeat and follow the metadata log in the background."""
        await self._register()
        self._tasks = [asyncio.create_task(self._follow()), asyncio.create_task(self._beat())]

    async def _register(self) -> None:
        request = pb.BrokerRegistrationRequest(
            cluster_id=self.cluster_id, broker_id=self.node_id,
            incarnation_id=self.incarnation_id, rack=self.rack,
            endpoints=[pb.BrokerEndpoint(name=e.name, host=e.host, port=e.port,
                                         security_protocol=e.security_protocol)
                       for e in self.endpoints],
        )
        backoff = self.client.backoff_s
        while True:
            try:
                response = await self.client.call(lambda s: s.RegisterBroker, request)
            except ControllerUnavailable as error:
                log.warning("registration: %s; retrying", error)
                continue
            if response.error.code == ErrorCode.none:
                self.registration.broker_epoch = response.broker_epoch
                log.info("registered with the controller %d as broker %d, epoch %d",
                         self.client.current, self.node_id, self.registration.broker_epoch)
                return
            if response.error.code == ErrorCode.inconsistent_cluster_id:
                raise SystemExit(f"registration refused: {response.error.message}")
            log.warning("registration refused (%s): %s; retrying",
                        ErrorCode(response.error.code).name, response.error.message)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval_s())
            try:
                await self._heartbeat()
            except Exception:  # without heartbeats the controller fences this broker
                log.exception("heartbeat failed; the next one goes out as usual")

    def heartbeat_interval_s(self) -> float:
        return self.heartbeat_s if self.unfenced.is_set() else CATCH_UP_HEARTBEAT_S

    async def _shutdown_heartbeat(self) -> bool:
        """One heartbeat of a controlled shutdown: whether the controller let this broker go.
        A failed one is sent again within the wait, as Kafka's broker keeps heartbeating."""
        try:
            response = await self._heartbeat()
        except Exception:  # the shutdown goes on, and the broker's own after it
            log.exception("heartbeat failed during controlled shutdown")
            return False
        return response is not None and response.should_shutdown

    async def _heartbeat(self) -> pb.BrokerHeartbeatResponse | None:
        request = pb.BrokerHeartbeatRequest(
            broker_id=self.node_id, broker_epoch=self.registration.broker_epoch,
            current_metadata_offset=self.progress.offset, want_fence=False,
            want_shutdown=self._shutting_down,
        )
        try:
            response = await self.client.call(lambda s: s.BrokerHeartbeat, request)
        except ControllerUnavailable as error:
            log.warning("heartbeat: %s", error)
            return None
        if response.error.code in _REREGISTER:
            log.warning("heartbeat refused (%s): registering again",
                        ErrorCode(response.error.code).name)
            await self._register()
            return None
        if response.error.code != ErrorCode.none:
            log.warning("heartbeat refused (%s): %s", ErrorCode(response.error.code).name,
                        response.error.message)
            return None
        if response.is_fenced != self.fenced:
            log.info("broker %d is now %s", self.node_id,
                     "fenced" if response.is_fenced else "unfenced")
        self.fenced = response.is_fenced
        if not self.fenced:
            self.unfenced.set()
        return response

    async def _follow(self) -> None:
        """Stream committed batches from the current controller; on a broken stream, or when
        calls move to another controller, resume from the last applied offset there."""
        backoff = self.client.backoff_s
        while True:
            self.client.switched.clear()
            streaming = asyncio.create_task(self._stream())
            switched = asyncio.create_task(self.client.switched.wait())
            try:
                await asyncio.wait({streaming, switched}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                streaming.cancel()
                switched.cancel()
            await asyncio.gather(streaming, switched, return_exceptions=True)
            if streaming.done() and not streaming.cancelled() and streaming.exception():
                log.debug("metadata stream from controller %d broke: %r", self.client.current,
                          streaming.exception())
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
            else:
                backoff = self.client.backoff_s

    async def _stream(self) -> None:
        try:
            stub = await self.client.stub()
        except OSError:
            self.client.redirect(None)
            raise
        stream = stub.FetchMetadata(
            pb.MetadataFetchRequest(from_offset=self.progress.offset)
        )
        try:
            async for batch in stream:
                # shielded: a batch is applied and its offset recorded together, never half
                await asyncio.shield(self._apply_batch(batch))
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNAVAILABLE:
                self.client.redirect(None)
            raise
        finally:
            stream.cancel()

    async def _apply_batch(self, batch: pb.MetadataBatch) -> None:
        if batch.offset <= self.progress.offset and not batch.snapshot:
            return
        records = decode_batch(batch.records) if batch.records else []
        await self.apply(records, batch.offset, batch.snapshot)
        self.progress.advance(batch.offset)

    async def shutdown(self, fenced_in_image: Callable[[], bool] = lambda: True) -> None:
        """Controlled shutdown: heartbeat wanting to shut down until the controller says to
        (it first moves this broker's leaderships and waits for the other brokers to learn
        of it: odradek/metadata/controller.py), and keep following the metadata until
        `fenced_in_image()` (the broker has handed its partitions over and answers
        NOT_LEADER_OR_FOLLOWER for them), then stop."""
        following, beating = self._tasks or (None, None)
        if beating is not None:
            beating.cancel()
            await asyncio.gather(beating, return_exceptions=True)
        if self.registration.broker_epoch >= 0:
            self._shutting_down = True
            let_go = False
            try:
                async with asyncio.timeout(self.shutdown_wait_s):
                    while not await self._shutdown_heartbeat():
                        await asyncio.sleep(SHUTDOWN_HEARTBEAT_S)
                    let_go = True
                    while not fenced_in_image():
                        await asyncio.sleep(SHUTDOWN_POLL_S)
            except TimeoutError:
                pass
            if not let_go:
                log.warning("controlled shutdown not confirmed by the controller")
        if following is not None:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
        await self.client.close()
