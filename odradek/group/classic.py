"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as a state
machine without IO, after Kafka's ClassicGroup and GroupMetadataManager.

Unlike KIP-848 groups, a classic group's rebalance state is volatile and changes in the
handlers; only its outcome is durable, as one GroupMetadata record written when a generation
completes, when a static member is replaced and when the group empties. Loading replays that
record (`ClassicGroup.from_record`). A JoinGroup or SyncGroup is often answered later, by
another member's request or a timer: each waiting request is a token, and `Output.responses`
releases (token, response) pairs.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group.classic_state import ClassicState, check_transition
from odradek.group.model import GroupContext, GroupError
from odradek.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    Record,
)
from odradek.group.share_group import ShareInitialization

JOIN_TIMER = "classic-join"
SYNC_TIMER = "classic-sync"
SESSION_TIMER = "classic-session"
PENDING_TIMER = "classic-pending"

CONSUMER_PROTOCOL_TYPE = "consumer"
REQUIRE_KNOWN_MEMBER_ID_VERSION = 4
"""JoinGroup v4+ answers a first join with MEMBER_ID_REQUIRED (KIP-394)."""
SKIP_ASSIGNMENT_VERSION = 9

Token = Hashable


@dataclass(slots=True)
class Output:
    """What a handler produced: records to append before any response is released, the
    responses (token, body) it releases, and the rebalances it completed."""

    records: list[Record] = field(default_factory=list)
    responses: list[tuple[Token, Any]] = field(default_factory=list)
    rebalances: list[tuple[str, int]] = field(default_factory=list)
    """(protocol, duration ms) of each completed rebalance, for metrics."""
    transaction: tuple[int, int] | None = None
    """(producer id, epoch) when the records belong to a transaction (TxnOffsetCommit)."""
    departed: list[tuple[str, str]] = field(default_factory=list)
    """(group id, member id) of share group members that left or were fenced: the records
    they acquired must be released once the records are written."""
    share_initializations: list[ShareInitialization] = field(default_factory=list)
    """Share-partition state to ask the share coordinator for once the records are written."""

    def extend(self, other: Output) -> None:
        self.records.extend(other.records)
        self.responses.extend(other.responses)
        self.rebalances.extend(other.rebalances)
        self.departed.extend(other.departed)
        self.share_initializations.extend(other.share_initializations)


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str
    client_host: str
    api_version: int


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    join_token: Token | None = None
    join_version: int = 0
    sync_token: Token | None = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    _state: ClassicState = field(default=ClassicState.EMPTY, init=False)
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    current_state_timestamp: int = -1
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    new_member_added: bool = False
    initial_delay_remaining_ms: int = 0
    rebalance_started_ms: int = 0

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = cls(
            group_id,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            generation=value.generation,
            leader_id=value.leader,
            current_state_timestamp=value.current_state_timestamp,
        )
        group._state = ClassicState.STABLE if value.members else ClassicState.EMPTY
        for m in value.members:
            group.members[m.member_id] = ClassicMember(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout, m.session_timeout, value.protocol_type,
                ((value.protocol or "", m.subscription),), m.assignment,
            )
            if m.group_instance_id:
                group.static_members[m.group_instance_id] = m.member_id
        return group

    def record(self) -> Record:
        """The GroupMetadata record of the group as it stands."""
        members = tuple(
            MemberMetadata(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.session_timeout_ms,
                m.metadata(self.protocol_name), m.assignment,
            )
            for m in self.members.values()
        )
        value = GroupMetadataValue(
            self.protocol_type or "", self.generation, self.protocol_name, self.leader_id,
            self.current_state_timestamp, members,
        )
        return GroupMetadataKey(self.group_id), value

    def is_empty(self) -> bool:
        return not self.members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    @property
    def state(self) -> ClassicState:
        """Changed only by `transition`, which checks the table."""
        return self._state

    def transition(self, state: ClassicState, now_ms: int) -> None:
        """Move to `state` (IllegalTransitionError if the table does not allow it)."""
        check_transition(self._state, state)
        self._state = state
        self.current_state_timestamp = now_ms

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, for consumer-protocol groups; None when the
        group's protocol is not the consumer protocol (so unknown)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            topics.update(subscription_topics(member.metadata(self.protocol_name)))
        return topics

    def validate_member(self, member_id: str, instance_id: str | None) -> ClassicMember:
        """Kafka's ClassicGroup.validateMember: a static member is known by its instance id."""
        member = self.members.get(member_id)
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is not None and known != member_id:
                raise GroupError(ErrorCode.fenced_instance_id,
                                 f"Member {member_id} is fenced by instance id {instance_id}")
            if known is None:
                member = None
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {member_id} is not in group {self.group_id}")
        return member

    def validate_offset_commit(self, member_id: str, instance_id: str | None,
                               generation: int) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit."""
        if self.state == ClassicState.DEAD:
            raise GroupError(ErrorCode.coordinator_not_available)
        if generation < 0 and self.state == ClassicState.EMPTY:
            return
        if generation >= 0 or member_id or instance_id is not None:
            self.validate_member(member_id, instance_id)
            if generation != self.generation:
                raise GroupError(ErrorCode.illegal_generation,
                                 f"Generation {generation} is not the group's {self.generation}")
        elif not self.is_empty():
            raise GroupError(ErrorCode.unknown_member_id,
                             "A commit without a member id needs an empty group")
        if self.state == ClassicState.COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.rebalance_in_progress)


def subscription_topics(metadata: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription (any version: they lead every one)."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        topics, offset = [], 6
        for _ in range(max(count, 0)):
            (length,) = struct.unpack_from(">h", metadata, offset)
            topics.append(metadata[offset + 2 : offset + 2 + length].decode())
            offset += 2 + length
        return topics
    except (struct.error, UnicodeDecodeError):
        return []


# JoinGroup


def join(group: ClassicGroup | None, token: Token, request: JoinRequest,
         ctx: GroupContext) -> tuple[ClassicGroup | None, Output]:
    """Handle a JoinGroup; returns the group (created when a first member joins) and the
    output, which answers `token` now or leaves it waiting for the rebalance."""
    out = Output()
    try:
        validate_join(group, request, ctx)
    except GroupError as error:
        out.responses.append((token, join_error(request.member_id, error)))
        return group, out
    if group is None:
        group = ClassicGroup(request.group_id, current_state_timestamp=ctx.now_ms)
    if request.member_id == "":
        _join_unknown_member(group, token, request, ctx, out)
    else:
        _join_known_member(group, token, request, ctx, out)
    return group, out


def validate_join(group: ClassicGroup | None, request: JoinRequest, ctx: GroupContext) -> None:
    if not request.group_id:
        raise GroupError(ErrorCode.invalid_group_id, "The group id is empty")
    config = ctx.config
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= (
        config.max_session_timeout_ms
    ):
        raise GroupError(
            ErrorCode.invalid_session_timeout,
            f"Session timeout {request.session_timeout_ms} ms is outside "
            f"[{config.min_session_timeout_ms}, {config.max_session_timeout_ms}]",
        )
    if not request.protocol_type or not request.protocols:
        raise GroupError(ErrorCode.inconsistent_group_protocol,
                         "The protocol type and protocols must not be empty")
    if group is None:
        if request.member_id:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Group {request.group_id} does not exist")
        return
    if group.state == ClassicState.DEAD:
        raise GroupError(ErrorCode.coordinator_not_available)
    if not group.is_empty():
        names = {name for name, _ in request.protocols}
        if group.protocol_type != request.protocol_type or not _common_protocols(group, names):
            raise GroupError(ErrorCode.inconsistent_group_protocol,
                             "The member's protocols do not match the group's")
    joining_new = request.member_id == "" and (
        request.group_instance_id is None
        or request.group_instance_id not in group.static_members
    )
    if joining_new and len(group.members) + len(group.pending_members) >= config.max_size:
        raise GroupError(ErrorCode.group_max_size_reached,
                         f"Group {group.group_id} has reached its maximum size")


def _common_protocols(group: ClassicGroup, extra: set[str] | None = None) -> set[str]:
    common: set[str] | None = set(extra) if extra is not None else None
    for member in group.members.values():
        names = {name for name, _ in member.protocols}
        common = names if common is None else common & names
    return common or set()


def _join_unknown_member(group: ClassicGroup, token: Token, request: JoinRequest,
                         ctx: GroupContext, out: Output) -> None:
    instance_id = request.group_instance_id
    new_id = ctx.new_member_id(request.client_id)
    if instance_id is not None and instance_id in group.static_members:
        _replace_static_member(group, token, request, new_id, ctx, out)
        return
    if instance_id is None and request.api_version >= REQUIRE_KNOWN_MEMBER_ID_VERSION:
        group.pending_members.add(new_id)
        ctx.timers.schedule((PENDING_TIMER, group.group_id, new_id),
                            ctx.now_ms + request.session_timeout_ms)
        out.responses.append((token, join_error(
            new_id, GroupError(ErrorCode.member_id_required,
                               "The member must rejoin with the given member id"))))
        return
    _add_member_and_rebalance(group, token, request, new_id, ctx, out)


def _join_known_member(group: ClassicGroup, token: Token, request: JoinRequest,
                       ctx: GroupContext, out: Output) -> None:
    member_id = request.member_id
    if member_id in group.pending_members:
        group.pending_members.discard(member_id)
        ctx.timers.cancel((PENDING_TIMER, group.group_id, member_id))
        _add_member_and_rebalance(group, token, request, member_id, ctx, out)
        return
    try:
        member = group.validate_member(member_id, request.group_instance_id)
    except GroupError as error:
        out.responses.append((token, join_error(member_id, error)))
        return
    # a member that lost its JoinGroup response gets it again; a changed member, or the
    # leader rejoining a stable group, starts a rebalance
    unchanged = member.protocols == request.protocols
    answer_again = unchanged and (
        group.state == ClassicState.COMPLETING_REBALANCE
        or (group.state == ClassicState.STABLE and member_id != group.leader_id)
    )
    if answer_again:
        out.responses.append((token, _join_response(group, member, request.api_version)))
    else:
        _update_member_and_rebalance(group, member, token, request, ctx, out)


def _add_member_and_rebalance(group: ClassicGroup, token: Token, request: JoinRequest,
                              member_id: str, ctx: GroupContext, out: Output) -> None:
    member = ClassicMember(
        member_id, request.group_instance_id, request.client_id, request.client_host,
        request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
        request.protocols, join_token=token, join_version=request.api_version,
    )
    if not group.members:
        group.protocol_type = request.protocol_type
    group.members[member_id] = member
    if member.group_instance_id is not None:
        group.static_members[member.group_instance_id] = member_id
    if group.leader_id is None:
        group.leader_id = member_id
    group.new_member_added = True
    ctx.timers.cancel((SESSION_TIMER, group.group_id, member_id))
    _maybe_prepare_rebalance(group, ctx, out)


def _update_member_and_rebalance(group: ClassicGroup, member: ClassicMember, token: Token,
                                 request: JoinRequest, ctx: GroupContext, out: Output) -> None:
    if member.join_token is not None:
        out.responses.append((member.join_token, join_error(
            member.member_id, GroupError(ErrorCode.rebalance_in_progress))))
    member.protocols = request.protocols
    member.rebalance_timeout_ms = request.rebalance_timeout_ms
    member.session_timeout_ms = request.session_timeout_ms
    member.join_token = token
    member.join_version = request.api_version
    ctx.timers.cancel((SESSION_TIMER, group.group_id, member.member_id))
    _maybe_prepare_rebalance(group, ctx, out)


def _replace_static_member(group: ClassicGroup, token: Token, request: JoinRequest,
                           new_id: str, ctx: GroupContext, out: Output) -> None:
    """A static member rejoining with its instance id takes over its old member id's place
    and assignment; the old id is fenced (FENCED_INSTANCE_ID)."""
    assert request.group_instance_id is not None
    old_id = group.static_members[request.group_instance_id]
    old = group.members.pop(old_id)
    fenced = GroupError(ErrorCode.fenced_instance_id,
                        f"Instance {request.group_instance_id} rejoined as another member")
    if old.join_token is not None:
        out.responses.append((old.join_token, join_error(old_id, fenced)))
    if old.sync_token is not None:
        out.responses.append((old.sync_token, sync_error(fenced)))
    ctx.timers.cancel((SESSION_TIMER, group.group_id, old_id))
    member = ClassicMember(
        new_id, request.group_instance_id, request.client_id, request.client_host,
        request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
        request.protocols, assignment=old.assignment,
    )
    group.members[new_id] = member
    group.static_members[request.group_instance_id] = new_id
    was_leader = group.leader_id == old_id
    if was_leader:
        group.leader_id = new_id
    protocol_kept = group.protocol_name is not None and (
        _select_protocol(group) == group.protocol_name)
    if group.state == ClassicState.STABLE and protocol_kept:
        _schedule_session(group, member, ctx)
        out.records.append(group.record())
        response = _join_response(group, member, request.api_version)
        if was_leader and request.api_version >= SKIP_ASSIGNMENT_VERSION:
            response["skip_assignment"] = True
        elif was_leader:
            # before v9 the client would run an assignment the stable group ignores: as in
            # Kafka, name the old leader so that it does not
            response["leader"] = old_id
            response["members"] = []
        out.responses.append((token, response))
        return
    member.join_token = token
    member.join_version = request.api_version
    _maybe_prepare_rebalance(group, ctx, out)


def _maybe_prepare_rebalance(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    if group.state in (ClassicState.EMPTY, ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
        prepare_rebalance(group, ctx, out)
    elif group.state == ClassicState.PREPARING_REBALANCE:
        _maybe_complete_join(group, ctx, out)


def prepare_rebalance(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    """Start a rebalance. A new (Empty) group waits group.initial.rebalance.delay.ms, and
    again while members keep arriving, up to the rebalance timeout; others wait until every
    member rejoined or the rebalance timeout."""
    if group.state == ClassicState.COMPLETING_REBALANCE:
        for member in group.members.values():
            member.assignment = b""
            if member.sync_token is not None:
                out.responses.append((member.sync_token,
                                      sync_error(GroupError(ErrorCode.rebalance_in_progress))))
                member.sync_token = None
        ctx.timers.cancel((SYNC_TIMER, group.group_id))
    initial = group.state == ClassicState.EMPTY
    rebalance_timeout = group.rebalance_timeout_ms()
    if initial:
        delay = min(ctx.config.initial_rebalance_delay_ms, rebalance_timeout)
        group.initial_delay_remaining_ms = max(rebalance_timeout - delay, 0)
        group.new_member_added = False
    else:
        delay = rebalance_timeout
        group.initial_delay_remaining_ms = -1
    group.rebalance_started_ms = ctx.now_ms
    group.transition(ClassicState.PREPARING_REBALANCE, ctx.now_ms)
    ctx.timers.schedule((JOIN_TIMER, group.group_id), ctx.now_ms + delay)
    if not initial:
        _maybe_complete_join(group, ctx, out)


def _maybe_complete_join(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    if group.initial_delay_remaining_ms >= 0:
        return
    if all(m.join_token is not None for m in group.members.values()) and not (
        group.pending_members
    ):
        ctx.timers.cancel((JOIN_TIMER, group.group_id))
        complete_join(group, ctx, out)


def on_join_timer(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    if group.state != ClassicState.PREPARING_REBALANCE:
        return
    remaining = group.initial_delay_remaining_ms
    if remaining > 0 and group.new_member_added:
        delay = min(ctx.config.initial_rebalance_delay_ms, remaining)
        group.initial_delay_remaining_ms = remaining - delay
        group.new_member_added = False
        ctx.timers.schedule((JOIN_TIMER, group.group_id), ctx.now_ms + delay)
        return
    complete_join(group, ctx, out)


def complete_join(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    """End the join phase: drop dynamic members that did not rejoin (static ones stay, as
    in Kafka: they may be restarting), start the next generation, pick the protocol and
    answer every waiting JoinGroup."""
    for member in [m for m in group.members.values() if m.join_token is None]:
        if member.group_instance_id is None:
            _remove_member(group, member.member_id, ctx)
    joined = [m for m in group.members.values() if m.join_token is not None]
    if group.members and not joined:
        ctx.timers.schedule((JOIN_TIMER, group.group_id),
                            ctx.now_ms + group.rebalance_timeout_ms())
        return
    group.initial_delay_remaining_ms = -1
    group.generation += 1
    if group.is_empty():
        group.protocol_name = None
        group.leader_id = None
        group.transition(ClassicState.EMPTY, ctx.now_ms)
        out.records.append(group.record())
        return
    group.protocol_name = _select_protocol(group)
    if group.leader_id not in {m.member_id for m in joined}:
        group.leader_id = joined[0].member_id
    group.transition(ClassicState.COMPLETING_REBALANCE, ctx.now_ms)
    for member in joined:
        assert member.join_token is not None
        out.responses.append((member.join_token,
                              _join_response(group, member, member.join_version)))
        member.join_token = None
        _schedule_session(group, member, ctx)
    ctx.timers.schedule((SYNC_TIMER, group.group_id),
                        ctx.now_ms + group.rebalance_timeout_ms())


def _select_protocol(group: ClassicGroup) -> str | None:
    """Kafka's vote: each member votes for its most preferred protocol that all support."""
    candidates = _common_protocols(group)
    votes: dict[str, int] = {}
    for member in group.members.values():
        choice = next((name for name, _ in member.protocols if name in candidates), None)
        if choice is not None:
            votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda name: votes[name], default=None)


