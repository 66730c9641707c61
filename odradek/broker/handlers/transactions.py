"""InitProducerId and the transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
TxnOffsetCommit (transaction coordinator and group coordinator), WriteTxnMarkers (partition
leaders), DescribeTransactions, ListTransactions and DescribeProducers."""

from __future__ import annotations

import datetime
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import CLUSTER, TOPIC, TXN, Op
from odradek.broker.coordinator_runtime import CoordinatorUnavailable, NotCoordinator
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.producer_ids import ProducerIdsUnavailable
from odradek.broker.txn_verification import client_verdict, verify
from odradek.group.classic import Output
from odradek.group.coordinator import CommitPartition, GroupCoordinatorShard, OffsetCommitRequest
from odradek.log.partition import PartitionLog
from odradek.metadata.image import INTERNAL_TOPICS, OFFSETS_TOPIC
from odradek.runtime.clock import now_ms
from odradek.txn.coordinator import TransactionCoordinatorShard
from odradek.txn.producer_state import NO_SEQUENCE, ProducerStateError, ProducerStateManager

FIRST_BATCHED_ADD_PARTITIONS_VERSION = 4
FIRST_EPOCH_BUMPING_END_TXN_VERSION = 5
"""EndTxn v5 (KIP-890 part 2): the coordinator bumps the epoch at every transaction's end."""
FIRST_TRANSACTION_ABORTABLE_TXN_OFFSET_COMMIT = 4
"""TxnOffsetCommit v4 on takes TRANSACTION_ABORTABLE from a failed verification (KIP-890)."""
TXN_OFFSET_COMMIT_API_VERSION = 8
"""TxnOffsetCommit checks generations as OffsetCommit v8 does."""
log = logging.getLogger("odradek.broker.transactions")
_EPOCH = datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
_NO_TIME = _EPOCH
"""-1 ms: Kafka's "no timestamp" in a field kio types as a datetime."""


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) \
        else int(value)


async def handle_init_producer_id(context: RequestContext, request: Any) -> Result:
    """An idempotent producer (no transactional.id) gets a fresh producer id at epoch 0; a
    transactional one goes to its transaction coordinator. The first needs IDEMPOTENT_WRITE
    on the cluster or WRITE on some topic (KIP-679), the second WRITE on its id."""
    refusal = _init_refusal(context, request.transactional_id)
    if refusal is not None:
        return _init_error(refusal)
    producer_ids = context.services.producer_ids
    try:
        await producer_ids.ensure_available()
    except ProducerIdsUnavailable:
        return _init_error(ErrorCode.coordinator_load_in_progress)
    if request.transactional_id is None:
        return {"error_code": ErrorCode.none, "producer_id": producer_ids.take(),
                "producer_epoch": 0}
    txns = context.services.txns
    await txns.ensure_loaded()
    timeout_ms = _ms(request.transaction_timeout)
    try:
        return await txns.run_deferred(request.transactional_id, lambda shard, token, now: (
            shard.init_producer_id(token, request.transactional_id, timeout_ms,
                                   getattr(request, "producer_id", -1),
                                   getattr(request, "producer_epoch", -1), now,
                                   producer_ids.take)))
    except CoordinatorUnavailable as error:
        return _init_error(error.error_code)


