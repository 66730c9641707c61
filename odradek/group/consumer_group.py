"""KIP-848's consumer group protocol (ConsumerGroupHeartbeat) as a state machine without IO,
after Kafka 4.x's GroupMetadataManager, ConsumerGroup, CurrentAssignmentBuilder and
TargetAssignmentBuilder.

All of a consumer group's state is durable. Handlers read a group and return the records that
change it; `ConsumerGroup.replay` alone applies them, when a handler's records are appended
and when a shard loads `__consumer_offsets` alike. A handler works on a draft copy of the group
into which it replays every record it emits, so that its later steps and its response see
exactly the group that replay will build. Timers (session and revocation deadlines) are
volatile: handlers set and cancel them on `ctx.timers` directly.

A heartbeat runs in three steps, as in Kafka: update the member (a new subscription, regex or
topic metadata bumps the group epoch), recompute the target assignment when the group epoch is
ahead of the assignment epoch, then move the member's current assignment towards its target.
The last step revokes before it assigns: a member gives up partitions at its old epoch, and a
partition still held by another member is only handed out once that member has released it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group.assignors import ASSIGNORS, MemberSubscription
from odradek.group.model import GroupContext, GroupError, TimerKey, TopicsView
from odradek.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
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
    RecordKey,
    RecordValue,
    TopicMetadata,
    TopicPartitions,
)

CONSUMER_PROTOCOL_TYPE = "consumer"
SESSION_TIMER = "consumer-session"
REBALANCE_TIMER = "consumer-rebalance"
EMPTY_STATE, ASSIGNING_STATE, RECONCILING_STATE, STABLE_STATE = (
    "Empty", "Assigning", "Reconciling", "Stable")
"""Kafka's ConsumerGroupState names."""

LEAVE_GROUP_EPOCH = -1
STATIC_LEAVE_GROUP_EPOCH = -2
GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
"""ConsumerGroupHeartbeat v1+ clients generate their member id (KIP-1082)."""

# MemberState, as ConsumerGroupCurrentMemberAssignmentValue.state stores it.
STABLE = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2

Assignment = Mapping[str, frozenset[int]]
"""Topic id -> partitions; no topic maps to an empty set."""
OwnerOf = Callable[[str, int], str | None]
"""(topic id, partition) -> the member holding it, or None."""


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == assignment_epoch

    def metadata_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
            subscribed_topic_regex=self.subscribed_topic_regex,
            server_assignor=self.server_assignor,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
        )

    def assignment_value(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned_partitions=to_topic_partitions(self.assigned),
            partitions_pending_revocation=to_topic_partitions(self.pending_revocation),
        )