def _join_response(group: ClassicGroup, member: ClassicMember, version: int) -> dict[str, Any]:
    is_leader = member.member_id == group.leader_id
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
         "metadata": m.metadata(group.protocol_name)}
        for m in group.members.values()
    ] if is_leader else []
    return {
        "error_code": ErrorCode.none, "generation_id": group.generation,
        "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
        "leader": group.leader_id or "", "skip_assignment": False,
        "member_id": member.member_id, "members": members,
    }


def join_error(member_id: str, error: GroupError) -> dict[str, Any]:
    return {
        "error_code": error.error_code, "generation_id": -1, "protocol_type": None,
        "protocol_name": None, "leader": "", "skip_assignment": False,
        "member_id": member_id, "members": [],
    }


# SyncGroup


@dataclass(frozen=True, slots=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


def sync(group: ClassicGroup | None, token: Token, request: SyncRequest,
         ctx: GroupContext) -> Output:
    out = Output()
    try:
        if group is None:
            raise GroupError(ErrorCode.unknown_member_id, f"Group {request.group_id} not found")
        member = group.validate_member(request.member_id, request.group_instance_id)
        if request.generation_id != group.generation:
            raise GroupError(ErrorCode.illegal_generation)
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) \
                or (request.protocol_name is not None
                    and request.protocol_name != group.protocol_name):
            raise GroupError(ErrorCode.inconsistent_group_protocol)
        if group.state == ClassicState.PREPARING_REBALANCE:
            raise GroupError(ErrorCode.rebalance_in_progress)
        if group.state == ClassicState.DEAD:
            raise GroupError(ErrorCode.coordinator_not_available)
    except GroupError as error:
        out.responses.append((token, sync_error(error)))
        return out
    _schedule_session(group, member, ctx)
    if group.state == ClassicState.STABLE:
        out.responses.append((token, _sync_response(group, member)))
        return out
    if member.sync_token is not None:
        out.responses.append((member.sync_token,
                              sync_error(GroupError(ErrorCode.rebalance_in_progress))))
    member.sync_token = token
    if member.member_id == group.leader_id:
        assignments = dict(request.assignments)
        for m in group.members.values():
            m.assignment = assignments.get(m.member_id, b"")
        ctx.timers.cancel((SYNC_TIMER, group.group_id))
        group.transition(ClassicState.STABLE, ctx.now_ms)
        out.records.append(group.record())
        out.rebalances.append(("classic", ctx.now_ms - group.rebalance_started_ms))
        for m in group.members.values():
            if m.sync_token is not None:
                out.responses.append((m.sync_token, _sync_response(group, m)))
                m.sync_token = None
    return out


