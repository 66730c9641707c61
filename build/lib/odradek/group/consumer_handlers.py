"""KIP-848's consumer group protocol (ConsumerGroupHeartbeat) as handlers without IO, after
Kafka 4.x's GroupMetadataManager and TargetAssignmentBuilder.

Handlers read a group and return the records that change it; `ConsumerGroup.replay` alone
applies them. A handler works on a draft copy of the group into which it replays every
record it emits, so that its later steps and its response see exactly the group that
replay will build. Timers (session and revocation deadlines) are volatile: handlers set and
cancel them on `ctx.timers` directly.

A heartbeat runs in three steps, as in Kafka: update the member (a new subscription, regex or
topic metadata bumps the group epoch), recompute the target assignment when the group epoch is
ahead of the assignment epoch, then move the member's current assignment towards its target
(`consumer_reconciliation`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from odradek.group.assignors import ASSIGNORS, MemberSubscription
from odradek.group.consumer_group import (
    LEAVE_GROUP_EPOCH,
    STATIC_LEAVE_GROUP_EPOCH,
    UNREVOKED_PARTITIONS,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    from_topic_partitions,
    to_topic_partitions,
)
from odradek.group.consumer_reconciliation import reconcile
from odradek.group.model import Changes, GroupContext, GroupError, TimerKey, TopicsView
from odradek.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
    TopicMetadata,
    TopicPartitions,
)

SESSION_TIMER = "consumer-session"
REBALANCE_TIMER = "consumer-rebalance"
GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
"""ConsumerGroupHeartbeat v1+ clients generate their member id (KIP-1082)."""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """ConsumerGroupHeartbeat v0/v1, as the broker decoded it."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: tuple[TopicPartitions, ...] | None
    client_id: str
    client_host: str
    api_version: int


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: tuple[TopicPartitions, ...] | None


_Changes = Changes[ConsumerGroup]


def heartbeat(group: ConsumerGroup | None, request: HeartbeatRequest,
              ctx: GroupContext) -> tuple[list[Record], HeartbeatResponse]:
    """Handle a ConsumerGroupHeartbeat; `group` is None when no group has that id yet."""
    try:
        _validate(request, ctx)
        if request.member_epoch in (LEAVE_GROUP_EPOCH, STATIC_LEAVE_GROUP_EPOCH):
            return _leave(group, request, ctx)
        return _heartbeat(group, request, ctx)
    except GroupError as error:
        return [], HeartbeatResponse(error.error_code, error.message, None, 0, 0, None)


def _blank(value: str | None) -> bool:
    """Java's `value.trim().isEmpty()` for a value that is set."""
    return value is not None and all(c <= " " for c in value)


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.invalid_request, message)


