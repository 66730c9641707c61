"""KIP-932's share group protocol (ShareGroupHeartbeat) as handlers without IO, after Kafka
4.x's GroupMetadataManager.

As for consumer groups, a handler reads a group and returns the records that change it,
replaying each into a draft so that its later steps see what replay will build. A heartbeat
updates the member (a new subscription, or new metadata of the subscribed topics, bumps the
group epoch), recomputes the target assignment with the SimpleAssignor when the group epoch
is ahead of it, and gives the member its target at once: share groups have no revocation
handshake, since several members may consume a partition together. Session timers are
volatile, set on `ctx.timers`.

A partition is assigned only once its share-partition state exists. A heartbeat records the
subscribed partitions without state as initializing (ShareGroupStatePartitionMetadata) and
returns a ShareInitialization, which the shell sends to the share coordinator; its answer
moves them to initialized (or, failed, out of initializing: a later heartbeat asks again).
The next heartbeat then finds initialized partitions in no target, bumps the group epoch and
assigns them (Kafka's initializedAssignmentPending). `in_flight` is what this coordinator
has asked for and not heard back about; partitions recorded as initializing but not in
flight (the request was lost with an earlier coordinator) are asked for again.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from odradek.group import share_assignor
from odradek.group.consumer_group import STABLE, to_topic_partitions
from odradek.group.consumer_handlers import HeartbeatResponse
from odradek.group.model import Changes, GroupContext, GroupError, TimerKey, TopicInfo, TopicsView
from odradek.group.records import (
    Record,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from odradek.group.share_group import (
    LEAVE_GROUP_EPOCH,
    ShareGroup,
    ShareInitialization,
    ShareMember,
    with_partitions,
)

SESSION_TIMER = "share-session"
MAX_MEMBER_ID_LENGTH = 36
"""KafkaApis.isMemberIdValid: a share consumer's own UUID."""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    """ShareGroupHeartbeat v1, as the broker decoded it."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


_Changes = Changes[ShareGroup]


InFlight = frozenset[tuple[str, int]]
"""(topic id, partition) pairs whose initialization was asked for and not answered yet."""


def heartbeat(group: ShareGroup | None, request: ShareHeartbeatRequest, ctx: GroupContext,
              in_flight: InFlight = frozenset()
              ) -> tuple[list[Record], HeartbeatResponse, ShareInitialization | None]:
    """Handle a ShareGroupHeartbeat; `group` is None when no group has that id yet."""
    try:
        validate(request)
        if request.member_epoch == LEAVE_GROUP_EPOCH:
            records = _leave(group, request.group_id, request.member_id, ctx)
            return records, HeartbeatResponse(
                ErrorCode.none, None, request.member_id, LEAVE_GROUP_EPOCH, 0, None), None
        return _heartbeat(group, request, ctx, in_flight)
    except GroupError as error:
        return [], error_response(error.error_code, error.message), None


def error_response(code: ErrorCode, message: str | None) -> HeartbeatResponse:
    return HeartbeatResponse(code, message, None, 0, 0, None)


def _blank(value: str | None) -> bool:
    """Java's `value.trim().isEmpty()` for a value that is set."""
    return value is not None and all(c <= " " for c in value)


