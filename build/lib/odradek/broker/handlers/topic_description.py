"""A topic and its partitions as Metadata and DescribeTopicPartitions describe them, from the
broker's metadata image: one description, so that the two APIs agree."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.metadata.image import INTERNAL_TOPICS, MetadataError, TopicState, validate_topic_name


def describe_topic(broker: Broker, state: TopicState, indexes: Iterable[int],
                   authorized_operations: int, listener: str,
                   unreachable: ErrorCode = ErrorCode.listener_not_found,
                   partition_fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The topic with its partitions at `indexes` (those it has), each with
    `partition_fields` added: LEADER_NOT_AVAILABLE for one without a leader, `unreachable`
    for one whose leader has no endpoint on `listener`, and as offline the replicas on
    brokers that are fenced or gone."""
    live = broker.live_broker_ids()
    extra = partition_fields or {}
    brokers = broker.metadata.brokers

    def error(leader: int) -> ErrorCode:
        if leader < 0:
            return ErrorCode.leader_not_available
        registration = brokers.get(leader)
        if registration is not None and registration.endpoint(listener) is None:
            return unreachable
        return ErrorCode.none

    return {
        "error_code": ErrorCode.none,
        "name": state.name,
        "topic_id": uuid.UUID(state.topic_id),
        "is_internal": state.name in INTERNAL_TOPICS,
        "partitions": [
            {
                "error_code": error(record.leader),
                "partition_index": index,
                "leader_id": record.leader,
                "leader_epoch": record.leader_epoch,
                "replica_nodes": record.replicas,
                "isr_nodes": record.isr,
                "offline_replicas": tuple(r for r in record.replicas if r not in live),
                **extra,
            }
            for index in indexes
            if (record := state.partitions.get(index)) is not None
        ],
        "topic_authorized_operations": authorized_operations,
    }


def missing_topic_error(name: str) -> ErrorCode:
    """Why a topic the image lacks is not described: UNKNOWN_TOPIC_OR_PARTITION, or what is
    wrong with its name."""
    try:
        validate_topic_name(name)
    except MetadataError as error:
        return error.error_code
    return ErrorCode.unknown_topic_or_partition