class ConsumerGroup:
    """A consumer group as its records describe it, plus indexes replay derives from them."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.target: dict[str, dict[str, frozenset[int]]] = {}
        self.subscription_metadata: dict[str, TopicMetadata] = {}
        """Topic name -> metadata of the subscribed topics, as the last assignment saw them."""
        self.regexes: dict[str, ConsumerGroupRegularExpressionValue] = {}
        """Resolved subscription regexes."""
        self._owners: dict[tuple[str, int], str] = {}
        """(topic id, partition) -> the member it is assigned to or pending revocation from."""
        self._static_members: dict[str, str] = {}
        self._topic_refs: dict[str, int] = {}
        self._regex_refs: dict[str, int] = {}
        self._assignor_refs: dict[str, int] = {}

    def __eq__(self, other: object) -> bool:
        """Equal durable state; the indexes follow from it."""
        if not isinstance(other, ConsumerGroup):
            return NotImplemented
        return self._durable() == other._durable()

    __hash__ = None  # type: ignore[assignment]

    def _durable(self) -> tuple[Any, ...]:
        return (self.group_id, self.group_epoch, self.assignment_epoch, self.members,
                self.target, self.subscription_metadata, self.regexes)

    def copy(self) -> ConsumerGroup:
        """A copy that replays independently (members and values are immutable)."""
        clone = ConsumerGroup(self.group_id)
        clone.group_epoch = self.group_epoch
        clone.assignment_epoch = self.assignment_epoch
        clone.members = dict(self.members)
        clone.target = dict(self.target)
        clone.subscription_metadata = dict(self.subscription_metadata)
        clone.regexes = dict(self.regexes)
        clone._owners = dict(self._owners)
        clone._static_members = dict(self._static_members)
        clone._topic_refs = dict(self._topic_refs)
        clone._regex_refs = dict(self._regex_refs)
        clone._assignor_refs = dict(self._assignor_refs)
        return clone

    # Replay.

    def replay(self, key: RecordKey, value: RecordValue | None) -> None:
        match key:
            case ConsumerGroupMetadataKey():
                assert value is None or isinstance(value, ConsumerGroupMetadataValue)
                self.group_epoch = 0 if value is None else value.epoch
            case ConsumerGroupPartitionMetadataKey():
                assert value is None or isinstance(value, ConsumerGroupPartitionMetadataValue)
                topics = () if value is None else value.topics
                self.subscription_metadata = {t.topic_name: t for t in topics}
            case ConsumerGroupMemberMetadataKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupMemberMetadataValue)
                self._replay_member_metadata(member_id, value)
            case ConsumerGroupTargetAssignmentMemberKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
                if value is None:
                    self.target.pop(member_id, None)
                else:
                    self.target[member_id] = from_topic_partitions(value.topic_partitions)
            case ConsumerGroupTargetAssignmentMetadataKey():
                if value is None:
                    self.assignment_epoch = -1
                else:
                    assert isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
                    self.assignment_epoch = value.assignment_epoch
            case ConsumerGroupCurrentMemberAssignmentKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
                self._replay_current_assignment(member_id, value)
            case ConsumerGroupRegularExpressionKey(regular_expression=regex):
                assert value is None or isinstance(value, ConsumerGroupRegularExpressionValue)
                if value is None:
                    self.regexes.pop(regex, None)
                else:
                    self.regexes[regex] = value
            case _:
                raise ValueError(f"not a consumer group record: {key!r}")

    def _replay_member_metadata(self, member_id: str,
                                value: ConsumerGroupMemberMetadataValue | None) -> None:
        if value is None:
            self._put(member_id, None)
            return
        member = self.members.get(member_id) or ConsumerMember(member_id)
        self._put(member_id, replace(
            member,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex or None,
            server_assignor=value.server_assignor,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
        ))

    def _replay_current_assignment(
        self, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue | None
    ) -> None:
        member = self.members.get(member_id)
        if value is None:
            if member is not None:
                self._put(member_id, replace(
                    member, member_epoch=LEAVE_GROUP_EPOCH, previous_member_epoch=LEAVE_GROUP_EPOCH,
                    assigned={}, pending_revocation={},
                ))
            return
        self._put(member_id, replace(
            member or ConsumerMember(member_id),
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=value.state,
            assigned=from_topic_partitions(value.assigned_partitions),
            pending_revocation=from_topic_partitions(value.partitions_pending_revocation),
        ))

    def _put(self, member_id: str, new: ConsumerMember | None) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._index(old, -1)
        if new is not None:
            self._index(new, +1)
            self.members[member_id] = new

    def _index(self, member: ConsumerMember, delta: int) -> None:
        for name in member.subscribed_topic_names:
            _count(self._topic_refs, name, delta)
        if member.subscribed_topic_regex is not None:
            _count(self._regex_refs, member.subscribed_topic_regex, delta)
        if member.server_assignor is not None:
            _count(self._assignor_refs, member.server_assignor, delta)
        if member.instance_id is not None:
            if delta > 0:
                self._static_members[member.instance_id] = member.member_id
            elif self._static_members.get(member.instance_id) == member.member_id:
                del self._static_members[member.instance_id]
        for topic_id, partitions in (*member.assigned.items(),
                                     *member.pending_revocation.items()):
            for partition in partitions:
                if delta < 0:
                    del self._owners[(topic_id, partition)]
                    continue
                owner = self._owners.setdefault((topic_id, partition), member.member_id)
                if owner != member.member_id:
                    raise ValueError(f"group {self.group_id}: partition {topic_id}-{partition} "
                                     f"of {member.member_id} is still owned by {owner}")

    # Queries.

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY_STATE
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING_STATE
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING_STATE
        return STABLE_STATE

    def is_empty(self) -> bool:
        return not self.members

    def owner(self, topic_id: str, partition: int) -> str | None:
        """The member a partition is assigned to or pending revocation from."""
        return self._owners.get((topic_id, partition))

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self._static_members.get(instance_id)
        return None if member_id is None else self.members[member_id]

    def regexes_in_use(self) -> set[str]:
        return set(self._regex_refs)

    def member_topic_names(self, member: ConsumerMember) -> set[str]:
        """The topics a member subscribes to, by name or through its resolved regex."""
        names = set(member.subscribed_topic_names)
        resolved = self.regexes.get(member.subscribed_topic_regex or "")
        if resolved is not None:
            names.update(resolved.topics)
        return names

    def subscribed_topic_names(self) -> set[str]:
        names = set(self._topic_refs)
        for regex in self._regex_refs:
            resolved = self.regexes.get(regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def preferred_assignor(self) -> str | None:
        """The server assignor most members ask for (ties go to the first name)."""
        if not self._assignor_refs:
            return None
        return min(self._assignor_refs.items(), key=lambda item: (-item[1], item[0]))[0]

    def validate_offset_commit(self, member_id: str, instance_id: str | None,
                               member_epoch: int) -> None:
        # A negative epoch comes from the admin client or a consumer without group
        # management; it may commit only while no member is in the group.
        if member_epoch < 0 and not self.members:
            return
        self._validate_member_epoch(member_id, member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        self._validate_member_epoch(member_id, member_epoch)

    def _validate_member_epoch(self, member_id: str | None, member_epoch: int) -> None:
        member = self.members.get(member_id or "")
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not a member of group {self.group_id}.")
        if member_epoch != member.member_epoch:
            raise GroupError(ErrorCode.stale_member_epoch,
                             f"The received member epoch {member_epoch} does not match the "
                             f"expected member epoch {member.member_epoch}.")

    def deletion_records(self) -> list[Record]:
        """Tombstones for every record of the group, in Kafka's order, group epoch last."""
        gid = self.group_id
        members = list(self.members)
        records: list[Record] = []
        records += [(ConsumerGroupCurrentMemberAssignmentKey(gid, m), None) for m in members]
        records += [(ConsumerGroupTargetAssignmentMemberKey(gid, m), None)
                    for m in dict.fromkeys([*members, *self.target])]
        records.append((ConsumerGroupTargetAssignmentMetadataKey(gid), None))
        records += [(ConsumerGroupMemberMetadataKey(gid, m), None) for m in members]
        records.append((ConsumerGroupPartitionMetadataKey(gid), None))
        records += [(ConsumerGroupRegularExpressionKey(gid, r), None) for r in self.regexes]
        records.append((ConsumerGroupMetadataKey(gid), None))
        return records

    def describe(self, topics: TopicsView, default_assignor: str = "uniform") -> dict[str, Any]:
        """This group as one `groups` entry of a ConsumerGroupDescribe v1 response."""
        members = [{
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": sorted(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": _described_assignment(m.assigned, topics),
            "target_assignment": _described_assignment(self.target.get(m.member_id, {}), topics),
            "member_type": 1,
        } for m in self.members.values()]
        return {
            "error_code": ErrorCode.none,
            "error_message": None,
            "group_id": self.group_id,
            "group_state": self.state,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "assignor_name": self.preferred_assignor() or default_assignor,
            "members": members,
            "authorized_operations": -2147483648,
        }


