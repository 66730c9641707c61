"""Fetch: whole batches straight from the segment files, long-polling on partition waiters.

A follower's fetch (replica id set) reads up to the log end rather than the high watermark and
reports how far the follower has got, which may move the high watermark and the ISR.

Fetching from the closest replica (KIP-392): from v11 a consumer names its rack, and may
fetch from a follower, which serves it up to its own high watermark. With
`replica.selector.class` set to Kafka's RackAwareReplicaSelector, a leader answers a consumer
in another rack with the follower in its rack to read from (preferred_read_replica) and no
records; the client moves there.

Fetch sessions (KIP-227): the broker keeps none and answers session id 0, which every
client reads as "send full fetch requests"; a request naming a session gets
FETCH_SESSION_ID_NOT_FOUND, as from a broker whose session cache evicted it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import CLUSTER, TOPIC, Op
from odradek.broker.broker import Broker
from odradek.broker.dispatch import EncodedBody, RequestContext, Result
from odradek.broker.replica_manager import ReplicaManager
from odradek.log.leader_epochs import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from odradek.log.partition import OffsetOutOfRangeError, PartitionLog
from odradek.protocol.fetch_response import (
    FIRST_TOPIC_ID_VERSION,
    FetchedPartition,
    FetchedTopic,
    NodeEndpoint,
    encode_fetch_body,
)
from odradek.replication.read_replica import NO_PREFERRED_REPLICA
from odradek.runtime.clock import now_ms

FIRST_REPLICA_STATE_VERSION = 15
FIRST_RACK_VERSION = 11
READ_COMMITTED = 1
EXPECTED_FETCH_ERRORS = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
    ErrorCode.unknown_leader_epoch, ErrorCode.fenced_leader_epoch,
    ErrorCode.replica_not_available, ErrorCode.kafka_storage_error,
    ErrorCode.inconsistent_topic_id, ErrorCode.offset_out_of_range,
})
"""Answers Kafka's ReplicaManager does not count as failed fetches: they say where the data
is, not that the broker failed to read it."""


@dataclass(slots=True)
class _Wanted:
    topic: str | None
    topic_id: uuid.UUID | None
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int
    read_committed: bool
    log_start_offset: int
    """A follower's own log start offset (-1 from consumers and before v5)."""
    last_fetched_epoch: int = -1
    """The epoch of the last record in the fetcher's log (v12+; -1 unknown)."""
    refused: bool = False
    """The fetcher may not read it: TOPIC_AUTHORIZATION_FAILED."""


@dataclass(frozen=True, slots=True)
class _Fetcher:
    """Who is fetching: a follower's broker id (-1 for consumers), from v11 a consumer's
    rack (None before v11, when a consumer may read only from leaders), and the listener
    it came in on."""

    version: int
    replica_id: int
    client_rack: str | None
    listener: str
    charge: Callable[[int], int] | None = None
    """Records a response's size against the client's fetch quota, answering the throttle
    time (None: no quota applies)."""

    @property
    def reads_followers(self) -> bool:
        return self.replica_id < 0 and self.client_rack is not None


def handle_fetch(context: RequestContext, request: Any) -> Result | Awaitable[Result]:
    # v4-v6 carry no session fields; an epoch above 0 names an incremental session, and this
    # broker keeps none (session id 0 in every answer tells the client to fetch in full).
    if getattr(request, "session_epoch", -1) > 0:
        return _top_level_error(ErrorCode.fetch_session_id_not_found)
    broker = context.broker
    wanted = _wanted_partitions(broker, request, context.version)
    fetcher = _fetcher(request, context.version, context.listener, fetch_charge(context, request))
    _authorize(context, fetcher, wanted)
    replicas = context.services.replicas
    read = _read(broker, replicas, wanted, request.max_bytes, fetcher)
    max_wait_ms = int(request.max_wait.total_seconds() * 1000)
    if read.size >= request.min_bytes or max_wait_ms <= 0 or read.failed:
        return read.send(broker)
    # registered before returning, so a produce handled before the coroutine starts wakes it
    keys = [(w.topic, w.partition) for w in wanted if w.topic is not None]
    waiter = broker.waiters.wait(keys)  # type: ignore[arg-type]
    return _wait_and_read(
        broker, replicas, wanted, waiter, request.max_bytes, request.min_bytes, max_wait_ms,
        fetcher)


