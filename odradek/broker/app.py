"""Runs a broker: recovers its logs, registers with the controllers and catches up with the
metadata log, then serves the Kafka listener and runs the log's background work (retention,
time-based flush, recovery-point checkpoints) off the loop. Also the combined `odradek dev`
process: one controller and one broker."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry

from odradek.broker.apis import API_TABLE
from odradek.broker.authorization import authorizer_for
from odradek.broker.broker import Broker
from odradek.broker.connection_limits import ConnectionLimits, ListenerGate, resolve_overrides
from odradek.broker.controller_client import ControllerClient, ControllerUnavailable
from odradek.broker.dispatch import Dispatcher
from odradek.broker.file_deletion import delete_later
from odradek.broker.group_runtime import GroupCoordinatorRuntime
from odradek.broker.lifecycle import BrokerLifecycle, MetadataProgress, Registration
from odradek.broker.listener_security import ListenerSecurity
from odradek.broker.log_cleaner import LogCleaner
from odradek.broker.metadata_applier import MetadataApplier
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.producer_ids import ProducerIdManager
from odradek.broker.quota_manager import QuotaManager
from odradek.broker.replica_manager import IsrChangeRequest, ReplicaManager
from odradek.broker.server import KafkaConnection
from odradek.broker.services import BrokerServices
from odradek.broker.share_fetch import SharePartitionManager
from odradek.broker.share_persister import StatePersister
from odradek.broker.share_runtime import ShareCoordinatorRuntime
from odradek.broker.throttling import throttle
from odradek.broker.txn_markers import MarkerWriter
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError, parse_voters
from odradek.config.listeners import (
    BROKER,
    COMBINED,
    WILDCARD,
    Endpoint,
    Roles,
    resolve,
    with_bound_ports,
)
from odradek.log.segment_swap import SwapHook
from odradek.metadata.image import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from odradek.net.grpc_tls import ControllerChannels
from odradek.net.inter_broker import inter_broker_security
from odradek.rpc import controller_pb2 as pb
from odradek.runtime.clock import now_ms
from odradek.runtime.service import every, run_service, start_metrics
from odradek.security.scram import ScramCredential, ScramMechanism, stored_credential

log = logging.getLogger("odradek.broker.app")
UNFENCE_POLL_S = 0.01
STORE_CHECK_INTERVAL_MS = 1000
"""How often TLS listeners look for changed key and trust store files."""
IDLE_CHECK_MS = 1000
SHUTDOWN_STEP_S = 5.0
"""How long each step of a shutdown after the controlled shutdown may take: well within
compose's and Kubernetes' grace periods, so that a step that hangs is logged, not killed."""
"""How often idle connections are looked for, at most (Kafka checks on every poll)."""


async def _close_idle(limits: ConnectionLimits,
                      listeners: Iterable[set[KafkaConnection]]) -> None:
    for connections in listeners:
        limits.close_idle(connections)


class BrokerApp:
    def __init__(self, config: BrokerConfig, roles: Roles = BROKER,
                 generate_cluster_id: bool = False,
                 at_swap_point: SwapHook | None = None) -> None:
        """`roles`: this process's (a combined node also runs a controller);
        `at_swap_point` is a crash test's hook into the log cleaner's swaps."""
        self.listeners = resolve(config, roles, bool(config["controller.quorum.voters"]))
        self.config = config
        self.at_swap_point = at_swap_point
        self.security = {endpoint.name: ListenerSecurity(config, endpoint, self._scram_credential)
                         for endpoint in self.listeners.broker}
        """How each Kafka listener's connections are secured (checked before anything is
        written)."""
        self.controller_channels = ControllerChannels.of(config, self.listeners)
        """How the broker reaches the controllers (checked before anything is written)."""
        _, inter_broker = inter_broker_security(config)
        self.broker = Broker(config, self.listeners.inter_broker, generate_cluster_id,
                             inter_broker)
        self.broker.metrics.register_metadata(lambda: self.broker.metadata_offset)
        self._last_flush_ms: dict[tuple[str, int], int] = {}
        self._sockets: dict[str, socket.socket] = {}
        self._lifecycle: BrokerLifecycle | None = None
        self._phase = "recovering its logs"
        """Why the broker is not ready, or "" while it serves."""

    def _scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        record = self.broker.metadata.scram_credentials.get((user, mechanism.type_id))
        return stored_credential(record) if record is not None else None

    def readiness(self) -> str | None:
        """Ready (None) once registered, caught up with the metadata log and unfenced, and
        until it starts shutting down; the reason otherwise."""
        lifecycle = self._lifecycle
        if self._phase or lifecycle is None:
            return self._phase or "starting"
        if lifecycle.fenced:
            return "fenced by the controller"
        return None

    @property
    def registry(self) -> CollectorRegistry:
        return self.broker.registry

    @property
    def bind_host(self) -> str:
        """The first Kafka listener's bind address (the metrics endpoint's too)."""
        return self.listeners.broker[0].host or WILDCARD

    def bind(self) -> None:
        """Take every Kafka listener's port now (they listen once the broker is unfenced), so
        that nothing else grabs them while the broker starts up."""
        if self._sockets:
            return
        try:
            for endpoint in self.listeners.broker:
                host = endpoint.host or WILDCARD
                sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
                self._sockets[endpoint.name] = sock
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, endpoint.port))
        except OSError:
            self._close_sockets()
            raise

    def _close_sockets(self) -> None:
        for sock in self._sockets.values():
            sock.close()
        self._sockets.clear()

    def advertised(self) -> tuple[Endpoint, ...]:
        """The endpoints to register: port 0 corrected to the bound port, an empty host
        resolved to this machine's name, as Kafka does (a name lookup: off the loop)."""
        ports = {name: sock.getsockname()[1] for name, sock in self._sockets.items()}
        return tuple(replace(e, host=e.host or socket.getfqdn())
                     for e in with_bound_ports(self.listeners.advertised, ports))

    async def run(self, stop: asyncio.Event, voters: Mapping[int, tuple[str, int]]) -> None:
        """Serve until `stop`; `voters` are the controllers to register with."""
        loop = asyncio.get_running_loop()
        broker = self.broker
        config = self.config
        self.bind()
        await loop.run_in_executor(None, broker.load)
        client = ControllerClient(voters, config.integer("controller.quorum.request.timeout.ms"),
                                  config.integer("controller.quorum.retry.backoff.ms"),
                                  self.controller_channels)
        registration = Registration(broker.node_id)
        progress = MetadataProgress()
        services = build_services(broker, client, registration, progress)
        applier = MetadataApplier(broker, services.replicas.on_metadata,
                                  [services.groups.refresh_topics, services.txns.refresh_topics,
                                   services.shares.refresh_topics, services.quotas.refresh])
        lifecycle = BrokerLifecycle(
            client, registration, progress, broker.cluster_id,
            await loop.run_in_executor(None, self.advertised),
            config["broker.rack"],  # type: ignore[arg-type]
            config.integer("broker.heartbeat.interval.ms"), applier.apply,
            config.integer("broker.session.timeout.ms"),
        )
        self._lifecycle = lifecycle
        self._phase = "registering and catching up with the metadata log"
        registering = asyncio.create_task(self._join(lifecycle, applier))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({registering, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not registering.done():
            self._phase = "shutting down"
            registering.cancel()
            stopping.cancel()
            await asyncio.gather(registering, return_exceptions=True)
            await lifecycle.shutdown()
            await services.replicas.stop()
            await loop.run_in_executor(None, broker.logs.shutdown)
            self._close_sockets()
            return
        stopping.cancel()
        registering.result()
        if OFFSETS_TOPIC in broker.metadata.topics:
            await services.groups.ensure_loaded()
        if TRANSACTION_STATE_TOPIC in broker.metadata.topics:
            await services.txns.ensure_loaded()
        if SHARE_GROUP_STATE_TOPIC in broker.metadata.topics:
            await services.shares.ensure_loaded()
        services.shares.start_periodic_jobs()
        max_request = config.integer("socket.request.max.bytes")
        listener_connections: dict[str, set[KafkaConnection]] = {
            name: set() for name in self._sockets}
        broker.metrics.register_host(config.log_dirs(), {
            name: partial(len, sockets) for name, sockets in listener_connections.items()})
        limits = ConnectionLimits(config, await loop.run_in_executor(None, resolve_overrides,
                                                                     config),
                                  self.listeners.inter_broker)
        protocols = {e.name: e.security_protocol for e in self.listeners.broker}
        servers = [await self._serve(Dispatcher(services, API_TABLE, name, throttle), max_request,
                                     listener_connections[name], sock, self.security[name],
                                     limits.gate(name), self._pre_auth_cap(protocols[name]))
                   for name, sock in self._sockets.items()]
        tasks = [
            every(config.integer("log.retention.check.interval.ms"), self.enforce_retention),
            every(config.integer("log.flush.scheduler.interval.ms"), self.flush_by_time),
            every(config.integer("log.flush.offset.checkpoint.interval.ms") or 60000,
                  self.checkpoint),
            every(config.integer("offsets.retention.check.interval.ms"),
                  services.groups.expire_offsets),
            every(max(config.integer("replica.lag.time.max.ms") // 2, 1),
                  partial(self.shrink_isrs, services.replicas)),
            every(config.integer("replica.high.watermark.checkpoint.interval.ms"),
                  self.checkpoint_high_watermarks),
            every(config.integer("producer.id.expiration.check.interval.ms"),
                  self.expire_producers),
            every(STORE_CHECK_INTERVAL_MS, self.reload_stores),
            every(max(min(limits.max_idle_ms // 10, IDLE_CHECK_MS), 1), partial(
                _close_idle, limits, listener_connections.values())),
        ]
        cleaner = LogCleaner(broker, self.at_swap_point) if LogCleaner.enabled(config) else None
        if cleaner is not None:
            tasks += cleaner.start()
            broker.metrics.register_cleaner(cleaner.figures, cleaner.dirty_ratio_samples)
        log.info("odradek broker %d serving Kafka on %s (inter-broker listener %s; cluster %s, "
                 "data in %s)", broker.node_id,
                 ", ".join(f"{name} {s.getsockname()[0]}:{s.getsockname()[1]}"
                           for name, s in self._sockets.items()),
                 self.listeners.inter_broker, broker.cluster_id, broker.log_dir)
        self._phase = ""
        try:
            await stop.wait()
        finally:
            self._phase = "shutting down"
            log.info("shutting down")
            services.replicas.stop_replicating()
            await lifecycle.shutdown(self._fenced_in_image)
            for server in servers:
                server.close()
            services.groups.close()
            services.txns.close()
            services.shares.close()
            services.share_partitions.close()
            in_flight = [request for sockets in listener_connections.values() for c in list(sockets)
                         if (request := c.close()) is not None]
            for task in tasks:
                task.cancel()
            await _bounded(asyncio.gather(*tasks, *in_flight, return_exceptions=True),
                           "the broker's tasks and in-flight requests")
            if cleaner is not None:
                cleaner.stop()
            await _bounded(services.replicas.stop(), "the replica fetchers")
            await loop.run_in_executor(None, broker.logs.shutdown)
            log.info("stopped cleanly")

    @staticmethod
    async def _serve(dispatcher: Dispatcher, max_request: int,
                     connections: set[KafkaConnection], sock: socket.socket,
                     security: ListenerSecurity, gate: ListenerGate,
                     pre_auth_cap: int | None) -> asyncio.Server:
        """One listener's server: its connections' requests go to its dispatcher."""
        return await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(dispatcher, max_request, connections,
                                    security.open_session, gate, pre_auth_cap,
                                    dispatcher.services.share_partitions.disconnected),
            sock=sock, backlog=1024, ssl=security.ssl_context)

    async def reload_stores(self) -> None:
        """TLS listeners load changed key and trust store files (for new connections)."""
        for security in self.security.values():
            if security.tls is not None:
                security.tls.check()

    def _pre_auth_cap(self, protocol: str) -> int | None:
        """sasl.server.max.receive.size on SASL listeners, until a connection authenticates."""
        if protocol.startswith("SASL_"):
            return self.config.integer("sasl.server.max.receive.size")
        return None

    def _fenced_in_image(self) -> bool:
        registration = self.broker.metadata.brokers.get(self.broker.node_id)
        return registration is None or registration.fenced

    async def _join(self, lifecycle: BrokerLifecycle, applier: MetadataApplier) -> None:
        """Register, then wait to be unfenced: caught up with the metadata log."""
        await lifecycle.start()
        log.info("waiting to catch up with the metadata log and be unfenced")
        await lifecycle.unfenced.wait()
        registration = self.broker.metadata.brokers.get(self.broker.node_id)
        while registration is None or registration.fenced:
            # the unfencing batch (with its leader elections) is on its way in the stream
            await asyncio.sleep(UNFENCE_POLL_S)
            registration = self.broker.metadata.brokers.get(self.broker.node_id)
        await applier.caught_up()

    async def enforce_retention(self) -> None:
        now = now_ms()
        for (topic, partition), partition_log in list(self.broker.logs.logs()):
            expired = partition_log.retention_candidates(now)
            if not expired:
                continue
            paths = partition_log.remove_segments(expired)
            log.info("retention removed %d segment(s) of %s-%d; log start offset now %d",
                     len(expired), topic, partition, partition_log.log_start_offset)
            delete_later(partition_log, paths)

    async def flush_by_time(self) -> None:
        loop = asyncio.get_running_loop()
        now = now_ms()
        for key, partition_log in list(self.broker.logs.logs()):
            last = self._last_flush_ms.setdefault(key, now)
            if now - last >= partition_log.config.flush_ms:
                self._last_flush_ms[key] = now
                await loop.run_in_executor(None, partition_log.flush)

    async def checkpoint(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.broker.logs.checkpoint)

    async def checkpoint_high_watermarks(self) -> None:
        await asyncio.get_running_loop().run_in_executor(
            None, self.broker.logs.checkpoint_high_watermarks)

    async def expire_producers(self) -> None:
        """Forget producers idle past producer.id.expiration.ms (Kafka's check)."""
        expiration_ms = self.config.integer("producer.id.expiration.ms")
        now = now_ms()
        for _, partition_log in list(self.broker.logs.logs()):
            partition_log.producers.expire(now, expiration_ms)

    async def shrink_isrs(self, replicas: ReplicaManager) -> None:
        replicas.shrink_isrs(now_ms())


def build_services(broker: Broker, client: ControllerClient, registration: Registration,
                   progress: MetadataProgress) -> BrokerServices:
    """The broker's services on its state, each built once, in dependency order."""
    writer = MetadataWriter(client, progress.wait_for_offset)
    replicas = ReplicaManager(broker, partial(_alter_partition, client, registration))
    groups = GroupCoordinatorRuntime(broker, replicas, writer)
    markers = MarkerWriter(broker, replicas, groups.complete_transaction)
    txns = TransactionCoordinatorRuntime(broker, replicas, writer, markers)
    # after the transaction coordinator, which registers the transaction metrics
    producer_ids = ProducerIdManager(partial(_allocate_producer_ids, client, registration),
                                     broker.metrics.producer_ids_allocated.inc)
    quotas = QuotaManager(broker.config, lambda: broker.metadata.client_quotas, now_ms)
    quotas.register(broker.registry)
    shares = ShareCoordinatorRuntime(broker, replicas, writer)
    share_partitions = SharePartitionManager(broker, replicas, StatePersister(broker, shares))
    groups.on_share_member_departed(share_partitions.member_departed)
    groups.initialize_share_partitions_with(share_partitions.persister.initialize)
    return BrokerServices(broker, replicas, writer, producer_ids, groups, txns, markers,
                          quotas, shares, share_partitions, authorizer_for(broker))


async def _alter_partition(client: ControllerClient, registration: Registration,
                           changes: Sequence[IsrChangeRequest]) -> list[tuple[ErrorCode, int]]:
    """One AlterPartition to the active controller with every change: each one's (error
    code, partition epoch after it)."""
    try:
        response = await client.call(lambda stub: stub.AlterPartition, pb.AlterPartitionRequest(
            broker_id=registration.node_id, broker_epoch=registration.broker_epoch,
            partitions=[pb.PartitionIsrChange(
                topic_id=topic_id, partition=partition, leader_epoch=change.leader_epoch,
                partition_epoch=change.partition_epoch, new_isr=list(change.isr))
                for topic_id, partition, change in changes]))
    except ControllerUnavailable:
        return [(ErrorCode.request_timed_out, -1)] * len(changes)
    if response.error.code != ErrorCode.none:
        return [(ErrorCode(response.error.code), -1)] * len(changes)
    return [(ErrorCode(result.error.code), result.partition_epoch)
            for result in response.partitions]


async def _allocate_producer_ids(client: ControllerClient, registration: Registration
                                 ) -> tuple[ErrorCode, int, int]:
    """AllocateProducerIds to the active controller: (error code, first id, count)."""
    try:
        response = await client.call(lambda stub: stub.AllocateProducerIds,
                                     pb.AllocateProducerIdsRequest(
                                         broker_id=registration.node_id,
                                         broker_epoch=registration.broker_epoch))
    except ControllerUnavailable:
        return ErrorCode.request_timed_out, -1, 0
    return ErrorCode(response.error.code), response.first_producer_id, response.count


def run_broker(config: BrokerConfig, prefer_uvloop: bool = True,
               at_swap_point: SwapHook | None = None) -> None:
    """`odradek broker`: a broker of a multi-node cluster."""
    voters_config = config["controller.quorum.voters"]
    if not voters_config:
        raise InvalidConfigError("a broker needs controller.quorum.voters")
    assert isinstance(voters_config, list)
    voters = parse_voters(voters_config)
    app = BrokerApp(config, BROKER, at_swap_point=at_swap_point)

    async def serve(stop: asyncio.Event) -> None:
        start_metrics(app.registry, app.bind_host, config.integer("metrics.port"),
                      app.readiness)
        await app.run(stop, voters)

    run_service(serve, prefer_uvloop, app.registry)


def run_combined(config: BrokerConfig, prefer_uvloop: bool = True,
                 at_swap_point: SwapHook | None = None) -> None:
    """`odradek dev`: one controller voter and one broker in one process."""
    from odradek.controller.app import ControllerApp

    app = BrokerApp(config, COMBINED, generate_cluster_id=True, at_swap_point=at_swap_point)
    controller = ControllerApp(config, app.listeners, app.registry)
    app.controller_channels = controller.channels  # plaintext to an ephemeral controller port

    async def serve(stop: asyncio.Event) -> None:
        app.bind()
        start_metrics(app.registry, app.bind_host, config.integer("metrics.port"),
                      app.readiness)
        controller_stop = asyncio.Event()
        controlling = asyncio.create_task(controller.run(controller_stop))
        ready = asyncio.create_task(controller.ready.wait())
        await asyncio.wait({controlling, ready}, return_when=asyncio.FIRST_COMPLETED)
        if controlling.done():
            ready.cancel()
            controlling.result()
            return
        try:
            await app.run(stop, {controller.node_id: controller.endpoint()})
        finally:
            controller_stop.set()
            await controlling

    run_service(serve, prefer_uvloop, app.registry)


async def _bounded(step: Awaitable[object], what: str) -> None:
    """Wait for one shutdown step, at most SHUTDOWN_STEP_S; past that, log it and go on."""
    try:
        async with asyncio.timeout(SHUTDOWN_STEP_S):
            await step
    except TimeoutError:
        log.warning("shutdown: %s did not finish within %.0f s; going on", what,
                    SHUTDOWN_STEP_S)
