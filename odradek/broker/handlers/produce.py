"""Produce: the leader's checks of the batch (odradek/log/leader_validation.py), the producer's
sequence, then the append. Records are never decoded.

acks=all answers once the high watermark passes the appended batch (every ISR member has
it), or with the error that stopped it: the request's timeout, a lost leadership, or an ISR
that shrank below min.insync.replicas meanwhile."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import TOPIC, TXN, Op
from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.fetch import node_endpoints
from odradek.broker.replica_manager import Acknowledgement, ReplicaManager, acknowledged
from odradek.broker.server import ConnectionAbort
from odradek.broker.txn_verification import client_verdict, verify
from odradek.log.leader_validation import ClientAppend, RecordsRefused, validate_leader_append
from odradek.log.partition import PartitionLog, RecordBatchTooLargeError
from odradek.metadata.image import INTERNAL_TOPICS
from odradek.protocol.records import InvalidRecordsError
from odradek.runtime.clock import now_ms
from odradek.txn.producer_state import BatchMetadata, ProducerStateError

log = logging.getLogger("odradek.broker.produce")
_EPOCH = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
VALID_ACKS = (0, 1, -1)
FIRST_TRANSACTION_ABORTABLE_VERSION = 11
"""Produce v11 added TRANSACTION_ABORTABLE; older producers get INVALID_TXN_STATE, as Kafka
answers them."""


Pending = tuple[dict[str, Any], Acknowledgement]
"""A partition's answer and what acknowledging it waits for."""


@dataclass(slots=True)
class _Unverified:
    """A partition whose transactional batch waits for the coordinator's word (KIP-890);
    `answer` is its response, filled in once verified."""

    answer: dict[str, Any]
    topic: str
    records: bytes
    producer_id: int
    producer_epoch: int
    guard: object


def handle_produce(context: RequestContext, request: Any) -> Result | Awaitable[Result]:
    broker = context.broker
    replicas = context.services.replicas
    acks = request.acks
    pending: list[Pending] = []
    unverified: list[_Unverified] = []
    writable = _writable(context, request)
    responses = [
        {
            "name": topic.name,
            "partition_responses": [
                produce_partition(
                    broker, replicas, topic.name, data.index, data.records, context.version,
                    pending, acks, unverified,
                )
                if acks in VALID_ACKS and topic.name in writable
                else _error(data.index, ErrorCode.invalid_required_acks
                            if acks not in VALID_ACKS else _refusal(context, request))
                for data in topic.partition_data
            ],
        }
        for topic in request.topic_data
    ]
    if unverified:
        return _verify_then_finish(context, request, responses, pending, unverified)
    return _finish(context, request, responses, pending)


def _writable(context: RequestContext, request: Any) -> set[str]:
    """The topics the producer may write to: none without WRITE on its transactional id,
    else those it has WRITE on (checked once per topic, before any batch is looked at)."""
    txn_id = request.transactional_id
    if txn_id is not None and not context.allowed(Op.WRITE, TXN, txn_id):
        return set()
    return context.allowed_names(Op.WRITE, TOPIC, (topic.name for topic in request.topic_data))


def _refusal(context: RequestContext, request: Any) -> ErrorCode:
    txn_id = request.transactional_id
    if txn_id is not None and not context.allowed(Op.WRITE, TXN, txn_id):
        return ErrorCode.transactional_id_authorization_failed
    return ErrorCode.topic_authorization_failed