def _authorize(context: RequestContext, fetcher: _Fetcher, wanted: list[_Wanted]) -> None:
    """As Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on each
    topic (checked once per topic)."""
    if fetcher.replica_id >= 0:
        if not context.allowed(Op.CLUSTER_ACTION, CLUSTER):
            for item in wanted:
                item.refused = True
        return
    readable = context.allowed_names(Op.READ, TOPIC, (w.topic for w in wanted if w.topic))
    for item in wanted:
        item.refused = item.topic is not None and item.topic not in readable


def fetch_charge(context: RequestContext, request: Any) -> Callable[[int], int] | None:
    """For a consumer's fetch under a fetch quota: a function recording the response's size
    and answering the throttle time (the bytes are taken back when it throttles)."""
    quotas = context.services.quotas
    if not quotas.fetch.enabled or follower_id(request, context.version) >= 0:
        return None
    user, client_id = context.principal.name, context.header.client_id or ""

    def charge(size: int) -> int:
        now = quotas.now_ms()
        delay = quotas.fetch.record(user, client_id, size, now)
        if delay > 0:
            quotas.fetch.unrecord(user, client_id, size, now)
        return delay

    return charge


def follower_id(request: Any, version: int) -> int:
    """The follower's broker id (-1 for consumers): in ReplicaState from v15 (KIP-903)."""
    if version >= FIRST_REPLICA_STATE_VERSION:
        return int(request.replica_state.replica_id)
    return int(request.replica_id)


def _fetcher(request: Any, version: int, listener: str,
             charge: Callable[[int], int] | None) -> _Fetcher:
    replica_id = follower_id(request, version)
    rack = request.rack_id if version >= FIRST_RACK_VERSION and replica_id < 0 else None
    return _Fetcher(version, replica_id, rack, listener, charge)


async def _wait_and_read(
    broker: Broker,
    replicas: ReplicaManager,
    wanted: list[_Wanted],
    waiter: asyncio.Future[None],
    max_bytes: int,
    min_bytes: int,
    max_wait_ms: int,
    fetcher: _Fetcher,
) -> Result:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000
    keys = [(w.topic, w.partition) for w in wanted if w.topic is not None]
    while True:
        try:
            await asyncio.wait_for(waiter, max(deadline - loop.time(), 0))
        except TimeoutError:
            return _read(broker, replicas, wanted, max_bytes, fetcher).send(broker)
        waiter = broker.waiters.wait(keys)  # type: ignore[arg-type]
        read = _read(broker, replicas, wanted, max_bytes, fetcher)
        if read.size >= min_bytes or read.failed or loop.time() >= deadline:
            waiter.cancel()
            return read.send(broker)


def _top_level_error(code: ErrorCode) -> Result:
    return {"error_code": code, "session_id": 0, "responses": []}


def _wanted_partitions(broker: Broker, request: Any, version: int) -> list[_Wanted]:
    wanted = []
    names = broker.metadata.topic_names_by_id
    read_committed = request.isolation_level == READ_COMMITTED
    for topic in request.topics:
        if version >= FIRST_TOPIC_ID_VERSION:
            topic_id = topic.topic_id
            name = names.get(str(topic_id))
        else:
            topic_id, name = None, topic.topic
        wanted += [
            _Wanted(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes,
                    getattr(p, "current_leader_epoch", -1), read_committed,
                    getattr(p, "log_start_offset", -1), getattr(p, "last_fetched_epoch", -1))
            for p in topic.partitions
        ]
    return wanted


