"""`odradek mirror`: the process. For every pair of clusters the config enables (and whose
target `--clusters` names) it runs MM2's three connectors' work: heartbeats, the target's
topics (then the data path, `FlowReplicator`, over them), the target's topic ACLs and
checkpoints. Each periodic job
backs off while a cluster is unreachable; SIGTERM stops the data path after its commit and
flushes what the jobs produced. A job that finds the configuration cannot work (a
MirrorConfigError, such as a topic the target refuses to create as configured) stops the
mirror the same way, and `odradek mirror` reports it in one line with exit status 2."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from confluent_kafka import KafkaException
from prometheus_client import CollectorRegistry

from odradek.mirror.acl_sync import TopicAclSync
from odradek.mirror.backoff import Backoff
from odradek.mirror.checkpoints import CheckpointEmitter, CheckpointLatency, OffsetSyncReader
from odradek.mirror.client_security import flow_librdkafka_config, flow_security
from odradek.mirror.clients import ClusterClient, ClusterHealth, ClusterUnavailable
from odradek.mirror.config import Flow, MirrorConfig, MirrorConfigError, Side
from odradek.mirror.heartbeats import HeartbeatEmitter
from odradek.mirror.producer import ProducerError
from odradek.mirror.reader import ReadError
from odradek.mirror.replicator import REQUEST_TIMEOUT_S, FlowReplicator, addresses
from odradek.mirror.topic_sync import TopicSync
from odradek.net.kafka_client import KafkaClientError, KafkaCluster
from odradek.runtime.service import run_service, start_metrics

log = logging.getLogger("odradek.mirror")
Work = Callable[[], Awaitable[object]]


async def repeat(name: str, interval_ms: int, work: Work, setup: Work | None = None) -> None:
    """`setup` once, then `work` every `interval_ms` (once, for -1: MM2's "disabled"
    interval); a failure is retried with backoff instead, but a MirrorConfigError ends
    the job with it. A cluster's error or timeout is logged in one line; anything else,
    a bug, with its traceback."""
    backoff = Backoff()
    ready = setup is None
    while True:
        try:
            if not ready:
                assert setup is not None
                await setup()
                ready = True
            await work()
        except ClusterUnavailable:
            delay_ms = backoff.next_ms()  # ClusterHealth logged the change of state
        except MirrorConfigError:
            raise
        except (KafkaException, KafkaClientError, ReadError, ProducerError,
                TimeoutError) as error:
            log.warning("%s failed: %s; retrying", name, error)  # a cluster's answer, no bug
            delay_ms = backoff.next_ms()
        except Exception:
            log.exception("%s failed", name)
            delay_ms = backoff.next_ms()
        else:
            backoff.reset()
            if interval_ms < 0:
                return
            delay_ms = interval_ms
        await asyncio.sleep(delay_ms / 1000)


class MirrorService:
    """Every job of every pair this process runs, and their clients."""

    def __init__(self, config: MirrorConfig, registry: CollectorRegistry,
                 stop: asyncio.Event) -> None:
        self.config = config
        self.registry = registry
        self._stop = stop
        self.error: MirrorConfigError | None = None
        """The configuration error that stopped the mirror, if one did."""
        self.health = ClusterHealth()
        self.latency = CheckpointLatency(registry)
        self.clients: dict[str, ClusterClient] = {}
        self.replicators: dict[str, FlowReplicator] = {}
        self.readers: list[OffsetSyncReader] = []
        self.emitters: list[CheckpointEmitter] = []
        self.acl_syncs: list[TopicAclSync] = []
        self._tasks: list[asyncio.Task[None]] = []

    def client(self, flow: Flow, alias: str) -> ClusterClient:
        if alias not in self.clients:
            side: Side = "source" if alias == flow.source else "target"
            admin = flow_librdkafka_config(flow, side, "admin")
            kafka = KafkaCluster(addresses(admin["bootstrap.servers"]),
                                 f"mirror-{alias}-admin", REQUEST_TIMEOUT_S,
                                 flow_security(flow, side, "admin"))
            self.clients[alias] = ClusterClient(alias, admin,
                                                flow_librdkafka_config(flow, side, "producer"),
                                                self.health, kafka)
        return self.clients[alias]

    def start(self) -> None:
        for warning in self.config.warnings:
            log.warning("%s", warning)
        for pair in self.config.pairs:
            if pair.emit_heartbeats:
                heartbeats = HeartbeatEmitter(pair, self.client(pair, pair.target))
                self._spawn(f"{pair.name} heartbeats", pair.emit_heartbeats_interval_ms,
                            heartbeats.beat, heartbeats.create_topic)
            if pair.enabled:
                self._start_flow(pair)
        log.info("mirroring %s", ", ".join(flow.name for flow in self.config.flows) or
                 "nothing (heartbeats only)")

    def _start_flow(self, flow: Flow) -> None:
        source, target = self.client(flow, flow.source), self.client(flow, flow.target)
        topics = TopicSync(flow, source, target, self.client(flow, flow.offset_syncs_cluster))
        replicator = self.replicators[flow.name] = FlowReplicator(flow, self.config,
                                                                  self.registry)
        started = False

        async def refresh() -> None:
            nonlocal started
            replicated = await topics.refresh()
            if not started:
                await replicator.start()
                started = True
            replicator.set_topics(replicated)

        self._spawn(f"{flow.name} topics", flow.refresh_topics_interval_ms, refresh,
                    topics.create_internal_topics)
        if flow.sync_topic_configs_interval_ms >= 0:
            self._spawn(f"{flow.name} topic configs", flow.sync_topic_configs_interval_ms,
                        topics.sync_configs)
        if flow.sync_topic_acls_interval_ms >= 0:
            acls = TopicAclSync(flow, self.health)
            self.acl_syncs.append(acls)
            self._spawn(f"{flow.name} topic ACLs", flow.sync_topic_acls_interval_ms, acls.sync)
        if flow.emit_checkpoints_interval_ms >= 0:
            reader = OffsetSyncReader(flow, self.health)
            self.readers.append(reader)
            checkpoints = CheckpointEmitter(flow, source, target, reader, self.latency)
            self.emitters.append(checkpoints)
            self._spawn(f"{flow.name} checkpoints", flow.emit_checkpoints_interval_ms,
                        checkpoints.emit, checkpoints.load)
            if flow.sync_group_offsets_interval_ms >= 0:
                self._spawn(f"{flow.name} group offsets", flow.sync_group_offsets_interval_ms,
                            checkpoints.sync_group_offsets)

    def _spawn(self, name: str, interval_ms: int, work: Work, setup: Work | None = None
               ) -> None:
        task = asyncio.create_task(repeat(name, interval_ms, work, setup), name=name)
        task.add_done_callback(self._job_ended)
        self._tasks.append(task)

    def _job_ended(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if isinstance(error, MirrorConfigError) and self.error is None:
            self.error = error
            self._stop.set()

    def readiness(self) -> str | None:
        """None once every cluster of a flow has answered and none is failing (the /health
        of container health checks and readiness probes); else why not."""
        down = self.health.down()
        if down:
            return "unreachable: " + "; ".join(f"{alias}: {error}"
                                               for alias, error in sorted(down.items()))
        aliases = sorted({alias for flow in self.config.flows
                          for alias in (flow.source, flow.target)})
        waiting = [alias for alias in aliases if not self.health.reached(alias)]
        return f"not reached yet: {', '.join(waiting)}" if waiting else None

    async def stop(self) -> None:
        """Stop the jobs, then the data path (which commits what is in flight), then
        deliver what the jobs queued."""
        for emitter in self.emitters:
            emitter.close()
        pending = set(self._tasks)
        while pending:
            for task in pending:
                # again: Python 3.11's wait_for drops a cancellation that arrives as the
                # call it waits for completes, and the job goes on
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=1)
        await asyncio.gather(*(replicator.stop() for replicator in self.replicators.values()),
                             return_exceptions=True)
        for client in self.clients.values():
            try:
                await client.flush()
            except ClusterUnavailable as error:
                log.warning("not delivered before stopping: %s", error)
            client.close()
        for reader in self.readers:
            reader.close()
        for acls in self.acl_syncs:
            acls.close()


def run_mirror(config: MirrorConfig, prefer_uvloop: bool = True) -> None:
    """Run the mirror until SIGTERM or SIGINT, or until a job raises a MirrorConfigError,
    which this raises after stopping."""
    registry = CollectorRegistry()

    async def serve(stop: asyncio.Event) -> None:
        service = MirrorService(config, registry, stop)
        start_metrics(registry, "0.0.0.0", config.metrics_port, service.readiness)
        service.start()
        await stop.wait()
        log.info("stopping")
        await service.stop()
        log.info("stopped")
        if service.error is not None:
            raise service.error

    run_service(serve, prefer_uvloop)