def _init_refusal(context: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        if context.allowed(Op.WRITE, TXN, transactional_id):
            return None
        return ErrorCode.transactional_id_authorization_failed
    if context.allowed(Op.IDEMPOTENT_WRITE, CLUSTER) or context.allowed_on_some(Op.WRITE, TOPIC):
        return None
    return ErrorCode.cluster_authorization_failed


def _init_error(code: ErrorCode) -> dict[str, Any]:
    return {"error_code": code, "producer_id": -1, "producer_epoch": -1}


async def _add_partitions(context: RequestContext, transactional_id: str, producer_id: int,
                          producer_epoch: int, partitions: list[tuple[str, int]],
                          verify_only: bool) -> tuple[ErrorCode, dict[tuple[str, int], int]]:
    """(top-level error, per-partition errors) of one transaction's AddPartitionsToTxn."""
    broker = context.broker
    unknown = {key: ErrorCode.unknown_topic_or_partition for key in partitions
               if broker.leader_of(*key) is None}
    if unknown:  # Kafka fails the whole request: the others OPERATION_NOT_ATTEMPTED
        return ErrorCode.none, {key: unknown.get(key, ErrorCode.operation_not_attempted)
                                for key in partitions}
    txns = context.services.txns
    await txns.ensure_loaded()
    try:
        response = await txns.run_deferred(transactional_id, lambda shard, token, now: (
            shard.add_partitions(token, transactional_id, producer_id, producer_epoch,
                                 partitions, now, verify_only)))
    except CoordinatorUnavailable as error:
        return error.error_code, {key: error.error_code for key in partitions}
    code = response["error_code"]
    results = response.get("results") or {}
    return code, {key: results.get(key, code) for key in partitions}


def _by_topic(results: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (topic, partition), code in results.items():
        topics[topic].append({"partition_index": partition, "partition_error_code": code})
    return [{"name": name, "results_by_partition": parts} for name, parts in topics.items()]


async def handle_add_partitions_to_txn(context: RequestContext, request: Any) -> Result:
    """A producer's (before v4) needs WRITE on its transactional id and on each topic; a
    broker's verification (v4 on) needs CLUSTER_ACTION."""
    if context.version < FIRST_BATCHED_ADD_PARTITIONS_VERSION:
        partitions = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
        transactional_id = request.v3_and_below_transactional_id
        refused = _add_partitions_refusal(context, transactional_id, partitions)
        if refused:
            return {"results_by_topic_v3_and_below": _by_topic(refused)}
        _, results = await _add_partitions(
            context, transactional_id, request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch, partitions, verify_only=False)
        return {"results_by_topic_v3_and_below": _by_topic(results)}
    if not context.allowed(Op.CLUSTER_ACTION, CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed}
    answers = []
    for txn in request.transactions:
        partitions = [(t.name, p) for t in txn.topics for p in t.partitions]
        _, results = await _add_partitions(context, txn.transactional_id, txn.producer_id,
                                           txn.producer_epoch, partitions, txn.verify_only)
        answers.append({"transactional_id": txn.transactional_id,
                        "topic_results": _by_topic(results)})
    return {"error_code": ErrorCode.none, "results_by_transaction": answers}


def _add_partitions_refusal(context: RequestContext, transactional_id: str,
                            partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """As Kafka: without WRITE on the id, every partition is refused; else those of topics
    without WRITE are, and the others OPERATION_NOT_ATTEMPTED. Empty: all allowed."""
    if not context.allowed(Op.WRITE, TXN, transactional_id):
        return {key: ErrorCode.transactional_id_authorization_failed for key in partitions}
    writable = context.allowed_names(Op.WRITE, TOPIC, (t for t, _ in partitions
                                                       if t not in INTERNAL_TOPICS))
    if all(t in writable or t in INTERNAL_TOPICS for t, _ in partitions):
        return {}
    return {(t, p): ErrorCode.operation_not_attempted if t in writable or t in INTERNAL_TOPICS
            else ErrorCode.topic_authorization_failed for t, p in partitions}


async def handle_add_offsets_to_txn(context: RequestContext, request: Any) -> Result:
    """The group's `__consumer_offsets` partition joins the transaction."""
    groups = context.services.groups
    await groups.ensure_loaded()
    try:
        partition = groups.coordinator_partition(request.group_id)
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code}
    code, results = await _add_partitions(
        context, request.transactional_id, request.producer_id, request.producer_epoch,
        [(OFFSETS_TOPIC, partition)], verify_only=False)
    return {"error_code": code or results[(OFFSETS_TOPIC, partition)]}


async def handle_end_txn(context: RequestContext, request: Any) -> Result:
    txns = context.services.txns
    await txns.ensure_loaded()
    client_version = 2 if context.version >= FIRST_EPOCH_BUMPING_END_TXN_VERSION else 1
    try:
        return await txns.run_deferred(request.transactional_id, lambda shard, token, now: (
            shard.end_txn(token, request.transactional_id, request.producer_id,
                          request.producer_epoch, request.committed, now, client_version)))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "producer_id": -1, "producer_epoch": -1}


def refuse_txn_offset_commit(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    return {"topics": [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index, "error_code": code} for p in t.partitions]}
        for t in request.topics]}


