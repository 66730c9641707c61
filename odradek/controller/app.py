"""Runs a controller: recovers the Raft log and snapshot from disk, joins the quorum over gRPC,
serves brokers (registration, heartbeats, the metadata stream, admin) and fences brokers whose
sessions expire."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError, parse_voters
from odradek.config.listeners import CONTROLLER, SSL, WILDCARD, Listeners, resolve
from odradek.controller.machine import ControllerMachine
from odradek.controller.metrics import ControllerMetrics
from odradek.controller.raft_driver import RaftDriver
from odradek.controller.raft_store import RaftLogStore
from odradek.controller.raft_transport import (
    ChannelStats,
    RaftPeers,
    RaftTransportServicer,
    channel_options,
)
from odradek.controller.service import ControllerService, NotController
from odradek.exporter.cluster import ClusterExporter
from odradek.log.meta_properties import read_bootstrap, read_or_create_cluster_id
from odradek.metadata.controller import QuorumController
from odradek.metadata.image import METADATA_TOPIC, MetadataError
from odradek.metadata.records import FenceBrokerRecord, MetadataRecord, encode_batch
from odradek.net.grpc_tls import ControllerChannels, server_credentials
from odradek.net.inter_broker import inter_broker_security
from odradek.net.tls import settings
from odradek.raft import RaftConfig, RaftNode
from odradek.raft.types import NO_NODE
from odradek.rpc import controller_pb2_grpc, raft_pb2_grpc
from odradek.runtime.clock import now_ms
from odradek.runtime.service import every, run_service, start_metrics

log = logging.getLogger("odradek.controller")

TICK_MS = 50
"""One Raft tick; election timeouts and heartbeats are counted in ticks."""
HEARTBEAT_TICKS = 2
FENCING_CHECK_MS = 250
RESIGN_TIMEOUT_S = 5.0



def metadata_dir(config: BrokerConfig) -> Path:
    base = config["metadata.log.dir"]
    root = Path(base) if isinstance(base, str) else config.log_dirs()[0]
    return root.resolve() / f"{METADATA_TOPIC}-0"


class ControllerApp:
    """One Raft voter. `voters` None means a one-voter quorum on this node's listener (the
    combined `odradek dev` mode)."""

    def __init__(self, config: BrokerConfig, listeners: Listeners,
                 registry: CollectorRegistry | None = None) -> None:
        """`listeners`: this node's, checked for its roles (see listeners.resolve)."""
        self.config = config
        self.node_id = config.integer("node.id")
        configured_voters = config["controller.quorum.voters"]
        if configured_voters:
            assert isinstance(configured_voters, list)
            self.voters = parse_voters(configured_voters)
            if self.node_id not in self.voters:
                raise InvalidConfigError(
                    f"node.id {self.node_id} is not in controller.quorum.voters"
                )
        else:
            self.voters = {}
        self.inter_broker_listener, self.inter_broker_security = inter_broker_security(config)
        """How this controller's exporter reaches the brokers: as they reach each other."""
        listener = listeners.controller
        self.bind = (listener.host or WILDCARD, listener.port) if listener else ("127.0.0.1", 0)
        self.credentials = (server_credentials(settings(config, listener.name))
                            if listener and listener.security_protocol == SSL else None)
        """The controller listener's TLS (None: plaintext)."""
        self.channels = ControllerChannels.of(config, listeners) if listener \
            else ControllerChannels()
        """How this node reaches controllers: other voters, and its own broker when combined
        (which, without a controller listener, reaches its controller in plaintext)."""
        self.registry = registry or CollectorRegistry()
        self.directory = metadata_dir(config)
        self.cluster_id = read_or_create_cluster_id(
            self.directory.parent, self.node_id, config["cluster.id"],  # type: ignore[arg-type]
            generate=len(self.voters) <= 1,
        )
        self.bootstrap = read_bootstrap(self.directory.parent)
        """The records `storage format` left for the first active controller (KIP-900)."""
        self.port = 0
        self.ready = asyncio.Event()
        """Set once the gRPC server listens (then `port` is the bound port)."""
        self._driver: RaftDriver | None = None
        self._stopping = False

    def readiness(self) -> str | None:
        """Ready (None) while this voter knows the quorum's leader; the reason otherwise."""
        driver = self._driver
        if self._stopping:
            return "shutting down"
        if driver is None:
            return "starting"
        if driver.leader == NO_NODE:
            return "no quorum leader known"
        return None

    def endpoint(self) -> tuple[str, int]:
        host = self.bind[0] if self.bind[0] != "0.0.0.0" else "127.0.0.1"
        return host, self.port

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        store = RaftLogStore(self.directory)
        persisted = await loop.run_in_executor(None, store.load)
        session_ms = self.config.integer("broker.session.timeout.ms")
        unclean = bool(self.config["unclean.leader.election.enable"])
        machine = ControllerMachine(lambda: QuorumController(session_ms, unclean, self.config))
        if persisted.snapshot is not None:
            machine.restore(persisted.snapshot)
        server = grpc.aio.server(options=channel_options())
        address = f"{self.bind[0]}:{self.bind[1]}"
        self.port = (server.add_secure_port(address, self.credentials) if self.credentials
                     else server.add_insecure_port(address))
        if self.port == 0:
            raise OSError(f"cannot listen on {self.bind[0]}:{self.bind[1]}")
        voters = self.voters or {self.node_id: self.endpoint()}
        node = RaftNode(
            RaftConfig(
                node_id=self.node_id,
                voters=frozenset(voters),
                election_ticks=self.config.integer("controller.quorum.election.timeout.ms")
                // TICK_MS,
                heartbeat_ticks=HEARTBEAT_TICKS,
            ),
            random.Random(),
            persisted.hard_state,
            persisted.snapshot,
            persisted.entries,
        )
        channel = ChannelStats()
        peers = RaftPeers(
            {i: address for i, address in voters.items() if i != self.node_id},
            self.cluster_id,
            self.config.integer("controller.quorum.request.timeout.ms"),
            self.config.integer("controller.quorum.retry.backoff.ms"),
            channel,
            self.channels,
        )
        driver = RaftDriver(
            node, store, machine, peers, TICK_MS,
            self.config.integer("metadata.log.max.record.bytes.between.snapshots"),
            on_active=lambda: self._become_active(driver, machine),
        )
        service = ControllerService(
            machine, driver, self.cluster_id, voters,
            self.config.integer("controller.quorum.request.timeout.ms"),
        )
        raft_pb2_grpc.add_RaftTransportServicer_to_server(
            RaftTransportServicer(self.node_id, self.cluster_id, driver.step, channel), server
        )
        controller_pb2_grpc.add_ControllerServicer_to_server(service, server)
        ControllerMetrics(self.registry, driver, machine, channel)
        exporter = ClusterExporter(self.registry, driver, machine, loop,
                                   self.inter_broker_listener, self.inter_broker_security)
        self._driver = driver
        await server.start()
        self.ready.set()
        running = asyncio.create_task(driver.run())
        fencing = every(FENCING_CHECK_MS, lambda: self._fence_expired(service, machine))
        balancing = every(self.config.integer("leader.imbalance.check.interval.seconds") * 1000,
                          lambda: self._balance_leaders(service, machine))
        log.info("odradek controller %d serving gRPC%s on %s:%d (cluster %s, quorum %s, "
                 "metadata log in %s)", self.node_id,
                 " over TLS" if self.credentials else "", self.bind[0], self.port, self.cluster_id,
                 _describe(voters), self.directory)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        self._stopping = True
        failure = running.exception() if running.done() else None
        if failure is not None:
            log.critical("the Raft driver failed: stopping", exc_info=failure)
        try:
            if failure is None:
                await self._resign(driver, peers.reachable())
        finally:
            log.info("controller shutting down")
            stopping.cancel()
            await server.stop(grace=0.5)
            for task in (running, fencing, balancing):
                task.cancel()
            await asyncio.gather(running, fencing, balancing, return_exceptions=True)
            await peers.close()
            exporter.close()
            self.registry.unregister(exporter)
            log.info("controller stopped")
        if failure is not None:
            raise SystemExit(1)

    def _become_active(self, driver: RaftDriver, machine: ControllerMachine) -> None:
        """Sessions restart; the first active controller of an empty metadata log writes the
        bootstrap records first, as Kafka's writes its bootstrap.checkpoint."""
        machine.controller.become_active(now_ms())
        if not self.bootstrap or machine.holds_records:
            return
        written = driver.propose(encode_batch(self.bootstrap))
        written.add_done_callback(partial(_bootstrapped, len(self.bootstrap)))

    @staticmethod
    async def _resign(driver: RaftDriver, reachable: list[int]) -> None:
        """An active controller that is shutting down hands leadership to a reachable voter
        first, as Kafka's does, so that the quorum does not wait out an election timeout."""
        if not driver.active or not reachable:
            return
        driver.transfer_leadership(reachable[0])
        own = driver.node.node_id
        deadline = asyncio.get_running_loop().time() + RESIGN_TIMEOUT_S
        while driver.leader in (own, NO_NODE) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(TICK_MS / 1000)
        if driver.leader in (own, NO_NODE):
            log.warning("resigning: no successor within %.0fs; the quorum elects one",
                        RESIGN_TIMEOUT_S)
        else:
            log.info("resigned: controller %d now leads", driver.leader)

    @staticmethod
    async def _fence_expired(service: ControllerService, machine: ControllerMachine) -> None:
        if not service.driver.active:
            return
        def fence() -> tuple[list[MetadataRecord], list[int]]:
            records = machine.controller.tick(now_ms())
            return records, [r.broker_id for r in records if isinstance(r, FenceBrokerRecord)]

        try:
            fenced = await service.write(fence)
        except (NotController, MetadataError, TimeoutError) as failure:
            log.warning("fencing expired brokers failed: %r", failure)
            return
        for broker_id in fenced:
            log.info("Fencing broker %d because its session has timed out.", broker_id)


    async def _balance_leaders(self, service: ControllerService,
                               machine: ControllerMachine) -> None:
        """auto.leader.rebalance.enable: preferred replicas take their leaderships back."""
        if not service.driver.active or not self.config["auto.leader.rebalance.enable"]:
            return
        percentage = self.config.integer("leader.imbalance.per.broker.percentage")
        try:
            await service.write(lambda: (machine.controller.balance_leaders(percentage), None))
        except (NotController, MetadataError, TimeoutError) as failure:
            log.warning("rebalancing leaders failed: %r", failure)


def _bootstrapped(count: int, written: asyncio.Future[int]) -> None:
    if written.cancelled() or written.exception() is not None:
        log.warning("the bootstrap records were not written: %r",
                    None if written.cancelled() else written.exception())
        return
    log.info("wrote %d bootstrap record(s) at metadata offset %d", count, written.result())


def _describe(voters: Mapping[int, tuple[str, int]]) -> str:
    return ",".join(f"{i}@{host}:{port}" for i, (host, port) in sorted(voters.items()))


def run_controller(config: BrokerConfig, prefer_uvloop: bool = True) -> None:
    app = ControllerApp(config, resolve(config, CONTROLLER))

    async def serve(stop: asyncio.Event) -> None:
        start_metrics(app.registry, app.bind[0], config.integer("metrics.port"),
                      app.readiness)
        await app.run(stop)

    run_service(serve, prefer_uvloop, app.registry)