@dataclass(slots=True)
class _Read:
    """A Fetch response built but not yet sent, and what it carries."""

    topics: list[FetchedTopic]
    fetcher: _Fetcher
    size: int
    failed: bool

    def send(self, broker: Broker) -> EncodedBody:
        """Encode it and count its bytes and errors (only responses actually sent count);
        bytes sent to followers count as replication, as in Kafka. A consumer over its fetch
        quota gets a response without partitions and the throttle time instead."""
        version = self.fetcher.version
        charge = self.fetcher.charge
        if charge is not None:
            size = sum(len(p.records) for t in self.topics for p in t.partitions)
            delay = charge(size)
            if delay > 0:
                return _throttled_body(version, delay)
        metrics = broker.metrics
        replicating = self.fetcher.replica_id >= 0
        leaders: set[int] = set()
        known = broker.metadata.topics
        for topic in self.topics:
            stats = metrics.topic(topic.name) if topic.name in known else None
            for partition in topic.partitions:
                if stats is not None:
                    stats.total_fetch.inc()
                if partition.records and replicating:
                    metrics.replication_bytes_out.inc(len(partition.records))
                elif partition.records and stats is not None:
                    stats.bytes_out.inc(len(partition.records))
                if partition.error_code:
                    metrics.count_error("Fetch", partition.error_code)
                    if stats is not None and partition.error_code not in EXPECTED_FETCH_ERRORS:
                        stats.failed_fetch.inc()
                if partition.current_leader is not None:
                    leaders.add(partition.current_leader[0])
                if partition.preferred_read_replica != NO_PREFERRED_REPLICA:
                    leaders.add(partition.preferred_read_replica)
        body = EncodedBody(encode_fetch_body(version, self.topics,
                                             node_endpoints=node_endpoints(broker, leaders,
                                                                            self.fetcher.listener)))
        body.throttled = partial(_throttled_body, version)
        return body


def _throttled_body(version: int, throttle_time_ms: int) -> EncodedBody:
    """What a throttled consumer gets: no partitions, as from Kafka's getThrottledResponse."""
    body = EncodedBody(encode_fetch_body(version, [], throttle_time_ms=throttle_time_ms))
    body.throttle_time_ms = throttle_time_ms
    return body


def _read(broker: Broker, replicas: ReplicaManager, wanted: list[_Wanted], max_bytes: int,
          fetcher: _Fetcher) -> _Read:
    topics: dict[tuple[str | None, uuid.UUID | None], FetchedTopic] = {}
    remaining = max_bytes
    total = 0
    failed = False
    for item in wanted:
        partition = _read_partition(broker, replicas, item, remaining, total == 0, fetcher)
        records = partition.records
        if records:
            total += len(records)
            remaining = max(remaining - len(records), 0)
        failed |= partition.error_code != ErrorCode.none
        key = (item.topic, item.topic_id)
        topic = topics.get(key)
        if topic is None:
            topic = topics[key] = FetchedTopic(item.topic or "", item.topic_id, [])
        topic.partitions.append(partition)
    return _Read(list(topics.values()), fetcher, total, failed)


