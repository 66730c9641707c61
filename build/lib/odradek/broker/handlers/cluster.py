"""DescribeCluster, DescribeLogDirs and DescribeTopicPartitions (KIP-966)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import TOPIC, Op
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.metadata import AUTHORIZED_OPERATIONS_OMITTED, cluster_operations
from odradek.broker.handlers.topic_description import describe_topic, missing_topic_error
from odradek.metadata.image import INTERNAL_TOPICS

log = logging.getLogger("odradek.broker.cluster")

BROKERS_ENDPOINT = 1
CONTROLLERS_ENDPOINT = 2
ZERO_UUID = uuid.UUID(int=0)

# --- DescribeCluster ---------------------------------------------------------------------


def handle_describe_cluster(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    requested = getattr(request, "endpoint_type", BROKERS_ENDPOINT)
    if requested not in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
        return {"error_code": ErrorCode.unsupported_endpoint_type,
                "error_message": f"Unsupported endpoint type {requested}"}
    if requested != BROKERS_ENDPOINT:
        return {"error_code": ErrorCode.mismatched_endpoint_type,
                "error_message": "The request was sent to an endpoint of type BROKER, "
                                 "but we wanted an endpoint of type CONTROLLER"}
    include_fenced = getattr(request, "include_fenced_brokers", False)
    return {
        "error_code": ErrorCode.none,
        "endpoint_type": BROKERS_ENDPOINT,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "brokers": [
            {"broker_id": b["node_id"], "host": b["host"], "port": b["port"],
             "rack": b["rack"], "is_fenced": b["is_fenced"]}
            for b in broker.brokers(context.listener, include_fenced)
        ],
        "cluster_authorized_operations": cluster_operations(context)
        if request.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED,
    }


# --- DescribeLogDirs ---------------------------------------------------------------------


def refuse_describe_log_dirs(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """No log dirs, and the error where the version has room for it (v3+), as Kafka."""
    return {"error_code": code, "results": []}


async def handle_describe_log_dirs(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    wanted = (
        None if request.topics is None
        else {(t.topic, p) for t in request.topics for p in t.partitions}
    )
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), log_ in sorted(broker.logs.logs(), key=lambda item: item[0]):
        if wanted is not None and (topic, partition) not in wanted:
            continue
        topics.setdefault(topic, []).append({
            "partition_index": partition,
            "partition_size": log_.size_bytes(),
            "offset_lag": max(log_.high_watermark - log_.log_end_offset, 0),
            "is_future_key": False,
        })
    usage = await asyncio.get_running_loop().run_in_executor(
        None, shutil.disk_usage, broker.log_dir
    )
    return {
        "error_code": ErrorCode.none,
        "results": [{
            "error_code": ErrorCode.none,
            "log_dir": str(broker.log_dir),
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            "total_bytes": usage.total,
            "usable_bytes": usage.free,
        }],
    }


# --- DescribeTopicPartitions -------------------------------------------------------------

NO_ELECTION_RECORDS = {"eligible_leader_replicas": (), "last_known_elr": ()}
"""Eligible leader replicas (KIP-966) are not kept: every partition has none."""


def handle_describe_topic_partitions(context: RequestContext, request: Any) -> Result:
    """Topics in name order from the cursor on, at most `response_partition_limit`
    partitions (capped by max.request.partition.size.limit); `next_cursor` resumes."""
    broker = context.broker
    cursor = request.cursor
    start = cursor.topic_name if cursor is not None else ""
    describe_all = not request.topics
    names = set(broker.metadata.topics) if describe_all else {t.name for t in request.topics}
    names = {name for name in names if name >= start}
    describable = context.allowed_names(Op.DESCRIBE, TOPIC, names)
    if describe_all:
        names = describable
    if cursor is not None and not describe_all and cursor.topic_name not in names:
        return _invalid(request, "DescribeTopicPartitionsRequest topic list should contain the "
                                 f"cursor topic: {cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(request, "DescribeTopicPartitionsRequest cursor partition must be "
                                 f"valid: {cursor.partition_index}")
    remaining = max(min(broker.config.integer("max.request.partition.size.limit"),
                        request.response_partition_limit), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in sorted(names):
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        state = broker.metadata.topics.get(name)
        if name not in describable:
            topics.append(_missing_topic(context, name, ErrorCode.topic_authorization_failed))
            continue
        if state is None:
            if not describe_all:
                topics.append(_missing_topic(context, name, missing_topic_error(name)))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        end = min(len(state.partitions), first + remaining)
        topics.append(describe_topic(broker, state, range(first, end),
                                     context.authorized_operations(TOPIC, name),
                                     context.listener, partition_fields=NO_ELECTION_RECORDS))
        if end < len(state.partitions):
            next_cursor = {"topic_name": name, "partition_index": end}
            break
        remaining -= max(end - first, 0)
    return {"topics": topics, "next_cursor": next_cursor}


def _missing_topic(context: RequestContext, name: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": context.authorized_operations(TOPIC, name)
        if code != ErrorCode.topic_authorization_failed else AUTHORIZED_OPERATIONS_OMITTED,
    }


def _invalid(request: Any, message: str) -> Result:
    """Kafka answers a malformed request with the error on every requested topic (the
    response has no field for the message, so it is logged)."""
    log.info("invalid DescribeTopicPartitions request: %s", message)
    return {
        "topics": [
            {"error_code": ErrorCode.invalid_request, "name": t.name, "topic_id": ZERO_UUID,
             "is_internal": False, "partitions": []}
            for t in request.topics
        ],
    }