async def _verify_then_finish(context: RequestContext, request: Any,
                              responses: list[dict[str, Any]], pending: list[Pending],
                              unverified: list[_Unverified]) -> Result:
    broker = context.broker
    first = unverified[0]
    verdicts = await verify(broker, context.services.txns, request.transactional_id or "",
                            first.producer_id, first.producer_epoch,
                            [(u.topic, u.answer["index"]) for u in unverified])
    for item in unverified:
        index = item.answer["index"]
        code = client_verdict(verdicts[(item.topic, index)],
                              context.version >= FIRST_TRANSACTION_ABORTABLE_VERSION)
        log_ = broker.partition(item.topic, index)
        if code == ErrorCode.none and (
                log_ is None or not log_.producers.still_verified(item.producer_id, item.guard)):
            code = ErrorCode.invalid_txn_state
        if code != ErrorCode.none:
            _count_failure(broker, item.topic)
            item.answer.update(_error(index, code, f"{item.topic}-{index} is not verified "
                                      "in the producer's ongoing transaction: "
                                      f"{code.name.upper()}"))
            continue
        appended = produce_partition(broker, context.services.replicas, item.topic, index,
                                     item.records, context.version, pending, request.acks, None)
        item.answer.update(appended)
        # the acknowledgement's outcome (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...) must
        # reach the answer that is sent, not the copy produce_partition returned
        pending[:] = [(item.answer if answer is appended else answer, ack)
                      for answer, ack in pending]
    finished = _finish(context, request, responses, pending)
    return await finished if isinstance(finished, Awaitable) else finished