def _validate(request: HeartbeatRequest, ctx: GroupContext) -> None:
    epoch = request.member_epoch
    if (request.api_version >= GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0
            or epoch == LEAVE_GROUP_EPOCH) and _blank(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if _blank(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if _blank(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        # As in Kafka 4: an empty list of names or an empty regex joins subscribed to nothing
        # (Kafka's Java consumer joins so while its pattern matches no topic yet).
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be "
                           "non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_GROUP_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_GROUP_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    assignors = ctx.config.consumer_assignors
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(ErrorCode.unsupported_assignor,
                         f"ServerAssignor {request.server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(assignors)}.")
    if request.subscribed_topic_regex:
        try:
            re.compile(request.subscribed_topic_regex)
        except re.error as error:
            raise GroupError(ErrorCode.invalid_regular_expression,
                             f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a "
                             f"valid regular expression: {error}.") from None


def _group_not_found(group_id: str) -> GroupError:
    return GroupError(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")


def _heartbeat(group: ConsumerGroup | None, request: HeartbeatRequest,
               ctx: GroupContext) -> tuple[list[Record], HeartbeatResponse]:
    joining = request.member_epoch == 0
    if group is None:
        if not joining:
            raise _group_not_found(request.group_id)
        group = ConsumerGroup(request.group_id)
    max_size = ctx.config.consumer_max_size
    if len(group.members) >= max_size and request.member_id not in group.members:
        raise GroupError(ErrorCode.group_max_size_reached,
                         f"The consumer group has reached its maximum capacity of {max_size} "
                         "members.")
    member_id = request.member_id or ctx.new_member_id()
    changes = _Changes(group)
    if request.instance_id is None:
        member = _dynamic_member(changes.draft, member_id, request)
    else:
        member = _static_member(changes, member_id, request.instance_id, request)

    # 1. Update the member; a new subscription or new topic metadata bumps the group epoch.
    updated = _updated_member(member, request)
    metadata = updated.metadata_value()
    if metadata != member.metadata_value() or member_id not in changes.draft.members:
        changes.add(ConsumerGroupMemberMetadataKey(group.group_id, member_id), metadata)
    subscription_changed = (
        updated.subscribed_topic_names != member.subscribed_topic_names
        or updated.subscribed_topic_regex != member.subscribed_topic_regex
    )
    _update_subscriptions(changes, ctx, changes.draft.group_epoch == 0 or subscription_changed)

    # 2. Compute a new target assignment when the group epoch is ahead of it.
    draft = changes.draft
    if draft.group_epoch > draft.assignment_epoch:
        _update_target_assignment(changes, ctx)

    # 3. Move the member's current assignment towards its target.
    current = draft.members[member_id]
    reconciled = reconcile(current, draft.assignment_epoch, draft.target.get(member_id, {}),
                           draft.owner, request.topic_partitions)
    rebalance_timer: TimerKey = (REBALANCE_TIMER, group.group_id, member_id)
    if reconciled != current:
        changes.add(ConsumerGroupCurrentMemberAssignmentKey(group.group_id, member_id),
                    reconciled.assignment_value())
        if reconciled.state == UNREVOKED_PARTITIONS:
            ctx.timers.schedule(rebalance_timer, ctx.now_ms + reconciled.rebalance_timeout_ms)
        else:
            ctx.timers.cancel(rebalance_timer)
    ctx.timers.schedule((SESSION_TIMER, group.group_id, member_id),
                        ctx.now_ms + ctx.consumer_session_timeout_ms(group.group_id))

    final = draft.members[member_id]
    owned = None if request.topic_partitions is None else from_topic_partitions(
        request.topic_partitions)
    full_request = (request.rebalance_timeout_ms != -1 and owned is not None
                    and (request.subscribed_topic_names is not None
                         or request.subscribed_topic_regex is not None))
    send_assignment = (joining or full_request or final.assigned != member.assigned
                       or (owned is not None and owned != final.assigned))
    return changes.records, HeartbeatResponse(
        ErrorCode.none, None, member_id, final.member_epoch,
        ctx.consumer_heartbeat_interval_ms(group.group_id),
        to_topic_partitions(final.assigned) if send_assignment else None,
    )


def _dynamic_member(group: ConsumerGroup, member_id: str,
                    request: HeartbeatRequest) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        if request.member_epoch != 0:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
        return ConsumerMember(member_id)
    _check_member_epoch(member, request)
    return member


def _static_member(changes: _Changes, member_id: str, instance_id: str,
                   request: HeartbeatRequest) -> ConsumerMember:
    group = changes.draft
    existing = group.static_member(instance_id)
    if request.member_epoch == 0:
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if existing.member_epoch != STATIC_LEAVE_GROUP_EPOCH:
            raise GroupError(ErrorCode.unreleased_instance_id,
                             f"Static member {member_id} with instance id {instance_id} cannot "
                             f"join the group because the instance id is owned by "
                             f"{existing.member_id} member.")
        # The instance comes back: a new member takes over the old one's assignment.
        new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        target = group.target.get(existing.member_id, {})
        _remove_member(changes, existing.member_id)
        gid = group.group_id
        changes.add(ConsumerGroupMemberMetadataKey(gid, member_id), new.metadata_value())
        changes.add(ConsumerGroupTargetAssignmentMemberKey(gid, member_id),
                    ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(target)))
        changes.add(ConsumerGroupCurrentMemberAssignmentKey(gid, member_id),
                    new.assignment_value())
        return new
    if existing is None:
        raise GroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    _check_instance_owner(existing, member_id, instance_id)
    _check_member_epoch(existing, request)
    return existing


def _check_instance_owner(member: ConsumerMember, member_id: str, instance_id: str) -> None:
    if member.member_id != member_id:
        raise GroupError(ErrorCode.fenced_instance_id,
                         f"Static member {member_id} with instance id {instance_id} was fenced "
                         f"by member {member.member_id}.")


def _check_member_epoch(member: ConsumerMember, request: HeartbeatRequest) -> None:
    """Kafka's epoch fencing. Epoch 0 always (re)joins. A member may repeat a heartbeat at
    its previous epoch, as the response that bumped it may have been lost, if it owns no
    partition beyond its assignment."""
    epoch = request.member_epoch
    if epoch == 0 or epoch == member.member_epoch:
        return
    if epoch > member.member_epoch:
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The consumer group member has a greater member epoch ({epoch}) than "
                         f"the one known by the group coordinator ({member.member_epoch}). The "
                         "member must abandon all its partitions and rejoin.")
    owned = request.topic_partitions
    if epoch != member.previous_member_epoch or owned is None or not _within(
            from_topic_partitions(owned), member.assigned):
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The consumer group member has a smaller member epoch ({epoch}) than "
                         f"the one known by the group coordinator ({member.member_epoch}). The "
                         "member must abandon all its partitions and rejoin.")


def _within(owned: Assignment, assignment: Assignment) -> bool:
    return all(partitions <= assignment.get(t, frozenset()) for t, partitions in owned.items())


def _updated_member(member: ConsumerMember, request: HeartbeatRequest) -> ConsumerMember:
    """The member with what the request sets; absent fields keep their values."""
    regex = member.subscribed_topic_regex
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None
    names = member.subscribed_topic_names
    if request.subscribed_topic_names is not None:
        names = frozenset(request.subscribed_topic_names)
    return replace(
        member,
        instance_id=request.instance_id or member.instance_id,
        rack_id=request.rack_id or member.rack_id,
        rebalance_timeout_ms=(member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
                              else request.rebalance_timeout_ms),
        server_assignor=request.server_assignor or member.server_assignor,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        client_id=request.client_id,
        client_host=request.client_host,
    )


def _resolve(regex: str, topics: TopicsView) -> tuple[str, ...]:
    pattern = re.compile(regex)
    return tuple(sorted(name for name in topics.names()
                        if not name.startswith("__") and pattern.fullmatch(name)))


def _subscription_metadata(names: Iterable[str], topics: TopicsView) -> dict[str, TopicMetadata]:
    metadata = {}
    for name in sorted(names):
        info = topics.by_name(name)
        if info is not None:
            metadata[name] = TopicMetadata(info.topic_id, name, info.partitions)
    return metadata


def _update_subscriptions(changes: _Changes, ctx: GroupContext, bump: bool) -> None:
    """Resolve the regexes in use, drop unused ones, record the subscribed topics' metadata
    when it changed; bump the group epoch if asked or if what members subscribe to changed."""
    group = changes.draft
    gid = group.group_id
    in_use = group.regexes_in_use()
    for regex in sorted(group.regexes.keys() - in_use):
        changes.add(ConsumerGroupRegularExpressionKey(gid, regex), None)
    for regex in sorted(in_use):
        topics = _resolve(regex, ctx.topics)
        known = group.regexes.get(regex)
        if known is None or set(known.topics) != set(topics):
            # Kafka's version is the metadata image's offset; a TopicsView has none.
            changes.add(ConsumerGroupRegularExpressionKey(gid, regex),
                        ConsumerGroupRegularExpressionValue(topics, 0, ctx.now_ms))
            bump = True
    metadata = _subscription_metadata(group.subscribed_topic_names(), ctx.topics)
    if metadata != group.subscription_metadata:
        changes.add(ConsumerGroupPartitionMetadataKey(gid),
                    ConsumerGroupPartitionMetadataValue(tuple(metadata.values())))
        bump = True
    if bump:
        changes.add(ConsumerGroupMetadataKey(gid),
                    ConsumerGroupMetadataValue(group.group_epoch + 1))


def _update_target_assignment(changes: _Changes, ctx: GroupContext) -> None:
    """Kafka's TargetAssignmentBuilder: run the assignor over every member and record the
    targets that changed, then the new assignment epoch."""
    group = changes.draft
    topic_ids = {name: t.topic_id for name, t in group.subscription_metadata.items()}
    partition_counts = {t.topic_id: t.num_partitions for t in group.subscription_metadata.values()}
    subscriptions = {
        member_id: MemberSubscription(
            rack_id=member.rack_id,
            subscribed_topic_ids=frozenset(topic_ids[name]
                                           for name in group.member_topic_names(member)
                                           if name in topic_ids),
            assigned=group.target.get(member_id, {}),
        )
        for member_id, member in group.members.items()
    }
    assignor = ASSIGNORS[group.preferred_assignor() or ctx.config.consumer_assignors[0]]
    result = assignor.assign(subscriptions, partition_counts)
    for member_id in subscriptions:
        new = {t: frozenset(p) for t, p in result.get(member_id, {}).items() if p}
        if group.target.get(member_id) != new:
            changes.add(ConsumerGroupTargetAssignmentMemberKey(group.group_id, member_id),
                        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(new)))
    changes.add(ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
                ConsumerGroupTargetAssignmentMetadataValue(group.group_epoch))