def validate(request: ShareHeartbeatRequest) -> None:
    """KafkaApis' member id check, then GroupCoordinatorService's request checks."""
    if not request.member_id or len(request.member_id) > MAX_MEMBER_ID_LENGTH:
        raise GroupError(ErrorCode.invalid_request)
    if _blank(request.member_id):
        raise GroupError(ErrorCode.invalid_request, "MemberId can't be empty.")
    if _blank(request.group_id):
        raise GroupError(ErrorCode.invalid_request, "GroupId can't be empty.")
    if _blank(request.rack_id):
        raise GroupError(ErrorCode.invalid_request, "RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise GroupError(ErrorCode.invalid_request,
                             "SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_EPOCH:
        raise GroupError(ErrorCode.invalid_request, "MemberEpoch is invalid.")


def _heartbeat(group: ShareGroup | None, request: ShareHeartbeatRequest, ctx: GroupContext,
               in_flight: InFlight
               ) -> tuple[list[Record], HeartbeatResponse, ShareInitialization | None]:
    joining = request.member_epoch == 0
    if group is None:
        if not joining:
            raise GroupError(ErrorCode.group_id_not_found,
                             f"Share group {request.group_id} not found.")
        group = ShareGroup(request.group_id)
    max_size = ctx.config.share_max_size
    if len(group.members) >= max_size and request.member_id not in group.members:
        raise GroupError(ErrorCode.group_max_size_reached,
                         f"The share group has reached its maximum capacity of {max_size} "
                         "members.")
    member = _member(group, request)
    changes = _Changes(group)
    gid = group.group_id

    # 1. Update the member; a new subscription, new topic metadata or initialized partitions
    # that no member has yet bump the group epoch.
    updated = replace(
        member, rack_id=request.rack_id or member.rack_id, client_id=request.client_id,
        client_host=request.client_host,
        subscribed_topic_names=(member.subscribed_topic_names
                                if request.subscribed_topic_names is None
                                else frozenset(request.subscribed_topic_names)))
    if updated.metadata_value() != member.metadata_value() or member.member_id not in (
            group.members):
        changes.add(ShareGroupMemberMetadataKey(gid, member.member_id), updated.metadata_value())
    _update_metadata(changes, ctx, updated.subscribed_topic_names != member.subscribed_topic_names)

    # 2. Compute a new target assignment of the initialized partitions when the group epoch
    # is ahead of it.
    draft = changes.draft
    if draft.group_epoch > draft.assignment_epoch:
        _update_target_assignment(changes, ctx)

    # 3. The member takes its target at once.
    current = draft.members[member.member_id]
    if current.member_epoch != draft.assignment_epoch or current.state != STABLE:
        target = draft.target.get(member.member_id, {})
        reconciled = replace(current, state=STABLE, member_epoch=draft.assignment_epoch,
                             previous_member_epoch=current.member_epoch, assigned=target)
        changes.add(ShareGroupCurrentMemberAssignmentKey(gid, member.member_id),
                    reconciled.assignment_value())
    ctx.timers.schedule((SESSION_TIMER, gid, member.member_id),
                        ctx.now_ms + ctx.config.share_session_timeout_ms)

    # 4. Ask for the state of subscribed partitions that have none.
    initialization = _initialize(changes, ctx, in_flight)

    final = draft.members[member.member_id]
    send_assignment = joining or final.assigned != member.assigned
    return changes.records, HeartbeatResponse(
        ErrorCode.none, None, member.member_id, final.member_epoch,
        ctx.config.share_heartbeat_interval_ms,
        to_topic_partitions(final.assigned) if send_assignment else None,
    ), initialization


def _member(group: ShareGroup, request: ShareHeartbeatRequest) -> ShareMember:
    """The member the request is from, a new one on a join; Kafka's epoch fencing, which
    lets epoch 0 rejoin as the member it names."""
    member = group.members.get(request.member_id)
    if member is None:
        if request.member_epoch != 0:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {request.member_id} is not a member of group "
                             f"{group.group_id}.")
        return ShareMember(request.member_id)
    epoch = request.member_epoch
    if epoch == 0:
        return member
    if epoch > member.member_epoch:
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The share group member has a greater member epoch ({epoch}) than "
                         f"the one known by the group coordinator ({member.member_epoch}). "
                         "The member must abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The share group member has a smaller member epoch ({epoch}) than "
                         f"the one known by the group coordinator ({member.member_epoch}), "
                         "and it does not match the previous member epoch "
                         f"({member.previous_member_epoch}). The member must abandon all its "
                         "partitions and rejoin.")
    return member


def _subscribed_topics(group: ShareGroup, topics: TopicsView) -> list[TopicInfo]:
    infos = (topics.by_name(name) for name in sorted(group.subscribed_topic_names()))
    return [info for info in infos if info is not None and info.partitions > 0]


def metadata_hash(infos: Iterable[TopicInfo]) -> int:
    """A signed 64-bit hash of the subscribed topics' ids, names and partition counts (Kafka
    hashes them with Murmur3 and the racks too; only equality matters to the group)."""
    digest = hashlib.blake2b(digest_size=8)
    for info in sorted(infos, key=lambda i: i.name):
        digest.update(f"{info.topic_id}/{info.name}/{info.partitions};".encode())
    value: int = struct.unpack(">q", digest.digest())[0]
    return value


def _update_metadata(changes: _Changes, ctx: GroupContext, bump: bool) -> None:
    """Bump the group epoch if asked, if the subscribed topics' metadata changed, or if the
    target is current but leaves initialized partitions of the subscribed topics out."""
    group = changes.draft
    infos = _subscribed_topics(group, ctx.topics)
    new_hash = metadata_hash(infos)
    if (bump or new_hash != group.metadata_hash or group.group_epoch == 0
            or _initialized_assignment_pending(group, infos)):
        changes.add(ShareGroupMetadataKey(group.group_id),
                    ShareGroupMetadataValue(group.group_epoch + 1, new_hash))


def _assignable(group: ShareGroup, infos: Iterable[TopicInfo]) -> dict[str, frozenset[int]]:
    """Topic id -> the subscribed topic's partitions that have share-partition state."""
    initialized = group.initialized_partitions()
    return {i.topic_id: frozenset(p for p in initialized.get(i.topic_id, ())
                                  if p < i.partitions) for i in infos}