async def handle_txn_offset_commit(context: RequestContext, request: Any) -> Result:
    """Offsets written into the producer's transaction; they apply when it commits. Topics
    without READ are refused. As Kafka's group coordinator does, the offsets partition is
    first verified to be in the producer's ongoing transaction (KIP-890), and the write is
    refused if a newer epoch of the producer has reached that partition meanwhile: a
    TxnOffsetCommit delayed past its transaction's abort must not leave offsets that the
    producer's next commit would apply."""
    readable = context.allowed_names(Op.READ, TOPIC, (t.name for t in request.topics))
    partitions = [
        CommitPartition(t.name, p.partition_index, p.committed_offset,
                        getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
        for t in request.topics for p in t.partitions if t.name in readable
    ]
    commit = OffsetCommitRequest(
        request.group_id, getattr(request, "generation_id", -1),
        getattr(request, "member_id", ""), getattr(request, "group_instance_id", None),
        tuple(partitions), TXN_OFFSET_COMMIT_API_VERSION)
    groups = context.services.groups
    await groups.ensure_loaded()
    errors: dict[tuple[str, int], ErrorCode]
    try:
        partition, _ = groups.shard_for(request.group_id)
        log_ = context.broker.partition(OFFSETS_TOPIC, partition)
        if log_ is None:
            raise NotCoordinator()
        code, guard = await _verify_offsets_partition(context, request, log_, partition)
        if code != ErrorCode.none:
            errors = {(p.topic, p.partition): code for p in partitions}
        else:
            errors = await groups.run(request.group_id, lambda shard, now: (
                _commit_in_transaction(log_.producers, request, commit, guard, shard, now)))
    except CoordinatorUnavailable as error:
        errors = {(p.topic, p.partition): error.error_code for p in partitions}
    return {"topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": errors.get((t.name, p.partition_index), ErrorCode.none)
             if t.name in readable else ErrorCode.topic_authorization_failed}
            for p in t.partitions]}
        for t in request.topics]}


async def _verify_offsets_partition(context: RequestContext, request: Any, log_: PartitionLog,
                                    partition: int) -> tuple[ErrorCode, object | None]:
    """(verdict, guard): whether the group's offsets partition is in the producer's ongoing
    transaction, asked of the transaction coordinator unless this partition's log already
    holds that transaction (Kafka's verification guard is then its sentinel: None)."""
    broker = context.broker
    if (not broker.config["transaction.partition.verification.enable"]
            or log_.producers.in_transaction(request.producer_id, request.producer_epoch)):
        return ErrorCode.none, None
    guard = log_.producers.start_verification(request.producer_id)
    verdicts = await verify(broker, context.services.txns, request.transactional_id,
                            request.producer_id, request.producer_epoch,
                            [(OFFSETS_TOPIC, partition)])
    code = client_verdict(verdicts[(OFFSETS_TOPIC, partition)],
                          context.version >= FIRST_TRANSACTION_ABORTABLE_TXN_OFFSET_COMMIT)
    # Kafka's group coordinator answers a retriable verification failure as it answers
    # NOT_ENOUGH_REPLICAS on its own writes
    if code == ErrorCode.not_enough_replicas:
        code = ErrorCode.coordinator_not_available
    return code, guard


def _commit_in_transaction(producers: ProducerStateManager, request: Any,
                           commit: OffsetCommitRequest, guard: object | None,
                           shard: GroupCoordinatorShard, now: int
                           ) -> tuple[dict[tuple[str, int], ErrorCode], Output]:
    """The shard's TxnOffsetCommit, unless the offsets partition's producer state refuses
    the write, checked in the same step as the append that follows."""
    try:
        producers.check_coordinator_write(request.producer_id, request.producer_epoch)
    except ProducerStateError as error:
        log.info("refused TxnOffsetCommit of group %s: %s", request.group_id, error.message)
        return {(p.topic, p.partition): error.error_code for p in commit.partitions}, Output()
    if (guard is not None
            and not producers.in_transaction(request.producer_id, request.producer_epoch)
            and not producers.still_verified(request.producer_id, guard)):
        return ({(p.topic, p.partition): ErrorCode.invalid_txn_state
                 for p in commit.partitions}, Output())
    return shard.commit_transactional_offsets(commit, request.producer_id,
                                              request.producer_epoch, now)


def refuse_write_txn_markers(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p, "error_code": code} for p in t.partition_indexes]}
        for t in m.topics]} for m in request.markers]}


async def handle_write_txn_markers(context: RequestContext, request: Any) -> Result:
    """A coordinator asks this broker, as the partitions' leader, to end a transaction."""
    broker = context.broker
    timeout_s = broker.config.integer("request.timeout.ms") / 1000
    answers = []
    for marker in request.markers:
        keys = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        results = await context.services.markers.write(
            marker.producer_id, marker.producer_epoch, marker.transaction_result,
            marker.coordinator_epoch, keys, timeout_s)
        topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for (topic, partition), code in results.items():
            topics[topic].append({"partition_index": partition, "error_code": code})
        answers.append({"producer_id": marker.producer_id, "topics": [
            {"name": name, "partitions": parts} for name, parts in topics.items()]})
    return {"markers": answers}