def _count(refs: dict[str, int], key: str, delta: int) -> None:
    count = refs.get(key, 0) + delta
    if count:
        refs[key] = count
    else:
        del refs[key]


def _described_assignment(assignment: Assignment, topics: TopicsView) -> dict[str, Any]:
    described = []
    for topic_id, partitions in sorted(assignment.items()):
        info = topics.by_id(topic_id)
        if info is not None:
            described.append({"topic_id": uuid.UUID(topic_id), "topic_name": info.name,
                              "partitions": sorted(partitions)})
    return {"topic_partitions": described}


def to_topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(topic_id, tuple(sorted(partitions)))
                 for topic_id, partitions in sorted(assignment.items()) if partitions)


def from_topic_partitions(topic_partitions: Iterable[TopicPartitions]) -> dict[str, frozenset[int]]:
    assignment: dict[str, frozenset[int]] = {}
    for tp in topic_partitions:
        if tp.partitions:
            assignment[tp.topic_id] = assignment.get(tp.topic_id, frozenset()) | set(tp.partitions)
    return assignment


# Requests and responses.


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


class _Changes:
    """The records a handler emits, replayed as they come into a draft of the group."""

    def __init__(self, group: ConsumerGroup) -> None:
        self.draft = group.copy()
        self.records: list[Record] = []

    def add(self, key: RecordKey, value: RecordValue | None) -> None:
        self.records.append((key, value))
        self.draft.replay(key, value)


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
        if not request.subscribed_topic_names and not request.subscribed_topic_regex:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first "
                           "request.")
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
                        ctx.now_ms + ctx.config.consumer_session_timeout_ms)

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
        ctx.config.consumer_heartbeat_interval_ms,
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


