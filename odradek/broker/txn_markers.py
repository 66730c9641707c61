"""Transaction markers: a partition leader appends them (WriteTxnMarkers), and the transaction
coordinator sends them to the leaders of a transaction's partitions, retrying until every
one is written (Kafka's TransactionMarkerChannelManager)."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.partitions import TopicPartition
from odradek.broker.replica_manager import Acknowledgement, ReplicaManager, acknowledged
from odradek.log.leader_validation import validate_leader_append
from odradek.metadata.image import OFFSETS_TOPIC
from odradek.net.kafka_client import BrokerConnection, BrokerConnectionError
from odradek.net.kafka_client.request_versions import WRITE_TXN_MARKERS
from odradek.protocol.codec import build_request
from odradek.protocol.control import build_marker_batch
from odradek.runtime.clock import now_ms
from odradek.txn.coordinator import MarkerJob
from odradek.txn.producer_state import ProducerStateError

log = logging.getLogger("odradek.broker.txn_markers")

RETRY_BACKOFF_S = 0.1


class MarkerWriter:
    """Appends markers to partitions this broker leads (WriteTxnMarkers, and the local
    coordinator's own): `complete_group_transaction(partition, producer id, commit)` tells the
    group coordinator about one in `__consumer_offsets`."""

    def __init__(self, broker: Broker, replicas: ReplicaManager,
                 complete_group_transaction: Callable[[int, int, bool], None]) -> None:
        self.broker = broker
        self.replicas = replicas
        self._complete_group_transaction = complete_group_transaction

    def append(self, key: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
               coordinator_epoch: int) -> Acknowledgement | ErrorCode:
        """Append a marker as the partition's leader; what acknowledging it waits for (its
        fsync, when the flush policy asks, and its commit by the ISR), or why it was
        refused."""
        log_, code = self.broker.leader_log(*key)
        leader_epoch = self.replicas.leader_epoch(key)
        if log_ is None or leader_epoch is None:
            return code if log_ is None else ErrorCode.not_leader_or_follower
        try:
            log_.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        except ProducerStateError as error:
            log.info("refused a marker for producer %d on %s-%d: %s", producer_id, *key,
                     error.message)
            return error.error_code
        if self.replicas.below_min_isr(key):  # else each retry appends one more marker
            return ErrorCode.not_enough_replicas
        now = now_ms()
        batch = build_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, now)
        _, ack = self.replicas.append_as_leader(
            key, log_, leader_epoch, batch,
            validate_leader_append(batch, log_.config, key, now, client=None), now,
            wait_for_isr=True)
        if key[0] == OFFSETS_TOPIC:
            self._complete_group_transaction(key[1], producer_id, commit)
        return ack

    async def write(self, producer_id: int, producer_epoch: int, commit: bool,
                    coordinator_epoch: int, partitions: Iterable[TopicPartition],
                    timeout_s: float) -> dict[TopicPartition, ErrorCode]:
        """Append a marker to each partition this broker leads; answers once they are
        fsynced (as the flush policy asks) and committed."""
        appended = {key: self.append(key, producer_id, producer_epoch, commit,
                                     coordinator_epoch) for key in partitions}
        acks = {key: a for key, a in appended.items() if isinstance(a, Acknowledgement)}
        outcomes = dict(zip(acks, await acknowledged(list(acks.values()), timeout_s),
                            strict=True))
        return {key: outcomes[key] if isinstance(a, Acknowledgement) else a
                for key, a in appended.items()}


class MarkerSender:
    """Delivers each job's markers to the current leaders, locally or over WriteTxnMarkers,
    until every partition has its marker or is gone; then calls `done(job)`."""

    def __init__(self, broker: Broker, markers: MarkerWriter,
                 done: Callable[[MarkerJob], None]) -> None:
        self.broker = broker
        self._markers = markers
        self._done = done
        self._timeout_s = broker.config.integer("request.timeout.ms") / 1000
        self._tasks: set[asyncio.Task[None]] = set()

    def send(self, job: MarkerJob) -> None:
        task = asyncio.ensure_future(self._deliver(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, job: MarkerJob) -> None:
        remaining = set(job.partitions)
        while remaining:
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for key in remaining:
                leader = self.broker.leader_of(*key)
                if leader is None:
                    log.info("%s-%d is gone: no marker needed", *key)
                    continue
                by_leader[leader].append(key)
            remaining = set().union(*by_leader.values()) if by_leader else set()
            try:
                results = await asyncio.gather(*(
                    self._send_to(leader, job, keys) for leader, keys in by_leader.items()))
            except Exception:  # a bug must not leave the transaction prepared for ever
                log.exception("markers for producer %d: retrying", job.producer_id)
                results = []
            for answered in results:
                for key, code in answered.items():
                    if code in (ErrorCode.none, ErrorCode.unknown_topic_or_partition):
                        remaining.discard(key)
                    elif code in (ErrorCode.invalid_producer_epoch,
                                  ErrorCode.transaction_coordinator_fenced):
                        log.warning("marker for producer %d on %s-%d refused: %s",
                                    job.producer_id, *key, code.name)
                        remaining.discard(key)
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S)
        self._done(job)

    async def _send_to(self, leader: int, job: MarkerJob, keys: list[TopicPartition]
                       ) -> dict[TopicPartition, ErrorCode]:
        if leader == self.broker.node_id:
            return await self._markers.write(job.producer_id, job.producer_epoch, job.commit,
                                             job.coordinator_epoch, keys, self._timeout_s)
        endpoint = self.broker.inter_broker_endpoint(leader)
        if endpoint is None:
            return {}
        topics: dict[str, list[int]] = defaultdict(list)
        for topic, partition in keys:
            topics[topic].append(partition)
        request = build_request(*WRITE_TXN_MARKERS, {"markers": [{
            "producer_id": job.producer_id, "producer_epoch": job.producer_epoch,
            "transaction_result": job.commit, "coordinator_epoch": job.coordinator_epoch,
            "topics": [{"name": name, "partition_indexes": sorted(parts)}
                       for name, parts in topics.items()],
        }]})
        try:
            connection = await BrokerConnection.connect(
                endpoint.host, endpoint.port, f"txn-markers-{self.broker.node_id}",
                self._timeout_s, self.broker.inter_broker_security)
        except BrokerConnectionError as error:
            log.info("markers to broker %d: %s", leader, error)
            return {}
        try:
            response = await connection.send(request, self._timeout_s)
        except BrokerConnectionError as error:
            log.info("markers to broker %d: %s", leader, error)
            return {}
        finally:
            connection.close()
        return {(topic.name, p.partition_index): ErrorCode(p.error_code)
                for marker in response.markers for topic in marker.topics
                for p in topic.partitions}

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