async def handle_describe_transactions(context: RequestContext, request: Any) -> Result:
    txns = context.services.txns
    await txns.ensure_loaded()
    states = []
    for transactional_id in request.transactional_ids:
        if not context.allowed(Op.DESCRIBE, TXN, transactional_id):
            states.append(_no_transaction(transactional_id,
                                          ErrorCode.transactional_id_authorization_failed))
            continue
        try:
            described = await txns.read(transactional_id,
                                        partial(TransactionCoordinatorShard.describe,
                                                transactional_id=transactional_id))
        except CoordinatorUnavailable as error:
            states.append(_no_transaction(transactional_id, error.error_code))
            continue
        if described is None:
            states.append(_no_transaction(transactional_id, ErrorCode.transactional_id_not_found))
            continue
        start = described["transaction_start_time_ms"]
        states.append({
            "error_code": ErrorCode.none, "transactional_id": transactional_id,
            "transaction_state": described["transaction_state"],
            "transaction_timeout": described["transaction_timeout_ms"],
            "transaction_start_time": _EPOCH + datetime.timedelta(milliseconds=start),
            "producer_id": described["producer_id"],
            "producer_epoch": described["producer_epoch"],
            "topics": [{"topic": topic, "partitions": list(parts)}
                       for topic, parts in described["topics"]
                       if context.allowed(Op.DESCRIBE, TOPIC, topic)],
        })
    return {"transaction_states": states}


def _no_transaction(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    """A transaction not described: Kafka's defaults (start time and epoch 0)."""
    return {"error_code": code, "transactional_id": transactional_id, "transaction_state": "",
            "transaction_timeout": 0, "transaction_start_time": _NO_TIME, "producer_id": -1,
            "producer_epoch": 0, "topics": []}


KNOWN_STATES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                          "CompleteAbort", "PrepareEpochFence", "Dead"})


async def handle_list_transactions(context: RequestContext, request: Any) -> Result:
    """The transactions this broker coordinates, filtered as asked."""
    txns = context.services.txns
    states = set(request.state_filters)
    unknown = sorted(states - KNOWN_STATES)
    listed = []
    if txns.is_loaded():
        try:
            listed = await txns.read_all(partial(
                TransactionCoordinatorShard.list_transactions,
                states=states & KNOWN_STATES if states else set(),
                producer_ids=set(request.producer_id_filters),
                duration_filter_ms=getattr(request, "duration_filter", -1), now_ms=now_ms()))
        except CoordinatorUnavailable as error:
            return {"error_code": error.error_code, "unknown_state_filters": unknown,
                    "transaction_states": []}
    listed = [t for t in listed if context.allowed(Op.DESCRIBE, TXN, t["transactional_id"])]
    return {"error_code": ErrorCode.none, "unknown_state_filters": unknown,
            "transaction_states": listed}


async def handle_describe_producers(context: RequestContext, request: Any) -> Result:
    """The producers whose state each partition (led here) keeps."""
    broker = context.broker
    topics = []
    readable = context.allowed_names(Op.READ, TOPIC, (t.name for t in request.topics))
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            log_, code = broker.leader_log(topic.name, index)
            if topic.name not in readable:
                log_, code = None, ErrorCode.topic_authorization_failed
            if log_ is None:
                partitions.append({"partition_index": index, "error_code": code,
                                   "error_message": None, "active_producers": []})
                continue
            partitions.append({
                "partition_index": index, "error_code": ErrorCode.none, "error_message": None,
                "active_producers": [
                    {"producer_id": entry.producer_id, "producer_epoch": entry.epoch,
                     "last_sequence": entry.last_seq if entry.batches else NO_SEQUENCE,
                     "last_timestamp": entry.last_timestamp,
                     "coordinator_epoch": entry.coordinator_epoch,
                     "current_txn_start_offset": -1 if entry.current_txn_first_offset is None
                     else entry.current_txn_first_offset}
                    for entry in log_.producers.producers.values()
                ]})
        topics.append({"name": topic.name, "partitions": partitions})
    return {"topics": topics}


Handler = Callable[[RequestContext, Any], "Result | Awaitable[Result]"]


def fenced_as_invalid_epoch(handler: Handler, first_version: int) -> Handler:
    """`handler`, answering PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to the versions before
    `first_version`, which predate that error (KIP-588), as Kafka does."""

    async def answer(context: RequestContext, request: Any) -> Result:
        result = handler(context, request)
        if isinstance(result, Awaitable):
            result = await result
        return _unfenced(result) if context.version < first_version else result

    return answer


def _unfenced(value: Any) -> Any:
    """The response with every `*error_code` field of PRODUCER_FENCED made
    INVALID_PRODUCER_EPOCH."""
    if isinstance(value, Mapping):
        return {key: ErrorCode.invalid_producer_epoch
                if key.endswith("error_code") and item == ErrorCode.producer_fenced
                else _unfenced(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_unfenced(item) for item in value]
    return value