# Reconciliation (Kafka's CurrentAssignmentBuilder).


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment,
              owner: OwnerOf, owned: tuple[TopicPartitions, ...] | None) -> ConsumerMember:
    """The member's next assignment state towards `target`, or the member unchanged.

    `owner(topic_id, partition)` names the member holding a partition, or None; `owned` is
    what the member reported owning (None when it did not say)."""
    if member.state == UNREVOKED_PARTITIONS:
        # Wait until the member stops reporting the partitions it must give up.
        if _owns_any(owned, member.pending_revocation):
            return member
    elif member.state == STABLE and member.member_epoch == target_epoch:
        return member
    return _next_assignment(member, target_epoch, target, owner, owned)


def _owns_any(owned: tuple[TopicPartitions, ...] | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return any(not partitions.get(tp.topic_id, frozenset()).isdisjoint(tp.partitions)
               for tp in owned)


def _next_assignment(member: ConsumerMember, target_epoch: int, target: Assignment,
                     owner: OwnerOf, owned: tuple[TopicPartitions, ...] | None) -> ConsumerMember:
    kept: dict[str, frozenset[int]] = {}
    revoking: dict[str, frozenset[int]] = {}
    gained: dict[str, frozenset[int]] = {}
    unreleased = False
    for topic_id in target.keys() | member.assigned.keys():
        wanted = target.get(topic_id, frozenset())
        held = member.assigned.get(topic_id, frozenset())
        new = wanted - held
        free = frozenset(p for p in new if owner(topic_id, p) is None)
        unreleased = unreleased or len(free) < len(new)
        for assignment, partitions in ((kept, held & wanted), (revoking, held - wanted),
                                       (gained, free)):
            if partitions:
                assignment[topic_id] = partitions
    if revoking and _owns_any(owned, revoking):
        # Revoke first: the member keeps its epoch until it has let the partitions go.
        return replace(member, state=UNREVOKED_PARTITIONS,
                       previous_member_epoch=member.member_epoch, assigned=kept,
                       pending_revocation=revoking)
    for topic_id, partitions in gained.items():
        kept[topic_id] = kept.get(topic_id, frozenset()) | partitions
    return replace(member, state=UNRELEASED_PARTITIONS if unreleased else STABLE,
                   member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned=kept, pending_revocation={})


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
                            ctx.now_ms + ctx.config.consumer_session_timeout_ms)
        if member.state == UNREVOKED_PARTITIONS:
            ctx.timers.schedule((REBALANCE_TIMER, group.group_id, member.member_id),
                                ctx.now_ms + member.rebalance_timeout_ms)