def on_sync_timer(group: ClassicGroup, ctx: GroupContext, out: Output) -> None:
    """The leader did not send its assignment in time: members that did not sync leave,
    and the group rebalances."""
    if group.state != ClassicState.COMPLETING_REBALANCE:
        return
    for member in [m for m in group.members.values() if m.sync_token is None]:
        _remove_member(group, member.member_id, ctx)
    prepare_rebalance(group, ctx, out)


def _sync_response(group: ClassicGroup, member: ClassicMember) -> dict[str, Any]:
    return {"error_code": ErrorCode.none, "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name, "assignment": member.assignment}


def sync_error(error: GroupError) -> dict[str, Any]:
    return {"error_code": error.error_code, "protocol_type": None, "protocol_name": None,
            "assignment": b""}


# Heartbeat, LeaveGroup, expiry


def heartbeat(group: ClassicGroup | None, member_id: str, instance_id: str | None,
              generation: int, ctx: GroupContext) -> ErrorCode:
    if group is None:
        return ErrorCode.unknown_member_id
    if group.state == ClassicState.DEAD:
        return ErrorCode.coordinator_not_available
    try:
        member = group.validate_member(member_id, instance_id)
    except GroupError as error:
        return error.error_code
    if group.state == ClassicState.EMPTY:
        return ErrorCode.unknown_member_id
    if generation != group.generation:
        return ErrorCode.illegal_generation
    _schedule_session(group, member, ctx)
    if group.state == ClassicState.PREPARING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


def touch(group: ClassicGroup, member_id: str, ctx: GroupContext) -> None:
    """An accepted offset commit counts as a heartbeat, as in Kafka."""
    member = group.members.get(member_id)
    if member is not None:
        _schedule_session(group, member, ctx)


def leave(group: ClassicGroup | None, members: list[tuple[str, str | None]],
          ctx: GroupContext) -> tuple[list[ErrorCode], Output]:
    """Remove each (member id, instance id); a static member may leave by instance id alone."""
    out = Output()
    errors: list[ErrorCode] = []
    for member_id, instance_id in members:
        if group is None:
            errors.append(ErrorCode.unknown_member_id)
            continue
        if member_id == "" and instance_id is not None:
            member_id = group.static_members.get(instance_id, "")
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            ctx.timers.cancel((PENDING_TIMER, group.group_id, member_id))
            errors.append(ErrorCode.none)
            if group.state == ClassicState.PREPARING_REBALANCE:
                _maybe_complete_join(group, ctx, out)
            continue
        try:
            group.validate_member(member_id, instance_id)
        except GroupError as error:
            errors.append(error.error_code)
            continue
        errors.append(ErrorCode.none)
        _remove_member_and_rebalance(group, member_id, ctx, out)
    return errors, out


def on_session_timer(group: ClassicGroup, member_id: str, ctx: GroupContext,
                     out: Output) -> None:
    member = group.members.get(member_id)
    if member is None:
        return
    if member.join_token is not None or member.sync_token is not None:
        return  # a member parked in JoinGroup or SyncGroup cannot heartbeat: it is alive
    _remove_member_and_rebalance(group, member_id, ctx, out)


def on_pending_timer(group: ClassicGroup, member_id: str, ctx: GroupContext,
                     out: Output) -> None:
    if member_id in group.pending_members:
        group.pending_members.discard(member_id)
        if group.state == ClassicState.PREPARING_REBALANCE:
            _maybe_complete_join(group, ctx, out)


def _remove_member_and_rebalance(group: ClassicGroup, member_id: str, ctx: GroupContext,
                                 out: Output) -> None:
    member = group.members[member_id]
    if member.join_token is not None:
        out.responses.append((member.join_token, join_error(
            member_id, GroupError(ErrorCode.unknown_member_id))))
    if member.sync_token is not None:
        out.responses.append((member.sync_token,
                              sync_error(GroupError(ErrorCode.unknown_member_id))))
    _remove_member(group, member_id, ctx)
    if group.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
        prepare_rebalance(group, ctx, out)
    elif group.state == ClassicState.PREPARING_REBALANCE:
        _maybe_complete_join(group, ctx, out)


def _remove_member(group: ClassicGroup, member_id: str, ctx: GroupContext) -> None:
    member = group.members.pop(member_id)
    if member.group_instance_id is not None:
        group.static_members.pop(member.group_instance_id, None)
    if group.leader_id == member_id:
        group.leader_id = next(iter(group.members), None)
    ctx.timers.cancel((SESSION_TIMER, group.group_id, member_id))


def _schedule_session(group: ClassicGroup, member: ClassicMember, ctx: GroupContext) -> None:
    ctx.timers.schedule((SESSION_TIMER, group.group_id, member.member_id),
                        ctx.now_ms + member.session_timeout_ms)


def cancel_timers(group: ClassicGroup, ctx: GroupContext) -> None:
    """Forget the group's timers, when it is deleted or becomes a KIP-848 group."""
    ctx.timers.cancel((JOIN_TIMER, group.group_id))
    ctx.timers.cancel((SYNC_TIMER, group.group_id))
    for member_id in [*group.members, *group.pending_members]:
        ctx.timers.cancel((SESSION_TIMER, group.group_id, member_id))
        ctx.timers.cancel((PENDING_TIMER, group.group_id, member_id))


def schedule_loaded_sessions(group: ClassicGroup, ctx: GroupContext) -> None:
    """A group loaded from its record is Stable: its members must heartbeat again within
    their session timeouts or leave."""
    for member in group.members.values():
        _schedule_session(group, member, ctx)


def describe(group: ClassicGroup) -> dict[str, Any]:
    """One group of a DescribeGroups response."""
    members = [
        {
            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "member_metadata": m.metadata(group.protocol_name)
            if group.state == ClassicState.STABLE else b"",
            "member_assignment": m.assignment if group.state == ClassicState.STABLE else b"",
        }
        for m in group.members.values()
    ]
    return {
        "error_code": ErrorCode.none, "group_id": group.group_id, "group_state": group.state,
        "protocol_type": group.protocol_type or "",
        "protocol_data": (group.protocol_name or "") if group.state == ClassicState.STABLE else "",
        "members": members, "authorized_operations": -2147483648,
    }