def _read_partition(
    broker: Broker, replicas: ReplicaManager, item: _Wanted, remaining: int, first: bool,
    fetcher: _Fetcher,
) -> FetchedPartition:
    # Kafka answers these before the replica manager reads, with an empty (not null) list of
    # aborted transactions
    if item.topic is None:
        return FetchedPartition(item.partition, ErrorCode.unknown_topic_id,
                                aborted_transactions=[])
    if item.refused:
        return FetchedPartition(item.partition, ErrorCode.topic_authorization_failed,
                                aborted_transactions=[])
    key = (item.topic, item.partition)
    log_, code = broker.leader_log(*key)
    if code == ErrorCode.unknown_topic_or_partition:
        return FetchedPartition(item.partition, code, aborted_transactions=[])
    leading = log_ is not None
    if log_ is None and fetcher.reads_followers:
        log_ = replicas.follower_log(key)
    if log_ is None:
        return FetchedPartition(item.partition, code, current_leader=broker.leader_hint(*key))
    epoch_error = leader_epoch_error(replicas, key, item.current_leader_epoch)
    if epoch_error != ErrorCode.none:
        return FetchedPartition(item.partition, epoch_error)
    now = now_ms()
    replica_id = fetcher.replica_id
    throttle = None
    if replica_id >= 0:
        if leading and item.last_fetched_epoch >= 0:
            diverged = _divergence(log_, item)
            if diverged is not None:
                return diverged
        if item.fetch_offset <= log_.log_end_offset:
            replicas.record_follower_fetch(key, replica_id, item.fetch_offset,
                                           item.log_start_offset, now)
        throttle = replicas.leader_throttle(key, replica_id, now)
    high_watermark = log_.high_watermark
    stable = log_.last_stable_offset
    partition = FetchedPartition(
        item.partition, ErrorCode.none, high_watermark, stable, log_.log_start_offset
    )
    if leading and fetcher.client_rack:
        partition.preferred_read_replica = replicas.preferred_read_replica(
            key, fetcher.client_rack, item.fetch_offset, now)
        if partition.preferred_read_replica != NO_PREFERRED_REPLICA:
            return partition
    limit = min(item.partition_max_bytes, remaining)
    if throttle:
        return partition
    visible_end = None
    if replica_id < 0:
        visible_end = stable if item.read_committed else high_watermark
    try:
        result = log_.read(item.fetch_offset, limit, max_offset=visible_end, min_one_batch=first)
    except OffsetOutOfRangeError:
        if replica_id >= 0:
            # Odradek's followers learn the leader's log start offset from this answer
            # (Kafka's ask with ListOffsets)
            partition.error_code = ErrorCode.offset_out_of_range
            return partition
        # to clients, as every error of Kafka's replica manager: no offsets
        return FetchedPartition(item.partition, ErrorCode.offset_out_of_range)
    partition.records = result.records
    if item.read_committed and replica_id < 0:
        partition.aborted_transactions = [
            (aborted.producer_id, aborted.first_offset)
            for aborted in log_.aborted_transactions(item.fetch_offset, stable)
        ] if result.records else []
    if throttle is not None:
        replicas.leader_quota.record(len(result.records), now)
    return partition


def _divergence(log_: PartitionLog, item: _Wanted) -> FetchedPartition | None:
    """A follower's fetch whose log has diverged from the leader's (Kafka's
    validateFetchOffsetAndMaybeGetDivergingEpoch): where its last fetched epoch ends here, and
    no records. Its fetch offset says nothing of what it holds, so it must not move the high
    watermark: a follower that follows a newer leader, and fetches here at the old epoch with
    that leader's records, would otherwise acknowledge records it does not have."""
    if item.fetch_offset < log_.log_start_offset:
        return None  # out of range whatever the epochs say, as in Kafka
    epoch, end_offset = log_.leader_epochs.end_offset_for(item.last_fetched_epoch,
                                                          log_.log_end_offset)
    answer = FetchedPartition(item.partition, ErrorCode.none, log_.high_watermark,
                              log_.last_stable_offset, log_.log_start_offset)
    if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_OFFSET:
        answer.error_code = ErrorCode.offset_out_of_range
        return answer
    if epoch < item.last_fetched_epoch or end_offset < item.fetch_offset:
        answer.diverging_epoch = (epoch, end_offset)
        return answer
    return None


def node_endpoints(broker: Broker, node_ids: set[int], listener: str) -> list[NodeEndpoint]:
    """The endpoints on `listener` (the request's) of the leaders named in KIP-951 hints and
    of preferred read replicas; a broker without one there is left out."""
    return [
        NodeEndpoint(b.broker_id, endpoint.host, endpoint.port, b.rack)
        for node_id in sorted(node_ids)
        if (b := broker.metadata.brokers.get(node_id)) is not None
        and (endpoint := b.endpoint(listener)) is not None
    ]


def leader_epoch_error(replicas: ReplicaManager, key: tuple[str, int],
                       current_leader_epoch: int) -> ErrorCode:
    """KIP-320: a client behind the leader epoch this replica knows is fenced
    (FENCED_LEADER_EPOCH); one ahead of it knows metadata this broker has yet to apply
    (UNKNOWN_LEADER_EPOCH)."""
    epoch = replicas.replica_epoch(key)
    if current_leader_epoch < 0 or epoch is None or current_leader_epoch == epoch:
        return ErrorCode.none
    if current_leader_epoch < epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch
