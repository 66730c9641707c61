"""ShareFetch and ShareAcknowledge (KIP-932): a share-group member's fetches from the leaders
of its partitions, and its acknowledgements, as Kafka's KafkaApis answers them.

A ShareFetch first settles the acknowledgements it carries, then acquires records for the
member, waiting up to MaxWaitMs for any to arrive. Its share session (odradek/share/session.py)
remembers the partitions between requests. Closing the session (epoch -1) or the connection
releases what the member still holds here.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import TOPIC, Op
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.fetch import node_endpoints
from odradek.broker.share_fetch import FetchedShare, SharePartitionManager
from odradek.share.partition import AcknowledgementBatch, AcknowledgeType, AcquireMode
from odradek.share.session import FINAL_EPOCH, ShareContext, SharePartitionId, ShareSessionError

MAX_MEMBER_ID_LENGTH = 36
RENEW_VERSION = 2


def _request_error(request: Any, version: int) -> tuple[ErrorCode, str | None] | None:
    """Kafka's checks before any session or partition is looked at (READ on the group is
    the API's gate, apis.py)."""
    if request.group_id is None:
        return ErrorCode.invalid_request, "Invalid group id in the request."
    member_id = request.member_id
    if not member_id or len(member_id) > MAX_MEMBER_ID_LENGTH:
        return ErrorCode.invalid_request, "Invalid member id in the request."
    return None


def _acknowledgements(topics: Iterable[Any]) -> dict[SharePartitionId, list[AcknowledgementBatch]]:
    found: dict[SharePartitionId, list[AcknowledgementBatch]] = {}
    for topic in topics:
        for p in topic.partitions:
            if p.acknowledgement_batches:
                found[(str(topic.topic_id), p.partition_index)] = [
                    AcknowledgementBatch(b.first_offset, b.last_offset,
                                         tuple(b.acknowledge_types))
                    for b in p.acknowledgement_batches]
    return found


def _renews(acks: dict[SharePartitionId, list[AcknowledgementBatch]]) -> bool:
    return any(AcknowledgeType.RENEW in b.acknowledge_types
               for batches in acks.values() for b in batches)


async def _settle(context: RequestContext, shares: SharePartitionManager, group_id: str,
                  member_id: str, acks: dict[SharePartitionId, list[AcknowledgementBatch]],
                  version: int) -> dict[SharePartitionId, tuple[ErrorCode, str | None]]:
    """Each partition's acknowledgements applied and persisted: its error and message."""
    names = context.broker.metadata.topic_names_by_id
    readable = context.allowed_names(Op.READ, TOPIC, (names[t] for t, _ in acks if t in names))
    results: dict[SharePartitionId, tuple[ErrorCode, str | None]] = {}
    for (topic_id, partition), batches in acks.items():
        topic = names.get(topic_id)
        if topic is None:
            results[(topic_id, partition)] = ErrorCode.unknown_topic_id, None
        elif topic not in readable:
            results[(topic_id, partition)] = ErrorCode.topic_authorization_failed, None
        elif version < RENEW_VERSION and _renews({(topic_id, partition): batches}):
            results[(topic_id, partition)] = (ErrorCode.invalid_request,
                                              "Renew acknowledgements need version 2")
        else:
            results[(topic_id, partition)] = await shares.acknowledge(
                group_id, member_id, topic, topic_id, partition, batches)
    return results


async def handle_share_fetch(context: RequestContext, request: Any) -> Result:
    shares = context.services.share_partitions
    version = context.version
    refused = _request_error(request, version)
    renew = version >= RENEW_VERSION and request.is_renew_ack
    mode = getattr(request, "share_acquire_mode", AcquireMode.BATCH_OPTIMIZED)  # v2+
    if refused is None and mode not in AcquireMode.__members__.values():
        refused = (ErrorCode.invalid_request, f"Unknown share acquire mode id: {mode}")
    if refused is None and renew and (request.max_bytes or request.min_bytes
                                      or request.max_records or _ms(request.max_wait)):
        refused = (ErrorCode.invalid_request, "maxBytes, minBytes, maxRecords and maxWaitMs "
                   "must be set to 0 if isRenewAck is true.")
    if refused is not None:
        return _refused(*refused)
    group_id, member_id = request.group_id, request.member_id
    acks = _acknowledgements(request.topics)
    try:
        session = shares.sessions.new_context(
            (group_id, member_id), request.share_session_epoch, context.peer,
            ((str(t.topic_id), p.partition_index) for t in request.topics for p in t.partitions),
            ((str(t.topic_id), p) for t in request.forgotten_topics_data for p in t.partitions),
            bool(acks))
    except ShareSessionError as error:
        return _refused(error.code, str(error))
    settled = await _settle(context, shares, group_id, member_id, acks, version)
    fetched: dict[SharePartitionId, FetchedShare] = {}
    if not session.final and not renew:
        fetched = await _fetch(context, shares, request, session, AcquireMode(mode))
    else:
        removed = shares.sessions.remove((group_id, member_id)) if session.final else None
        if removed is not None:
            await shares.release(group_id, member_id, list(removed.partitions))
    return _fetch_response(context, shares, group_id, fetched, settled)


