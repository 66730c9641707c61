"""The mirror's producer on one cluster, spoken in Kafka's protocol over
`odradek.net.kafka_client`: idempotent, and transactional when it has a transactional id
(FindCoordinator, InitProducerId, AddPartitionsToTxn, Produce with acks=all, EndTxn).

It sends record batches that are already whole (the mirror's rewritten batches): it keeps
the next sequence of each partition and stamps nothing itself. Errors follow the Java
producer's rules: a retriable error is retried with the same bytes (the broker drops a
duplicate by its sequence) until `delivery_timeout_s`; a fenced producer raises
`ProducerFencedError`; anything else raises `ProducerError`, after which the caller starts
over with `init` (a new epoch aborts whatever transaction was open).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from odradek.net.kafka_client import Address, KafkaClientError, KafkaCluster
from odradek.net.kafka_client.request_versions import (
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    PRODUCE,
)
from odradek.protocol.codec import build_request

log = logging.getLogger("odradek.mirror.producer")

TRANSACTION_KEY_TYPE = 1
ACKS_ALL = -1
PRODUCE_TIMEOUT_MS = 30_000
RETRY_BACKOFF_S = 0.1
"""The Java clients' retry.backoff.ms."""
CONCURRENT_TRANSACTIONS_BACKOFF_S = 0.02
"""The Java producer retries CONCURRENT_TRANSACTIONS sooner than other errors."""

_REFRESH_METADATA = frozenset({
    ErrorCode.not_leader_or_follower, ErrorCode.unknown_topic_or_partition,
    ErrorCode.leader_not_available, ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
})
_RETRIABLE = _REFRESH_METADATA | {
    ErrorCode.request_timed_out, ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append, ErrorCode.corrupt_message,
    ErrorCode.network_exception, ErrorCode.concurrent_transactions,
    ErrorCode.coordinator_load_in_progress, ErrorCode.kafka_storage_error,
}
_COORDINATOR_MOVED = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available})
_FENCED = frozenset({ErrorCode.producer_fenced, ErrorCode.invalid_producer_epoch,
                     ErrorCode.transactional_id_authorization_failed})

TopicPartition = tuple[str, int]
T = TypeVar("T")


class ProducerError(Exception):
    """A request that failed for good: start over with `init`."""


class ProducerFencedError(ProducerError):
    """A newer producer with the same transactional id exists: stop writing."""


class _Retry(Exception):
    def __init__(self, reason: str, backoff_s: float = RETRY_BACKOFF_S) -> None:
        super().__init__(reason)
        self.backoff_s = backoff_s