# Leaving and fencing.


def _leave(group: ConsumerGroup | None, request: HeartbeatRequest,
           ctx: GroupContext) -> tuple[list[Record], HeartbeatResponse]:
    if group is None:
        raise _group_not_found(request.group_id)
    member_id, epoch = request.member_id, request.member_epoch
    response = HeartbeatResponse(ErrorCode.none, None, member_id, epoch, 0, None)
    if request.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {group.group_id}.")
        return _fence(group, member, ctx), response
    static = group.static_member(request.instance_id)
    if static is None:
        raise GroupError(ErrorCode.unknown_member_id,
                         f"Instance id {request.instance_id} is unknown.")
    _check_instance_owner(static, member_id, request.instance_id)
    if epoch == LEAVE_GROUP_EPOCH:
        return _fence(group, static, ctx), response
    # A static member leaving for a while keeps its partitions under its instance id until
    # its session expires; the ones it was revoking are free for others.
    away = replace(static, member_epoch=STATIC_LEAVE_GROUP_EPOCH, pending_revocation={})
    ctx.timers.cancel((REBALANCE_TIMER, group.group_id, member_id))
    return [(ConsumerGroupCurrentMemberAssignmentKey(group.group_id, member_id),
             away.assignment_value())], response


def _remove_member(changes: _Changes, member_id: str) -> None:
    gid = changes.draft.group_id
    changes.add(ConsumerGroupCurrentMemberAssignmentKey(gid, member_id), None)
    changes.add(ConsumerGroupTargetAssignmentMemberKey(gid, member_id), None)
    changes.add(ConsumerGroupMemberMetadataKey(gid, member_id), None)


