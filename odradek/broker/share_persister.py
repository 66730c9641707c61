"""The share-partition leader's persister, as Kafka's DefaultStatePersister: the state of a
share-partition is read from and written to its share coordinator with ReadShareGroupState
and WriteShareGroupState, over the inter-broker listener, to whichever broker leads the
`__share_group_state` partition of its key (this one included)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.net.kafka_client import BrokerConnectionError, ConnectionPool
from odradek.protocol.codec import build_request
from odradek.share.partition import StateBatch, StateWrite

INITIALIZE_STATE_KEY, INITIALIZE_STATE_VERSION = 83, 0
READ_STATE_KEY, READ_STATE_VERSION = 84, 0
WRITE_STATE_KEY, WRITE_STATE_VERSION = 85, 1
DELETE_STATE_KEY, DELETE_STATE_VERSION = 86, 0
READ_SUMMARY_KEY, READ_SUMMARY_VERSION = 87, 1
RETRIABLE = frozenset({ErrorCode.coordinator_not_available, ErrorCode.not_coordinator,
                       ErrorCode.coordinator_load_in_progress, ErrorCode.request_timed_out,
                       ErrorCode.network_exception, ErrorCode.unknown_topic_or_partition})


def share_state_key(group_id: str, topic_id: str, partition: int) -> str:
    """Kafka's SharePartitionKey as the share coordinator keys it: group:topicId:partition."""
    return f"{group_id}:{uuid.UUID(topic_id)}:{partition}"


@dataclass(frozen=True, slots=True)
class PersistedState:
    state_epoch: int
    start_offset: int
    """-1 when the share-partition was never initialized."""
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class StateSummary:
    """ReadShareGroupStateSummary's answer for one share-partition."""

    error: ErrorCode
    message: str | None
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int


class CoordinatorLocator(Protocol):
    """The share coordinator's runtime, as far as finding a key's coordinator goes."""

    topic: str

    async def ensure_loaded(self) -> None: ...

    def coordinator_partition(self, key: str) -> int: ...


class PersisterError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class StatePersister:
    """Read and write share-partition state at its share coordinator."""

    def __init__(self, broker: Broker, coordinators: CoordinatorLocator) -> None:
        self.broker = broker
        self.coordinators = coordinators
        self._pool = ConnectionPool(f"share-persister-{broker.node_id}",
                                    broker.config.integer("request.timeout.ms") / 1000,
                                    broker.inter_broker_security)

    async def read(self, group_id: str, topic_id: str, partition: int,
                   leader_epoch: int) -> PersistedState:
        """The persisted state; PersisterError with the coordinator's error otherwise."""
        response = await self._send(group_id, topic_id, partition, build_request(
            READ_STATE_KEY, READ_STATE_VERSION, {"group_id": group_id, "topics": [{
                "topic_id": uuid.UUID(topic_id), "partitions": [
                    {"partition": partition, "leader_epoch": leader_epoch}]}]}))
        result = response.results[0].partitions[0]
        _raise_for(result.error_code, result.error_message)
        return PersistedState(result.state_epoch, result.start_offset, tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in result.state_batches))

    async def initialize(self, group_id: str, topic_id: str, partition: int, state_epoch: int,
                         start_offset: int) -> None:
        """InitializeShareGroupState: the share-partition's state starts at `start_offset`."""
        response = await self._send(group_id, topic_id, partition, build_request(
            INITIALIZE_STATE_KEY, INITIALIZE_STATE_VERSION, {"group_id": group_id, "topics": [{
                "topic_id": uuid.UUID(topic_id), "partitions": [{
                    "partition": partition, "state_epoch": state_epoch,
                    "start_offset": start_offset}]}]}))
        result = response.results[0].partitions[0]
        _raise_for(result.error_code, result.error_message)

    async def read_summary(self, group_id: str, topic_id: str, partition: int) -> StateSummary:
        """The share-partition's start offset and epochs; its error, if any, in the summary;
        PersisterError when its coordinator cannot be reached."""
        response = await self._send(group_id, topic_id, partition, build_request(
            READ_SUMMARY_KEY, READ_SUMMARY_VERSION, {"group_id": group_id, "topics": [{
                "topic_id": uuid.UUID(topic_id), "partitions": [
                    {"partition": partition, "leader_epoch": -1}]}]}))
        r = response.results[0].partitions[0]
        return StateSummary(ErrorCode(r.error_code), r.error_message, r.state_epoch,
                            r.leader_epoch, r.start_offset,
                            getattr(r, "delivery_complete_count", -1))

    async def delete(self, group_id: str, topic_id: str, partition: int) -> None:
        """DeleteShareGroupState: the share-partition's state is gone."""
        response = await self._send(group_id, topic_id, partition, build_request(
            DELETE_STATE_KEY, DELETE_STATE_VERSION, {"group_id": group_id, "topics": [{
                "topic_id": uuid.UUID(topic_id), "partitions": [{"partition": partition}]}]}))
        result = response.results[0].partitions[0]
        _raise_for(result.error_code, result.error_message)

    async def write(self, group_id: str, topic_id: str, partition: int,
                    write: StateWrite) -> None:
        """Persist a change; PersisterError with the coordinator's error otherwise."""
        response = await self._send(group_id, topic_id, partition, build_request(
            WRITE_STATE_KEY, WRITE_STATE_VERSION, {"group_id": group_id, "topics": [{
                "topic_id": uuid.UUID(topic_id), "partitions": [{
                    "partition": partition, "state_epoch": write.state_epoch,
                    "leader_epoch": write.leader_epoch, "start_offset": write.start_offset,
                    "delivery_complete_count": write.delivery_complete_count,
                    "state_batches": [
                        {"first_offset": b.first_offset, "last_offset": b.last_offset,
                         "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                        for b in write.state_batches]}]}]}))
        result = response.results[0].partitions[0]
        _raise_for(result.error_code, result.error_message)

    async def _send(self, group_id: str, topic_id: str, partition: int, request: Any) -> Any:
        key = share_state_key(group_id, topic_id, partition)
        await self.coordinators.ensure_loaded()
        try:
            state_partition = self.coordinators.coordinator_partition(key)
        except Exception as error:  # CoordinatorUnavailable while the topic is being made
            raise PersisterError(ErrorCode.coordinator_not_available, str(error)) from error
        leader = self.broker.leader_of(self.coordinators.topic, state_partition)
        endpoint = self.broker.inter_broker_endpoint(leader)
        if leader is None or endpoint is None:
            raise PersisterError(ErrorCode.coordinator_not_available,
                                 f"{self.coordinators.topic}-{state_partition} has no leader")
        try:
            return await self._pool.send((endpoint.host, endpoint.port), request)
        except BrokerConnectionError as error:
            raise PersisterError(ErrorCode.network_exception, str(error)) from error

    def close(self) -> None:
        self._pool.close()


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.none:
        raise PersisterError(ErrorCode(code), message or ErrorCode(code).name)