class MirrorProducer:
    def __init__(self, cluster: KafkaCluster, transactional_id: str | None,
                 transaction_timeout_ms: int, delivery_timeout_s: float) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.delivery_timeout_s = delivery_timeout_s
        self.producer_id = -1
        self.producer_epoch = -1
        self._coordinator: Address | None = None
        self._sequences: dict[TopicPartition, int] = {}
        self._in_transaction: set[TopicPartition] = set()

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None

    def sequence(self, key: TopicPartition) -> int:
        return self._sequences.get(key, 0)

    async def init(self) -> None:
        """A new producer id or epoch (InitProducerId), which fences an older producer with
        the same transactional id and aborts its open transaction; sequences restart."""
        async def attempt() -> None:
            response = await self._to_coordinator(INIT_PRODUCER_ID, {
                "transactional_id": self.transactional_id,
                "transaction_timeout": self.transaction_timeout_ms,
                "producer_id": -1, "producer_epoch": -1})
            self._check(response.error_code, "InitProducerId")
            self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch

        await self._retrying("InitProducerId", attempt)
        self._sequences.clear()
        self._in_transaction.clear()

    async def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn for those not yet in the open transaction."""
        new = sorted(set(partitions) - self._in_transaction)
        if not new:
            return
        topics: dict[str, list[int]] = {}
        for topic, partition in new:
            topics.setdefault(topic, []).append(partition)

        async def attempt() -> None:
            response = await self._to_coordinator(ADD_PARTITIONS_TO_TXN, {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": p}
                                        for t, p in topics.items()]})
            for topic in response.results_by_topic_v3_and_below:
                for result in topic.results_by_partition:
                    self._check(result.partition_error_code,
                                f"AddPartitionsToTxn {topic.name}-{result.partition_index}")

        await self._retrying("AddPartitionsToTxn", attempt)
        self._in_transaction.update(new)

    async def end_transaction(self, commit: bool) -> None:
        """EndTxn. A commit retried after an answer was lost finds the transaction complete:
        the broker answers INVALID_TXN_STATE, raised as ProducerError (the caller reads back
        what was committed)."""
        if not self._in_transaction:
            return

        async def attempt() -> None:
            response = await self._to_coordinator(END_TXN, {
                "transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "committed": commit})
            self._check(response.error_code, "EndTxn")

        await self._retrying("EndTxn", attempt)
        self._in_transaction.clear()

    def _produce_request(self, key: TopicPartition, batch: bytes) -> Any:
        return build_request(*PRODUCE, {
            "transactional_id": self.transactional_id, "acks": ACKS_ALL,
            "timeout": PRODUCE_TIMEOUT_MS, "topic_data": [{"name": key[0], "partition_data": [
                {"index": key[1], "records": batch}]}]})

    async def produce_all(self, key: TopicPartition,
                          batches: list[tuple[bytes, int]]) -> list[int]:
        """Write whole batches (stamped with consecutive sequences from `sequence(key)`),
        each with its record count; their base offsets. A Produce request carries one batch
        per partition, so they go as back-to-back requests in one round trip; from the
        first one not written, they are sent again one at a time, with `produce`'s retries
        (the broker recognises a batch it already has by its sequence)."""
        offsets: list[int] = []
        try:
            responses = await self.cluster.send_all_to_leader(
                *key, [self._produce_request(key, batch) for batch, _ in batches])
        except KafkaClientError:
            responses = []
        for (_, count), response in zip(batches, responses, strict=False):
            (answer,) = response.responses[0].partition_responses
            if answer.error_code != ErrorCode.none:
                break
            offsets.append(answer.base_offset)
            self._sequences[key] = (self.sequence(key) + count) % (1 << 31)
        for batch, count in batches[len(offsets):]:
            offsets.append(await self.produce(key, batch, count))
        return offsets

    async def produce(self, key: TopicPartition, batch: bytes, record_count: int) -> int:
        """Write one whole batch (stamped with `sequence(key)`) with acks=all; its base
        offset. The partition's sequence moves on by `record_count`."""
        topic, partition = key
        request = self._produce_request(key, batch)

        async def attempt() -> int:
            try:
                response = await self.cluster.send_to_leader(topic, partition, request)
            except KafkaClientError as error:
                await self._refresh(topic)
                raise _Retry(str(error)) from None
            (answer,) = response.responses[0].partition_responses
            if answer.error_code in _REFRESH_METADATA:
                await self._refresh(topic)
            self._check(answer.error_code, f"Produce to {topic}-{partition}"
                        + (f": {answer.error_message}" if answer.error_message else ""))
            base_offset: int = answer.base_offset
            return base_offset

        base_offset = await self._retrying(f"Produce to {topic}-{partition}", attempt)
        self._sequences[key] = (self.sequence(key) + record_count) % (1 << 31)
        return base_offset

    async def _refresh(self, topic: str) -> None:
        try:
            await self.cluster.metadata([topic])
        except KafkaClientError as error:
            log.debug("metadata for %s: %s", topic, error)

    async def _to_coordinator(self, api: tuple[int, int], body: dict[str, Any]) -> Any:
        """A request to the transaction coordinator (any broker for an idempotent
        producer's InitProducerId)."""
        request = build_request(*api, body)
        try:
            if self.transactional_id is None:
                return await self.cluster.send(request)
            if self._coordinator is None:
                self._coordinator = await self._find_coordinator()
            return await self.cluster.connections.send(self._coordinator, request)
        except KafkaClientError as error:
            self._coordinator = None
            raise _Retry(str(error)) from None

    async def _find_coordinator(self) -> Address:
        response = await self.cluster.send(build_request(*FIND_COORDINATOR, {
            "key_type": TRANSACTION_KEY_TYPE, "coordinator_keys": [self.transactional_id]}))
        (found,) = response.coordinators
        if found.error_code != ErrorCode.none:
            raise _Retry(f"FindCoordinator: {ErrorCode(found.error_code).name}")
        return found.host, found.port

    def _check(self, code: int, what: str) -> None:
        if code == ErrorCode.none:
            return
        name = ErrorCode(code).name
        if code in _FENCED:
            raise ProducerFencedError(f"{what}: {name}")
        if code in _COORDINATOR_MOVED:
            self._coordinator = None
            raise _Retry(f"{what}: {name}")
        if code in _RETRIABLE:
            backoff = (CONCURRENT_TRANSACTIONS_BACKOFF_S
                       if code == ErrorCode.concurrent_transactions else RETRY_BACKOFF_S)
            raise _Retry(f"{what}: {name}", backoff)
        raise ProducerError(f"{what}: {name}")

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.delivery_timeout_s
        while True:
            try:
                return await attempt()
            except _Retry as retry:
                if loop.time() + retry.backoff_s > deadline:
                    raise ProducerError(f"{what} gave up after {self.delivery_timeout_s:.0f} "
                                        f"s: {retry}") from None
                await asyncio.sleep(retry.backoff_s)
