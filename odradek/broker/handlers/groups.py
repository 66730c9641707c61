"""FindCoordinator and the group membership APIs: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, ListGroups, DescribeGroups, DeleteGroups, ConsumerGroupHeartbeat,
ConsumerGroupDescribe, ShareGroupHeartbeat and ShareGroupDescribe. Each turns the decoded
request into the coordinator core's terms and its answer back into the response schema."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import AUTHORIZATION_ERRORS, CLUSTER, GROUP, TOPIC, TXN, Op
from odradek.broker.coordinator_runtime import CoordinatorRuntime
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.group_runtime import CoordinatorUnavailable
from odradek.broker.handlers.share_offsets import delete_share_group_state
from odradek.group.classic import JoinRequest, Output, SyncRequest, join_error, sync_error
from odradek.group.consumer_handlers import HeartbeatRequest
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupError
from odradek.group.records import TopicPartitions
from odradek.group.share_handlers import ShareHeartbeatRequest

BATCHED_KEYS_VERSION = 4
GROUP_KEY = 0
TRANSACTION_KEY = 1
SHARE_KEY = 2
"""FindCoordinator v6+: the share coordinator of a "groupId:topicId:partition" key."""
BATCHED_LEAVE_VERSION = 3


def _milliseconds(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _client_host(context: RequestContext) -> str:
    return "/" + context.peer.rsplit(":", 1)[0]


async def _coordinator(context: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    broker = context.broker
    if key_type == SHARE_KEY:
        if not context.allowed(Op.CLUSTER_ACTION, CLUSTER):
            return _no_coordinator(key, AUTHORIZATION_ERRORS[CLUSTER], None)
        if not _share_key(key):
            return _no_coordinator(key, ErrorCode.invalid_request,
                                   f"Invalid share coordinator key {key!r}")
        runtime: CoordinatorRuntime[Any, Any] = context.services.shares
    elif key_type in (GROUP_KEY, TRANSACTION_KEY):
        resource_type = GROUP if key_type == GROUP_KEY else TXN
        if not context.allowed(Op.DESCRIBE, resource_type, key):
            return _no_coordinator(key, AUTHORIZATION_ERRORS[resource_type], None)
        runtime = context.services.groups if key_type == GROUP_KEY else context.services.txns
    else:
        return _no_coordinator(key, ErrorCode.invalid_request, f"Unknown key type {key_type}")
    await runtime.ensure_loaded()
    try:
        partition = runtime.coordinator_partition(key)
    except CoordinatorUnavailable as error:
        return _no_coordinator(key, error.error_code, None)
    leader = broker.leader_of(runtime.topic, partition)
    live = {b["node_id"]: b for b in broker.brokers(context.listener)}
    if leader in live:
        endpoint = live[leader]
        return {"key": key, "node_id": leader, "host": endpoint["host"],
                "port": endpoint["port"], "error_code": ErrorCode.none, "error_message": None}
    return _no_coordinator(key, ErrorCode.coordinator_not_available,
                           f"{runtime.topic}-{partition} has no live leader")


def _share_key(key: str) -> bool:
    """"groupId:topicId:partition", as Kafka's SharePartitionKey parses it."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].isdigit():
        return False
    try:
        uuid.UUID(parts[1])
    except ValueError:
        return False
    return True


def _no_coordinator(key: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
            "error_message": message}


async def handle_find_coordinator(context: RequestContext, request: Any) -> Result:
    key_type = getattr(request, "key_type", GROUP_KEY)
    if context.version >= BATCHED_KEYS_VERSION:
        return {"coordinators": [await _coordinator(context, key, key_type)
                                 for key in request.coordinator_keys]}
    return await _coordinator(context, request.key, key_type)