def _initialized_assignment_pending(group: ShareGroup, infos: Iterable[TopicInfo]) -> bool:
    if group.is_empty() or group.assignment_epoch < group.group_epoch:
        return False
    assigned = group.assigned_partitions()
    return any(not partitions <= assigned.get(topic_id, frozenset())
               for topic_id, partitions in _assignable(group, infos).items())


def _initialize(changes: _Changes, ctx: GroupContext, in_flight: InFlight
                ) -> ShareInitialization | None:
    """Record the subscribed partitions without state, and not asked for by this
    coordinator, as initializing; the initialization to ask the share coordinator for."""
    group = changes.draft
    initialized = group.initialized_partitions()
    missing: dict[str, tuple[str, tuple[int, ...]]] = {}
    for info in _subscribed_topics(group, ctx.topics):
        known = initialized.get(info.topic_id, frozenset())
        partitions = tuple(p for p in range(info.partitions)
                           if p not in known and (info.topic_id, p) not in in_flight)
        if partitions:
            missing[info.topic_id] = (info.name, partitions)
    if not missing:
        return None
    current = group.state_partitions
    changes.add(ShareGroupStatePartitionMetadataKey(group.group_id),
                ShareGroupStatePartitionMetadataValue(
                    with_partitions(current.initializing_topics, missing),
                    current.initialized_topics, current.deleting_topics))
    return ShareInitialization(group.group_id, group.group_epoch, missing)


def _update_target_assignment(changes: _Changes, ctx: GroupContext) -> None:
    """Run the SimpleAssignor over every member and the initialized partitions; record the
    targets that changed, then the new assignment epoch."""
    group = changes.draft
    infos = {i.name: i for i in _subscribed_topics(group, ctx.topics)}
    subscriptions = {
        member_id: frozenset(infos[n].topic_id for n in m.subscribed_topic_names if n in infos)
        for member_id, m in group.members.items()
    }
    assignable = _assignable(group, infos.values())
    result = share_assignor.assign(subscriptions, assignable, group.target)
    for member_id in subscriptions:
        new = {t: p for t, p in result.get(member_id, {}).items() if p}
        if group.target.get(member_id, {}) != new:
            changes.add(ShareGroupTargetAssignmentMemberKey(group.group_id, member_id),
                        ShareGroupTargetAssignmentMemberValue(to_topic_partitions(new)))
    changes.add(ShareGroupTargetAssignmentMetadataKey(group.group_id),
                ShareGroupTargetAssignmentMetadataValue(group.group_epoch, ctx.now_ms))


# Leaving and fencing.


def _leave(group: ShareGroup | None, group_id: str, member_id: str,
           ctx: GroupContext) -> list[Record]:
    if group is None:
        raise GroupError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(ErrorCode.unknown_member_id,
                         f"Member {member_id} is not a member of group {group_id}.")
    return fence(group, member_id, ctx)


def fence(group: ShareGroup, member_id: str, ctx: GroupContext) -> list[Record]:
    """Remove a member and bump the group epoch so that its partitions go to others."""
    changes = _Changes(group)
    gid = group.group_id
    changes.add(ShareGroupCurrentMemberAssignmentKey(gid, member_id), None)
    changes.add(ShareGroupTargetAssignmentMemberKey(gid, member_id), None)
    changes.add(ShareGroupMemberMetadataKey(gid, member_id), None)
    _update_metadata(changes, ctx, bump=True)
    ctx.timers.cancel((SESSION_TIMER, gid, member_id))
    return changes.records


def on_timer(group: ShareGroup, key: TimerKey, ctx: GroupContext) -> list[Record]:
    """A member's session expired: fence it. A stale timer (member gone) does nothing."""
    if key[0] != SESSION_TIMER:
        raise ValueError(f"not a share group timer: {key!r}")
    if key[2] not in group.members:
        return []
    return fence(group, key[2], ctx)


def refresh_metadata(group: ShareGroup, ctx: GroupContext, in_flight: InFlight = frozenset()
                     ) -> tuple[list[Record], ShareInitialization | None]:
    """After topics were created, deleted or grew: bump the group epoch if the subscribed
    topics changed, and ask for the state of new partitions; each member's next heartbeat
    computes the new target."""
    changes = _Changes(group)
    _update_metadata(changes, ctx, bump=False)
    return changes.records, _initialize(changes, ctx, in_flight)


def schedule_loaded_timers(group: ShareGroup, ctx: GroupContext) -> None:
    """After a load, every member must heartbeat within a session timeout."""
    for member_id in group.members:
        ctx.timers.schedule((SESSION_TIMER, group.group_id, member_id),
                            ctx.now_ms + ctx.config.share_session_timeout_ms)