def _fence(group: ConsumerGroup, member: ConsumerMember, ctx: GroupContext) -> list[Record]:
    """Remove a member and bump the group epoch so that its partitions go to others."""
    changes = _Changes(group)
    _remove_member(changes, member.member_id)
    _update_subscriptions(changes, ctx, bump=True)
    for kind in (SESSION_TIMER, REBALANCE_TIMER):
        ctx.timers.cancel((kind, group.group_id, member.member_id))
    return changes.records


def on_timer(group: ConsumerGroup, key: TimerKey, ctx: GroupContext) -> list[Record]:
    """A member's session expired, or it did not revoke partitions within its rebalance
    timeout: fence it. Stale timers (member gone, revocation done) do nothing."""
    kind, member_id = key[0], key[2]
    if kind not in (SESSION_TIMER, REBALANCE_TIMER):
        raise ValueError(f"not a consumer group timer: {key!r}")
    member = group.members.get(member_id)
    if member is None or (kind == REBALANCE_TIMER and member.state != UNREVOKED_PARTITIONS):
        return []
    return _fence(group, member, ctx)


def refresh_metadata(group: ConsumerGroup, ctx: GroupContext) -> list[Record]:
    """After topics were created, deleted or grew: re-resolve regexes and bump the group
    epoch if the subscribed topics changed; the next heartbeat computes the new target."""
    changes = _Changes(group)
    _update_subscriptions(changes, ctx, bump=False)
    return changes.records


def schedule_loaded_timers(group: ConsumerGroup, ctx: GroupContext) -> None:
    """After a load: every member must heartbeat within a session timeout, and a member
    revoking partitions must finish within its rebalance timeout."""
    for member in group.members.values():
        ctx.timers.schedule((SESSION_TIMER, group.group_id, member.member_id),
                            ctx.now_ms + ctx.consumer_session_timeout_ms(group.group_id))
        if member.state == UNREVOKED_PARTITIONS:
            ctx.timers.schedule((REBALANCE_TIMER, group.group_id, member.member_id),
                                ctx.now_ms + member.rebalance_timeout_ms)