async def handle_join_group(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    session_timeout = _milliseconds(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    join = JoinRequest(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None),
        session_timeout, session_timeout if rebalance is None else _milliseconds(rebalance),
        request.protocol_type, tuple((p.name, p.metadata) for p in request.protocols),
        context.header.client_id or "", _client_host(context), context.version,
    )
    try:
        await groups.ensure_loaded()
        response: dict[str, Any] = await groups.run_deferred(
            join.group_id, lambda shard, token, now: shard.join_group(token, join, now))
    except CoordinatorUnavailable as error:
        return join_error(request.member_id, GroupError(error.error_code))
    return response


async def handle_sync_group(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    sync = SyncRequest(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None), getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None),
        tuple((a.member_id, a.assignment) for a in request.assignments),
    )
    try:
        await groups.ensure_loaded()
        response: dict[str, Any] = await groups.run_deferred(
            sync.group_id, lambda shard, token, now: shard.sync_group(token, sync, now))
    except CoordinatorUnavailable as error:
        return sync_error(GroupError(error.error_code))
    return response


async def handle_heartbeat(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    await groups.ensure_loaded()
    try:
        code = await groups.run(request.group_id, lambda shard, now: (shard.heartbeat(
            request.group_id, request.member_id, getattr(request, "group_instance_id", None),
            request.generation_id, now), Output()))
    except CoordinatorUnavailable as error:
        code = error.error_code
    return {"error_code": code}


async def handle_leave_group(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    await groups.ensure_loaded()
    if context.version >= BATCHED_LEAVE_VERSION:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    try:
        errors = await groups.run(
            request.group_id, lambda shard, now: shard.leave_group(request.group_id, members, now))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "members": []}
    if context.version < BATCHED_LEAVE_VERSION:
        return {"error_code": errors[0]}
    return {
        "error_code": ErrorCode.none,
        "members": [{"member_id": member_id, "group_instance_id": instance_id,
                     "error_code": code}
                    for (member_id, instance_id), code in zip(members, errors, strict=True)],
    }


async def handle_list_groups(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    if not groups.is_loaded():
        return {"error_code": ErrorCode.none, "groups": []}
    states = getattr(request, "states_filter", ())
    types = getattr(request, "types_filter", ())
    try:
        found = await groups.read_all(lambda shard: shard.list_groups(states, types))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "groups": []}
    every = context.allowed(Op.DESCRIBE, CLUSTER)
    listed = [
        {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
         "group_type": g.group_type}
        for g in found if every or context.allowed(Op.DESCRIBE, GROUP, g.group_id)
    ]
    return {"error_code": ErrorCode.none, "groups": listed}


async def handle_describe_groups(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    await groups.ensure_loaded()
    described = []
    for group_id in request.groups:
        answer, code = await _described(context, group_id, lambda shard, group: (
            shard.describe_group(group, context.version)))
        if answer is None:
            described.append({"group_id": group_id, "error_code": code,
                              "group_state": "", "protocol_type": "", "protocol_data": "",
                              "members": [], "authorized_operations": -(2**31)})
            continue
        described.append(_with_operations(context, request, answer))
    return {"groups": described}


async def _described(context: RequestContext, group_id: str,
                     describe: Callable[[GroupCoordinatorShard, str], dict[str, Any]]
                     ) -> tuple[dict[str, Any] | None, ErrorCode]:
    """The group as its shard describes it, if the principal may DESCRIBE it, or why not."""
    if not context.allowed(Op.DESCRIBE, GROUP, group_id):
        return None, ErrorCode.group_authorization_failed
    try:
        return (await context.services.groups.read(group_id, lambda shard: describe(
            shard, group_id)), ErrorCode.none)
    except CoordinatorUnavailable as error:
        return None, error.error_code


def _with_operations(context: RequestContext, request: Any,
                     described: dict[str, Any]) -> dict[str, Any]:
    """A described group with its authorized operations, when the request asks for them."""
    if getattr(request, "include_authorized_operations", False) and not described.get(
            "error_code"):
        described["authorized_operations"] = context.authorized_operations(
            GROUP, described["group_id"])
    return described


async def handle_delete_groups(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    await groups.ensure_loaded()
    results = []
    for group_id in request.groups_names:
        if not context.allowed(Op.DELETE, GROUP, group_id):
            results.append({"group_id": group_id,
                            "error_code": ErrorCode.group_authorization_failed})
            continue
        try:
            code = await delete_share_group_state(context, group_id)
            if code == ErrorCode.none:
                code = await groups.run(group_id, partial(_delete_group, group_id))
        except CoordinatorUnavailable as error:
            code = error.error_code
        results.append({"group_id": group_id, "error_code": code})
    return {"results": results}


def _delete_group(group_id: str, shard: GroupCoordinatorShard,
                  now_ms: int) -> tuple[ErrorCode, Output]:
    return shard.delete_group(group_id, now_ms)


async def handle_consumer_group_heartbeat(context: RequestContext, request: Any) -> Result:
    groups = context.services.groups
    owned = None if request.topic_partitions is None else tuple(
        TopicPartitions(str(tp.topic_id), tuple(tp.partitions))
        for tp in request.topic_partitions
    )
    heartbeat = HeartbeatRequest(
        request.group_id, request.member_id, request.member_epoch, request.instance_id,
        request.rack_id, _milliseconds(request.rebalance_timeout),
        None if request.subscribed_topic_names is None else tuple(request.subscribed_topic_names),
        getattr(request, "subscribed_topic_regex", None), request.server_assignor, owned,
        context.header.client_id or "", _client_host(context), context.version,
    )
    await groups.ensure_loaded()
    try:
        response = await groups.run(request.group_id,
                                    lambda shard, now: shard.consumer_heartbeat(heartbeat, now))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "member_epoch": -1}
    return {
        "error_code": response.error_code, "error_message": response.error_message,
        "member_id": response.member_id, "member_epoch": response.member_epoch,
        "heartbeat_interval": response.heartbeat_interval_ms,
        "assignment": _assignment(response.assignment),
    }


def _assignment(assignment: tuple[TopicPartitions, ...] | None) -> dict[str, Any] | None:
    return None if assignment is None else {"topic_partitions": [
        {"topic_id": uuid.UUID(tp.topic_id), "partitions": list(tp.partitions)}
        for tp in assignment
    ]}


async def handle_share_group_heartbeat(context: RequestContext, request: Any) -> Result:
    names = request.subscribed_topic_names
    if names is not None and not all(context.allowed(Op.DESCRIBE, TOPIC, n) for n in names):
        return {"error_code": ErrorCode.topic_authorization_failed, "member_epoch": 0,
                "heartbeat_interval": 0}
    heartbeat = ShareHeartbeatRequest(
        request.group_id, request.member_id, request.member_epoch, request.rack_id,
        None if names is None else tuple(names), context.header.client_id or "",
        _client_host(context),
    )
    groups = context.services.groups
    await groups.ensure_loaded()
    try:
        response = await groups.run(request.group_id,
                                    lambda shard, now: shard.share_heartbeat(heartbeat, now))
    except CoordinatorUnavailable as error:
        return {"error_code": error.error_code, "member_epoch": 0, "heartbeat_interval": 0}
    return {
        "error_code": response.error_code, "error_message": response.error_message,
        "member_id": response.member_id, "member_epoch": response.member_epoch,
        "heartbeat_interval": response.heartbeat_interval_ms,
        "assignment": _assignment(response.assignment),
    }


async def _describe_modern(context: RequestContext, request: Any,
                           describe: Callable[[GroupCoordinatorShard, str], dict[str, Any]]
                           ) -> Result:
    """ConsumerGroupDescribe and ShareGroupDescribe: each group its shard describes."""
    groups = context.services.groups
    await groups.ensure_loaded()
    described = []
    for group_id in request.group_ids:
        answer, code = await _described(context, group_id, describe)
        if answer is None:
            described.append({"group_id": group_id, "error_code": code,
                              "group_state": "", "group_epoch": -1, "assignment_epoch": -1,
                              "assignor_name": "", "members": [],
                              "authorized_operations": -(2**31)})
            continue
        described.append(_with_operations(context, request, answer))
    return {"groups": described}


async def handle_share_group_describe(context: RequestContext, request: Any) -> Result:
    return await _describe_modern(context, request, GroupCoordinatorShard.share_group_describe)


async def handle_consumer_group_describe(context: RequestContext, request: Any) -> Result:
    return await _describe_modern(context, request,
                                  GroupCoordinatorShard.consumer_group_describe)

