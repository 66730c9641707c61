"""KIP-890 part 1: before a partition leader appends the first transactional batch of a
producer's transaction, it asks the transaction coordinator whether the partition is in
that producer's ongoing transaction (AddPartitionsToTxn v4, verify only). A batch delayed
past its transaction's end can then never start a transaction of its own."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import CoordinatorUnavailable
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime
from odradek.net.kafka_client import BrokerConnection, BrokerConnectionError
from odradek.net.kafka_client.request_versions import ADD_PARTITIONS_TO_TXN_VERIFY
from odradek.protocol.codec import build_request

log = logging.getLogger("odradek.broker.txn_verification")

TopicPartition = tuple[str, int]
RETRIABLE = frozenset({
    ErrorCode.coordinator_not_available, ErrorCode.not_coordinator,
    ErrorCode.coordinator_load_in_progress, ErrorCode.concurrent_transactions,
    ErrorCode.request_timed_out, ErrorCode.network_exception,
})
"""Answers that say nothing about the transaction: the producer retries (Kafka answers older
clients NOT_ENOUGH_REPLICAS for these)."""


async def verify(broker: Broker, txns: TransactionCoordinatorRuntime, transactional_id: str,
                 producer_id: int, producer_epoch: int, partitions: list[TopicPartition]
                 ) -> dict[TopicPartition, ErrorCode]:
    """Each partition's verdict: NONE when it is in the producer's ongoing transaction."""
    await txns.ensure_loaded()
    try:
        coordinator_partition = txns.coordinator_partition(transactional_id)
    except CoordinatorUnavailable as error:
        return _retriable(partitions, error.error_code)
    if coordinator_partition in txns.shards:
        try:
            response = await txns.run_deferred(transactional_id, lambda shard, token, now: (
                shard.add_partitions(token, transactional_id, producer_id, producer_epoch,
                                     partitions, now, True)))
        except CoordinatorUnavailable as error:
            return _retriable(partitions, error.error_code)
        results = response.get("results") or {}
        return _verdicts(partitions, {key: ErrorCode(results.get(key, response["error_code"]))
                                      for key in partitions})
    return await _verify_remotely(broker, txns.topic, coordinator_partition, transactional_id,
                                  producer_id, producer_epoch, partitions)


async def _verify_remotely(broker: Broker, txn_topic: str, coordinator_partition: int,
                           transactional_id: str, producer_id: int, producer_epoch: int,
                           partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    leader = broker.leader_of(txn_topic, coordinator_partition)
    endpoint = broker.inter_broker_endpoint(leader)
    if endpoint is None:
        return _retriable(partitions, ErrorCode.coordinator_not_available)
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    request = build_request(*ADD_PARTITIONS_TO_TXN_VERIFY, {"transactions": [{
        "transactional_id": transactional_id, "producer_id": producer_id,
        "producer_epoch": producer_epoch, "verify_only": True,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
    }]})
    timeout_s = broker.config.integer("request.timeout.ms") / 1000
    try:
        connection = await BrokerConnection.connect(
            endpoint.host, endpoint.port, f"txn-verify-{broker.node_id}", timeout_s,
            broker.inter_broker_security)
        try:
            response = await connection.send(request, timeout_s)
        finally:
            connection.close()
    except BrokerConnectionError as error:
        log.info("verifying a transaction with broker %d: %s", leader, error)
        return _retriable(partitions, ErrorCode.network_exception)
    if response.error_code != ErrorCode.none:
        return _verdicts(partitions, {key: ErrorCode(response.error_code) for key in partitions})
    answered = {(topic.name, p.partition_index): ErrorCode(p.partition_error_code)
                for result in response.results_by_transaction
                for topic in result.topic_results for p in topic.results_by_partition}
    return _verdicts(partitions, {key: answered.get(key, ErrorCode.unknown_server_error)
                                  for key in partitions})


def client_verdict(code: ErrorCode, abortable_supported: bool) -> ErrorCode:
    """A verdict as Kafka's AddPartitionsToTxnManager hands it to the writer: PRODUCER_FENCED
    as INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE as INVALID_TXN_STATE to request
    versions that predate it."""
    if code == ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if code == ErrorCode.transaction_abortable and not abortable_supported:
        return ErrorCode.invalid_txn_state
    return code


def _verdicts(partitions: list[TopicPartition], codes: dict[TopicPartition, ErrorCode]
              ) -> dict[TopicPartition, ErrorCode]:
    return {key: ErrorCode.not_enough_replicas if codes[key] in RETRIABLE else codes[key]
            for key in partitions}


def _retriable(partitions: list[TopicPartition], code: ErrorCode
               ) -> dict[TopicPartition, ErrorCode]:
    return _verdicts(partitions, dict.fromkeys(partitions, code))