async def _fetch(context: RequestContext, shares: SharePartitionManager, request: Any,
                 session: ShareContext, mode: AcquireMode) -> dict[SharePartitionId, FetchedShare]:
    """Acquire for the member, waiting up to MaxWaitMs for records to acquire. Records once
    acquired go out at once, whatever MinBytes says: Kafka checks MinBytes against the log
    before it acquires, and a response held back here would keep them locked unseen."""
    broker = context.broker
    names = broker.metadata.topic_names_by_id
    readable = context.allowed_names(Op.READ, TOPIC,
                                     (names[t] for t, _ in session.partitions if t in names))
    result: dict[SharePartitionId, FetchedShare] = {}
    wanted = []
    for topic_id, partition in session.partitions:
        topic = names.get(topic_id)
        state = broker.metadata.topics.get(topic) if topic is not None else None
        if topic is None or state is None or partition not in state.partitions:
            result[(topic_id, partition)] = FetchedShare(ErrorCode.unknown_topic_or_partition)
        elif topic not in readable:
            result[(topic_id, partition)] = FetchedShare(ErrorCode.topic_authorization_failed)
        else:
            wanted.append((topic, topic_id, partition))
    if not wanted:
        return result
    max_bytes = min(request.max_bytes, broker.config.integer("fetch.max.bytes"))
    loop = asyncio.get_running_loop()
    acquiring_since = loop.time()
    deadline = acquiring_since + _ms(request.max_wait) / 1000
    metrics, group_id = shares.metrics, request.group_id
    while True:
        waiter = broker.waiters.wait([(topic, partition) for topic, _, partition in wanted])
        got = await shares.fetch(group_id, request.member_id, wanted,
                                 request.max_records, request.batch_size, max_bytes, mode)
        acquirable = sum(f.acquirable for f in got.values())
        size = sum(len(f.records) for f in got.values())
        failed = any(f.error != ErrorCode.none for f in got.values())
        done = size or failed or loop.time() >= deadline
        if acquirable or done:  # Kafka's DelayedShareFetch: at each acquisition, and at the end
            now = loop.time()
            metrics.record_acquire_time(group_id, (now - acquiring_since) * 1000)
            acquiring_since = now
        if done:
            waiter.cancel()
            metrics.record_fetch_ratio(group_id, len(wanted), acquirable)
            return result | got
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter, max(deadline - loop.time(), 0))


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _refused(code: ErrorCode, message: str | None) -> Result:
    """A ShareFetch or ShareAcknowledge refused as a whole."""
    return {"error_code": code, "error_message": message, "responses": [],
            "node_endpoints": []}


def _lock_timeout(shares: SharePartitionManager, group_id: str) -> int:
    return shares.broker.group_config(group_id).share_record_lock_duration_ms


def _fetch_response(context: RequestContext, shares: SharePartitionManager, group_id: str,
                    fetched: dict[SharePartitionId, FetchedShare],
                    settled: dict[SharePartitionId, tuple[ErrorCode, str | None]]) -> Result:
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    leaders: set[int] = set()
    for key in dict.fromkeys([*fetched, *settled]):
        topic_id, partition = key
        share = fetched.get(key, FetchedShare())
        ack_code, ack_message = settled.get(key, (ErrorCode.none, None))
        leader_id, leader_epoch = share.current_leader
        if leader_id >= 0:
            leaders.add(leader_id)
        topics[topic_id].append({
            "partition_index": partition, "error_code": share.error,
            "error_message": share.message, "acknowledge_error_code": ack_code,
            "acknowledge_error_message": ack_message,
            "current_leader": {"leader_id": leader_id, "leader_epoch": leader_epoch},
            "records": bytes(share.records),
            "acquired_records": [
                {"first_offset": a.first_offset, "last_offset": a.last_offset,
                 "delivery_count": a.delivery_count} for a in share.acquired]})
    return {"error_code": ErrorCode.none,
            "acquisition_lock_timeout": _lock_timeout(shares, group_id),
            "responses": [{"topic_id": uuid.UUID(t), "partitions": parts}
                          for t, parts in topics.items()],
            "node_endpoints": _endpoints(context, leaders)}


def _endpoints(context: RequestContext, leaders: set[int]) -> list[dict[str, Any]]:
    return [{"node_id": e.node_id, "host": e.host, "port": e.port, "rack": e.rack}
            for e in node_endpoints(context.broker, leaders, context.listener)]


async def handle_share_acknowledge(context: RequestContext, request: Any) -> Result:
    shares = context.services.share_partitions
    version = context.version
    refused = _request_error(request, version)
    if refused is not None:
        return _refused(*refused)
    group_id, member_id = request.group_id, request.member_id
    key = (group_id, member_id)
    try:
        shares.sessions.acknowledged(key, request.share_session_epoch)
    except ShareSessionError as error:
        return _refused(error.code, str(error))
    settled = await _settle(context, shares, group_id, member_id,
                            _acknowledgements(request.topics), version)
    if request.share_session_epoch == FINAL_EPOCH:
        removed = shares.sessions.remove(key)
        if removed is not None:
            await shares.release(group_id, member_id, list(removed.partitions))
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (topic_id, partition), (code, message) in settled.items():
        topics[topic_id].append({"partition_index": partition, "error_code": code,
                                 "error_message": message,
                                 "current_leader": {"leader_id": -1, "leader_epoch": -1}})
    return {"error_code": ErrorCode.none,
            "acquisition_lock_timeout": _lock_timeout(shares, group_id),
            "responses": [{"topic_id": uuid.UUID(t), "partitions": parts}
                          for t, parts in topics.items()],
            "node_endpoints": []}