def _finish(context: RequestContext, request: Any, responses: list[dict[str, Any]],
            pending: list[Pending]) -> Result | Awaitable[Result]:
    """Count errors, then answer: at once, or once the appends are fsynced (as the flush
    policy asks) and, for acks=all, committed."""
    broker = context.broker
    failed = [
        partition["error_code"]
        for topic in responses
        for partition in topic["partition_responses"]
        if partition["error_code"]
    ]
    for code in failed:
        broker.metrics.count_error("Produce", code)
    if request.acks == 0:
        if failed:
            # Kafka closes the connection: the only way an acks=0 producer learns of it
            raise ConnectionAbort(f"acks=0 produce failed: {ErrorCode(failed[0]).name}")
        return None
    leaders = {p["current_leader"]["leader_id"] for t in responses
               for p in t["partition_responses"] if "current_leader" in p}
    response = {"responses": responses, "node_endpoints": [
        {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
        for n in node_endpoints(broker, leaders, context.listener)]}
    if not pending:
        return response
    if any(not ack.settled() for _, ack in pending):
        return _acknowledge(broker, pending, request.timeout.total_seconds(), response)
    _apply_outcomes(broker, pending, [ack.outcome() for _, ack in pending])
    return response


async def _acknowledge(broker: Broker, pending: list[Pending], timeout_s: float,
                       response: dict[str, Any]) -> Result:
    outcomes = await acknowledged([ack for _, ack in pending], timeout_s)
    _apply_outcomes(broker, pending, outcomes)
    return response


def _apply_outcomes(broker: Broker, pending: list[Pending], outcomes: list[ErrorCode]) -> None:
    for (answer, _), code in zip(pending, outcomes, strict=True):
        if code != ErrorCode.none:
            answer["error_code"] = code
            broker.metrics.count_error("Produce", code)


def _duplicate(replicas: ReplicaManager, key: tuple[str, int], original: BatchMetadata,
               log_: PartitionLog, acks: int, pending: list[Pending]) -> dict[str, Any]:
    """A retried batch already in the log: answered with the original's offsets and its
    timestamp as the append time, as Kafka does, and (for acks=all) once those are
    committed."""
    answer: dict[str, Any] = {
        "index": key[1], "error_code": ErrorCode.none, "base_offset": original.first_offset,
        "log_append_time": None if original.timestamp < 0
        else _EPOCH + datetime.timedelta(milliseconds=original.timestamp),
        "log_start_offset": log_.log_start_offset,
    }
    if acks == -1:
        pending.append((answer, Acknowledgement(
            None, replicas.committed(key, original.last_offset + 1))))
    return answer


def _error(index: int, code: ErrorCode, message: str | None = None,
           log_: PartitionLog | None = None) -> dict[str, Any]:
    """A refused batch. Kafka reports the log start offset of a partition it leads when the
    append itself failed (`log_`), -1 when it refused before (unknown partition, not the
    leader, corrupt or invalid records)."""
    return {"index": index, "error_code": code, "base_offset": -1, "error_message": message,
            "log_start_offset": -1 if log_ is None else log_.log_start_offset}


def _count_failure(broker: Broker, topic: str) -> None:
    """Per-topic failure counts, for topics that exist (client-chosen names make no series)."""
    if topic in broker.metadata.topics:
        broker.metrics.topic(topic).failed_produce.inc()


def produce_partition(
    broker: Broker,
    replicas: ReplicaManager,
    topic: str,
    index: int,
    records: bytes | None,
    version: int,
    pending: list[Pending],
    acks: int,
    unverified: list[_Unverified] | None,
) -> dict[str, Any]:
    """Append one partition's batch; its answer goes to `pending` when acknowledging it waits
    for an fsync or the ISR. The first transactional batch of a producer's transaction here
    goes to `unverified` (None: it was verified) and its answer comes later."""
    log_, code = broker.leader_log(topic, index)
    if unverified is not None and topic in broker.metadata.topics:
        broker.metrics.topic(topic).total_produce.inc()  # once: a verified batch comes back
    if log_ is None:
        _count_failure(broker, topic)
        hint = broker.leader_hint(topic, index)
        answer = _error(index, code)
        if hint is not None:
            answer["current_leader"] = {"leader_id": hint[0], "leader_epoch": hint[1]}
        return answer
    key = (topic, index)
    leader_epoch = replicas.leader_epoch(key)
    if leader_epoch is None:
        _count_failure(broker, topic)
        return _error(index, ErrorCode.not_leader_or_follower)
    if acks == -1 and replicas.below_min_isr(key):
        _count_failure(broker, topic)
        return _error(index, ErrorCode.not_enough_replicas,
                      f"The ISR of {topic}-{index} has {replicas.isr_size(key)} replica(s), "
                      f"fewer than its min ISR of {replicas.effective_min_isr(key)}", log_)
    if topic in INTERNAL_TOPICS:
        _count_failure(broker, topic)
        return _error(index, ErrorCode.invalid_topic_exception,
                      f"Cannot append to internal topic {topic}", log_)
    if not records:
        _count_failure(broker, topic)
        return _error(index, ErrorCode.corrupt_message, "empty record set")
    now = now_ms()
    try:
        batches = validate_leader_append(records, log_.config, (topic, index), now,
                                         ClientAppend(version))
    except RecordsRefused as refused:
        _count_failure(broker, topic)
        answer = _error(index, refused.error_code, refused.message, log_)
        if refused.record_errors:
            answer["record_errors"] = [{"batch_index": i, "batch_index_error_message": message}
                                       for i, message in refused.record_errors]
        return answer
    except InvalidRecordsError as error:
        _count_failure(broker, topic)
        log.info("rejected produce to %s-%d: %s", topic, index, error.message)
        return _error(index, error.error_code, error.message)
    batch = batches[0]
    if batch.producer_id >= 0:
        try:
            duplicate = log_.producers.check(batch)
        except ProducerStateError as error:
            _count_failure(broker, topic)
            log.info("rejected produce to %s-%d: %s", topic, index, error.message)
            return _error(index, error.error_code, error.message, log_)
        if duplicate is not None:
            return _duplicate(replicas, key, duplicate, log_, acks, pending)
        if (unverified is not None and batch.is_transactional
                and not log_.producers.in_transaction(batch.producer_id)
                and broker.config["transaction.partition.verification.enable"]):
            waiting: dict[str, Any] = {"index": index}
            unverified.append(_Unverified(
                waiting, topic, records, batch.producer_id, batch.producer_epoch,
                log_.producers.start_verification(batch.producer_id)))
            return waiting
    try:
        result, ack = replicas.append_as_leader(
            key, log_, leader_epoch, bytearray(records), batches, now, wait_for_isr=acks == -1)
    except RecordBatchTooLargeError as error:
        _count_failure(broker, topic)
        return _error(index, ErrorCode.record_list_too_large, str(error))
    stats = broker.metrics.topic(topic)
    stats.messages_in.inc(result.last_offset - result.base_offset + 1)
    stats.bytes_in.inc(len(records))
    answer = {
        "index": index,
        "error_code": ErrorCode.none,
        "base_offset": result.base_offset,
        "log_append_time": None
        if result.log_append_time_ms < 0
        else _EPOCH + datetime.timedelta(milliseconds=result.log_append_time_ms),
        "log_start_offset": result.log_start_offset,
    }
    if ack.flushing is not None or ack.committed is not None:
        pending.append((answer, ack))
    return answer
