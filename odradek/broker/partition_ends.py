"""Partitions' end offsets as Kafka's NetworkPartitionMetadataClient lists them for the lag
of DescribeShareGroupOffsets: ListOffsets LATEST, read_uncommitted (the high watermark), at
each partition's leader; a partition led here is read without a request."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.replica_manager import ReplicaManager
from odradek.net.kafka_client import BrokerConnectionError, ConnectionPool
from odradek.net.kafka_client.request_versions import LIST_OFFSETS
from odradek.protocol.codec import build_request

LATEST = -1


class PartitionEnds:
    """One use's connections to the leaders asked; `close` when done."""

    def __init__(self, broker: Broker, replicas: ReplicaManager) -> None:
        self.broker = broker
        self.replicas = replicas
        self._pool = ConnectionPool(f"partition-ends-{broker.node_id}",
                                    broker.config.integer("request.timeout.ms") / 1000,
                                    broker.inter_broker_security)

    async def end_offset(self, topic: str, partition: int) -> tuple[ErrorCode, int]:
        """(error, end offset); the offset is -1 with an error."""
        local = self.replicas.high_watermark((topic, partition))
        if local is not None:
            return ErrorCode.none, local
        leader = self.broker.leader_of(topic, partition)
        endpoint = self.broker.inter_broker_endpoint(leader)
        if leader is None or endpoint is None:
            return ErrorCode.leader_not_available, -1
        request = build_request(*LIST_OFFSETS, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [{
                "partition_index": partition, "current_leader_epoch": -1,
                "timestamp": LATEST}]}]})
        try:
            response = await self._pool.send((endpoint.host, endpoint.port), request)
        except BrokerConnectionError:
            return ErrorCode.network_exception, -1
        answer = response.topics[0].partitions[0]
        code = ErrorCode(answer.error_code)
        return code, answer.offset if code == ErrorCode.none else -1

    def close(self) -> None:
        self._pool.close()
