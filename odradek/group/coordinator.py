"""One shard of the group coordinator: the groups and committed offsets of one partition
of `__consumer_offsets`, as a state machine without IO.

Handlers take the request and `now_ms` and return an `Output`: records to append and the
responses those records release. Offsets and KIP-848 groups change only by replaying
records, here and at load time alike; classic groups keep their volatile rebalance state in
the handlers and persist its outcome (see classic.py). The runtime appends the records
before it releases any response.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from odradek.group import classic, consumer_group, consumer_handlers, share_handlers, share_offsets
from odradek.group.classic import ClassicGroup, JoinRequest, Output, SyncRequest, Token
from odradek.group.classic_state import ClassicState
from odradek.group.consumer_group import ConsumerGroup
from odradek.group.consumer_handlers import HeartbeatRequest, HeartbeatResponse
from odradek.group.model import (
    GroupConfig,
    GroupConfigs,
    GroupContext,
    GroupError,
    Timers,
    TopicsView,
)
from odradek.group.records import (
    ConsumerGroupMetadataKey,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    RecordKey,
    RecordValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
)
from odradek.group.share_group import SHARE_PROTOCOL_TYPE, ShareGroup, ShareInitialization
from odradek.group.share_handlers import ShareHeartbeatRequest

if TYPE_CHECKING:
    import random

Group = ClassicGroup | ConsumerGroup | ShareGroup
TopicPartition = tuple[str, int]

CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
SHARE_KEYS = (ShareGroupMetadataKey, ShareGroupMemberMetadataKey,
              ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMemberKey,
              ShareGroupCurrentMemberAssignmentKey, ShareGroupStatePartitionMetadataKey)
FIRST_OFFSET_COMMIT_VERSION_WITH_GROUP_ID_NOT_FOUND = 9
CLASSIC_TIMERS = frozenset({classic.JOIN_TIMER, classic.SYNC_TIMER, classic.SESSION_TIMER,
                            classic.PENDING_TIMER})
CONSUMER_TIMERS = frozenset({consumer_handlers.SESSION_TIMER, consumer_handlers.REBALANCE_TIMER})


@dataclass(frozen=True, slots=True)
class CommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_or_epoch: int
    member_id: str
    group_instance_id: str | None
    partitions: tuple[CommitPartition, ...]
    api_version: int
    retention_ms: int = -1
    """OffsetCommit v2-v4's retention time; -1 leaves expiry to offsets.retention.minutes."""


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


def group_type(group: Group) -> str:
    if isinstance(group, ShareGroup):
        return SHARE
    return CONSUMER if isinstance(group, ConsumerGroup) else CLASSIC


def group_state(group: Group) -> str:
    return group.state


class GroupCoordinatorShard:
    def __init__(self, config: GroupConfig, topics: TopicsView, rng: random.Random,
                 group_configs: GroupConfigs | None = None) -> None:
        self.config = config
        self.topics = topics
        self.rng = rng
        self.group_configs = group_configs
        """Each group's own configs (consumer.session.timeout.ms, ...); None: the broker's."""
        self.timers = Timers()
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
        self.pending_transactional_offsets: dict[
            int, dict[str, dict[TopicPartition, OffsetCommitValue]]] = {}
        """Producer id -> offsets its ongoing transaction committed (TxnOffsetCommit); they
        apply when its commit marker arrives, and vanish on abort."""
        self._rebalancing_since: dict[str, int] = {}
        self._share_initializing: dict[str, set[tuple[str, int]]] = {}
        """Group id -> the share-partitions whose initialization this shard asked for and has
        not heard back about (volatile: a loaded shard asks again)."""
        """KIP-848 groups whose epoch moved and that are not yet Stable (for metrics)."""

    def context(self, now_ms: int) -> GroupContext:
        return GroupContext(now_ms, self.topics, self.config, self.timers, self.rng,
                            self.group_configs)

    # Replay: the one path that changes offsets and KIP-848 groups.

    def replay(self, key: RecordKey, value: RecordValue | None) -> None:
        match key:
            case OffsetCommitKey(group=group_id, topic=topic, partition=partition):
                offsets = self.offsets.setdefault(group_id, {})
                if value is None:
                    offsets.pop((topic, partition), None)
                    if not offsets:
                        del self.offsets[group_id]
                    return
                assert isinstance(value, OffsetCommitValue)
                offsets[(topic, partition)] = value
                self.groups.setdefault(group_id, ClassicGroup(group_id))
            case GroupMetadataKey(group=group_id):
                if value is None:
                    self.groups.pop(group_id, None)
                else:
                    assert isinstance(value, GroupMetadataValue)
                    self.groups[group_id] = ClassicGroup.from_record(group_id, value)
            case _ if isinstance(key, SHARE_KEYS):
                self._replay_share_group(key, value)
            case _:
                self._replay_consumer_group(key, value)

    def replay_transactional(self, producer_id: int, key: RecordKey,
                             value: RecordValue | None) -> None:
        """A record of a transactional batch: an offset commit pending until the marker."""
        if isinstance(key, OffsetCommitKey) and isinstance(value, OffsetCommitValue):
            group = self.pending_transactional_offsets.setdefault(producer_id, {})
            group.setdefault(key.group, {})[(key.topic, key.partition)] = value

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """A transaction marker: apply (commit) or drop (abort) the producer's pending
        offsets."""
        for group_id, offsets in self.pending_transactional_offsets.pop(producer_id, {}).items():
            if commit:
                for (topic, partition), value in offsets.items():
                    self.replay(OffsetCommitKey(group_id, topic, partition), value)

    def has_pending_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> bool:
        """Whether an open transaction has committed offsets for any of `partitions`
        (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT then)."""
        wanted = set(partitions)
        return any(wanted & offsets.get(group_id, {}).keys()
                   for offsets in self.pending_transactional_offsets.values())

    def _replay_consumer_group(self, key: RecordKey, value: RecordValue | None) -> None:
        group_id: str = key.group_id  # type: ignore[union-attr]
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            if value is None:
                return
            group = ConsumerGroup(group_id)
            self.groups[group_id] = group
        group.replay(key, value)
        if isinstance(key, ConsumerGroupMetadataKey) and value is None:
            del self.groups[group_id]

    def _replay_share_group(self, key: RecordKey, value: RecordValue | None) -> None:
        group_id: str = key.group_id  # type: ignore[union-attr]
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            if value is None:
                return
            group = ShareGroup(group_id)
            self.groups[group_id] = group
        group.replay(key, value)
        if isinstance(key, ShareGroupMetadataKey) and value is None:
            del self.groups[group_id]

    def _apply(self, records: Iterable[Record]) -> None:
        """Replay records a handler produced; classic group records are skipped, as their
        handlers already changed the group."""
        for key, value in records:
            if not isinstance(key, GroupMetadataKey):
                self.replay(key, value)

    def loaded(self, now_ms: int) -> None:
        """After a load, members must heartbeat again within their session timeouts."""
        ctx = self.context(now_ms)
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                classic.schedule_loaded_sessions(group, ctx)
            elif isinstance(group, ShareGroup):
                share_handlers.schedule_loaded_timers(group, ctx)
            else:
                consumer_handlers.schedule_loaded_timers(group, ctx)

    # Classic protocol.

    def _classic_group(self, request: JoinRequest, now_ms: int,
                       out: Output) -> ClassicGroup | None:
        """The classic group the request joins; an empty KIP-848 group gives way to it, but
        only for a request that a new classic group would accept."""
        group = self.groups.get(request.group_id)
        if isinstance(group, ShareGroup):
            raise GroupError(ErrorCode.inconsistent_group_protocol)
        if isinstance(group, ConsumerGroup):
            if not group.is_empty():
                raise GroupError(ErrorCode.inconsistent_group_protocol,
                                 f"Group {request.group_id} is a consumer (KIP-848) group")
            classic.validate_join(None, request, self.context(now_ms))
            records = group.deletion_records()
            self._apply(records)
            out.records.extend(records)
            return None
        return group

    def join_group(self, token: Token, request: JoinRequest, now_ms: int) -> Output:
        out = Output()
        try:
            group = self._classic_group(request, now_ms, out)
        except GroupError as error:
            out.responses.append((token, classic.join_error(request.member_id, error)))
            return out
        group, joined = classic.join(group, token, request, self.context(now_ms))
        if group is not None:
            self.groups[group.group_id] = group
        out.extend(joined)
        return out

    def sync_group(self, token: Token, request: SyncRequest, now_ms: int) -> Output:
        group = self.groups.get(request.group_id)
        if isinstance(group, ConsumerGroup | ShareGroup):
            error = GroupError(ErrorCode.unknown_member_id, "Not a classic group")
            return Output(responses=[(token, classic.sync_error(error))])
        return classic.sync(group, token, request, self.context(now_ms))

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int, now_ms: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup | ShareGroup):
            return ErrorCode.unknown_member_id
        return classic.heartbeat(group, member_id, instance_id, generation,
                                 self.context(now_ms))

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]],
                    now_ms: int) -> tuple[list[ErrorCode], Output]:
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup | ShareGroup):
            return [ErrorCode.unknown_member_id for _ in members], Output()
        return classic.leave(group, members, self.context(now_ms))

    # KIP-848 consumer protocol.

    def consumer_heartbeat(self, request: HeartbeatRequest,
                           now_ms: int) -> tuple[HeartbeatResponse, Output]:
        out = Output()
        group = self.groups.get(request.group_id)
        converted = None
        if isinstance(group, ShareGroup):
            return HeartbeatResponse(ErrorCode.group_id_not_found,
                                     f"Group {request.group_id} is not a consumer group.",
                                     None, 0, 0, None), out
        if isinstance(group, ClassicGroup):
            if not group.is_empty():
                return _heartbeat_error(request, ErrorCode.group_id_not_found,
                                        f"Group {request.group_id} is a classic group"), out
            converted, group = group, None
        epoch = group.group_epoch if group is not None else 0
        records, response = consumer_handlers.heartbeat(group, request, self.context(now_ms))
        if converted is not None and records:
            classic.cancel_timers(converted, self.context(now_ms))
            self.groups.pop(request.group_id, None)
            if converted.generation > 0:
                out.records.append((GroupMetadataKey(converted.group_id), None))
        self._apply(records)
        out.records.extend(records)
        self._track_rebalance(request.group_id, epoch, now_ms, out)
        return response, out

    def _track_rebalance(self, group_id: str, epoch_before: int, now_ms: int,
                         out: Output) -> None:
        """A KIP-848 rebalance runs from a new group epoch until the group is Stable."""
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            self._rebalancing_since.pop(group_id, None)
            return
        if group.group_epoch > epoch_before:
            self._rebalancing_since.setdefault(group_id, now_ms)
        if group.state == consumer_group.STABLE_STATE and group_id in self._rebalancing_since:
            started = self._rebalancing_since.pop(group_id)
            out.rebalances.append((CONSUMER, now_ms - started))

    def consumer_group_describe(self, group_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            message = (f"Group {group_id} is not a consumer group." if group is not None
                       else f"Group {group_id} not found.")
            return {"error_code": ErrorCode.group_id_not_found, "error_message": message,
                    "group_id": group_id, "group_state": "", "group_epoch": 0,
                    "assignment_epoch": 0, "assignor_name": "", "members": [],
                    "authorized_operations": -2147483648}
        return group.describe(self.topics, self.config.consumer_assignors[0])

    # KIP-932 share groups.

    def share_heartbeat(self, request: ShareHeartbeatRequest,
                        now_ms: int) -> tuple[HeartbeatResponse, Output]:
        out = Output()
        group = self.groups.get(request.group_id)
        if group is not None and not isinstance(group, ShareGroup):
            try:
                share_handlers.validate(request)
            except GroupError as error:
                return share_handlers.error_response(error.error_code, error.message), out
            return share_handlers.error_response(
                ErrorCode.group_id_not_found,
                f"Group {request.group_id} is not a share group."), out
        records, response, initialization = share_handlers.heartbeat(
            group, request, self.context(now_ms), self._share_in_flight(request.group_id))
        self._apply(records)
        out.records.extend(records)
        self._ask_share_initialization(initialization, out)
        if (request.member_epoch == share_handlers.LEAVE_GROUP_EPOCH
                and response.error_code == ErrorCode.none):
            out.departed.append((request.group_id, request.member_id))
        return response, out

    def _share_in_flight(self, group_id: str) -> share_handlers.InFlight:
        return frozenset(self._share_initializing.get(group_id, ()))

    def _ask_share_initialization(self, initialization: ShareInitialization | None,
                                  out: Output) -> None:
        if initialization is not None:
            self._share_initializing.setdefault(initialization.group_id, set()).update(
                initialization.keys())
            out.share_initializations.append(initialization)

    def share_partitions_initialized(self, initialization: ShareInitialization,
                                     failed: Iterable[tuple[str, int]]) -> tuple[None, Output]:
        """The share coordinator answered `initialization`: record its partitions as
        initialized but for the `failed` (topic id, partition) ones, which a later heartbeat
        asks for again. Partitions no longer initializing (their state was deleted
        meanwhile) are left as they are."""
        in_flight = self._share_initializing.get(initialization.group_id, set())
        in_flight -= initialization.keys()
        if not in_flight:
            self._share_initializing.pop(initialization.group_id, None)
        group = self.groups.get(initialization.group_id)
        if not isinstance(group, ShareGroup):
            return None, Output()
        initializing = {(t.topic_id, p) for t in group.state_partitions.initializing_topics
                        for p in t.partitions}
        settled = initialization.keys() & initializing
        failures = settled & set(failed)
        done = {t: (name, [p for p in partitions if (t, p) in settled - failures])
                for t, (name, partitions) in initialization.partitions.items()}
        records = share_offsets.initialized_records(group, done, failures)
        self._apply(records)
        return None, Output(records=records)

    def share_group_describe(self, group_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            message = (f"Group {group_id} is not a share group." if group is not None
                       else f"Group {group_id} not found.")
            return {"error_code": ErrorCode.group_id_not_found, "error_message": message,
                    "group_id": group_id, "group_state": "", "group_epoch": 0,
                    "assignment_epoch": 0, "assignor_name": "", "members": [],
                    "authorized_operations": -2147483648}
        return group.describe(self.topics, self.config.share_assignors[0])

    def refresh_topics(self, now_ms: int) -> Output:
        """Topics were created, deleted or grew: KIP-848 groups subscribed to them move to
        a new epoch now, as Kafka's do when its metadata image changes."""
        out = Output()
        ctx = self.context(now_ms)
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup) and not group.is_empty():
                epoch = group.group_epoch
                records = consumer_handlers.refresh_metadata(group, ctx)
                self._apply(records)
                out.records.extend(records)
                self._track_rebalance(group.group_id, epoch, now_ms, out)
            elif isinstance(group, ShareGroup) and not group.is_empty():
                records, initialization = share_handlers.refresh_metadata(
                    group, ctx, self._share_in_flight(group.group_id))
                self._apply(records)
                out.records.extend(records)
                self._ask_share_initialization(initialization, out)
        return out

    # Offsets.

    def commit_offsets(self, request: OffsetCommitRequest,
                       now_ms: int) -> tuple[dict[TopicPartition, ErrorCode], Output]:
        out = Output()
        try:
            self._validate_commit(request, now_ms)
        except GroupError as error:
            return {(p.topic, p.partition): error.error_code for p in request.partitions}, out
        expire = now_ms + request.retention_ms if request.retention_ms >= 0 else -1
        errors = self._offset_records(request, now_ms, expire, out)
        self._apply(out.records)
        return errors, out

    def _offset_records(self, request: OffsetCommitRequest, now_ms: int, expire_ms: int,
                        out: Output) -> dict[TopicPartition, ErrorCode]:
        errors: dict[TopicPartition, ErrorCode] = {}
        for p in request.partitions:
            metadata = p.metadata or ""
            if len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[(p.topic, p.partition)] = ErrorCode.offset_metadata_too_large
                continue
            errors[(p.topic, p.partition)] = ErrorCode.none
            out.records.append((
                OffsetCommitKey(request.group_id, p.topic, p.partition),
                OffsetCommitValue(p.offset, p.leader_epoch, metadata, now_ms, expire_ms),
            ))
        return errors

    def commit_transactional_offsets(
            self, request: OffsetCommitRequest, producer_id: int, producer_epoch: int,
            now_ms: int) -> tuple[dict[TopicPartition, ErrorCode], Output]:
        """TxnOffsetCommit: the offsets are written now, in the producer's transaction, and
        apply only when it commits. A group that does not exist yet is fine, as in Kafka."""
        out = Output(transaction=(producer_id, producer_epoch))
        group = self.groups.get(request.group_id)
        try:
            if group is not None and request.generation_or_epoch >= 0:
                self._validate_commit(request, now_ms)
        except GroupError as error:
            return {(p.topic, p.partition): error.error_code for p in request.partitions}, out
        errors = self._offset_records(request, now_ms, -1, out)
        for key, value in out.records:
            self.replay_transactional(producer_id, key, value)
        return errors, out

    def _validate_commit(self, request: OffsetCommitRequest, now_ms: int) -> None:
        group = self.groups.get(request.group_id)
        if group is None:
            if request.generation_or_epoch >= 0:
                if request.api_version >= FIRST_OFFSET_COMMIT_VERSION_WITH_GROUP_ID_NOT_FOUND:
                    raise GroupError(ErrorCode.group_id_not_found)
                raise GroupError(ErrorCode.illegal_generation)
            if not request.group_id:
                raise GroupError(ErrorCode.invalid_group_id)
            return
        if isinstance(group, ShareGroup):
            raise GroupError(ErrorCode.group_id_not_found,
                             f"Group {request.group_id} is not a consumer group.")
        if isinstance(group, ConsumerGroup):
            group.validate_offset_commit(request.member_id, request.group_instance_id,
                                         request.generation_or_epoch)
            return
        group.validate_offset_commit(request.member_id, request.group_instance_id,
                                     request.generation_or_epoch)
        classic.touch(group, request.member_id, self.context(now_ms))

    def fetch_offsets(self, group_id: str, topics: Mapping[str, Iterable[int]] | None,
                      member_id: str | None = None,
                      member_epoch: int = -1) -> list[FetchedOffset]:
        """Committed offsets of the partitions asked for (offset -1 for none), or of all
        partitions when topics is None. Raises GroupError."""
        group = self.groups.get(group_id)
        if isinstance(group, ShareGroup):
            raise GroupError(ErrorCode.group_id_not_found,
                             f"Group {group_id} is not a consumer group.")
        if isinstance(group, ConsumerGroup):
            group.validate_offset_fetch(member_id, member_epoch)
        elif member_epoch >= 0 and group is None:
            raise GroupError(ErrorCode.group_id_not_found)
        committed = self.offsets.get(group_id, {})
        if topics is None:
            wanted: Iterable[TopicPartition] = sorted(committed)
        else:
            wanted = [(topic, p) for topic, parts in topics.items() for p in parts]
        fetched = []
        for topic, partition in wanted:
            value = committed.get((topic, partition))
            if value is None:
                fetched.append(FetchedOffset(topic, partition, -1, -1, ""))
            else:
                fetched.append(FetchedOffset(topic, partition, value.offset,
                                             value.leader_epoch, value.metadata))
        return fetched

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                       ) -> tuple[tuple[ErrorCode, dict[TopicPartition, ErrorCode]], Output]:
        """OffsetDelete: ((group error, partition errors), output)."""
        out = Output()
        group = self.groups.get(group_id)
        if group is None or isinstance(group, ShareGroup) or group.state == ClassicState.DEAD:
            return (ErrorCode.group_id_not_found, {}), out
        subscribed: set[str] | None
        if isinstance(group, ConsumerGroup):
            subscribed = group.subscribed_topic_names()
        elif group.is_empty():
            subscribed = set()
        else:
            subscribed = group.subscribed_topics()
            if subscribed is None:
                return (ErrorCode.non_empty_group, {}), out
        errors: dict[TopicPartition, ErrorCode] = {}
        committed = self.offsets.get(group_id, {})
        for topic, partition in partitions:
            if topic in subscribed:
                errors[(topic, partition)] = ErrorCode.group_subscribed_to_topic
                continue
            errors[(topic, partition)] = ErrorCode.none
            if (topic, partition) in committed:
                out.records.append((OffsetCommitKey(group_id, topic, partition), None))
        self._apply(out.records)
        return (ErrorCode.none, errors), out

    # Groups.

    def list_groups(self, states: Iterable[str] = (),
                    types: Iterable[str] = ()) -> list[GroupListing]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        listings = []
        for group in self.groups.values():
            listing = GroupListing(group.group_id, _protocol_type(group), group.state,
                                   group_type(group))
            if wanted_states and listing.state.lower() not in wanted_states:
                continue
            if wanted_types and listing.group_type not in wanted_types:
                continue
            listings.append(listing)
        return listings

    def describe_group(self, group_id: str, version: int) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if isinstance(group, ClassicGroup):
            return classic.describe(group)
        missing = group is None
        return {
            "error_code": ErrorCode.group_id_not_found if version >= 6 else ErrorCode.none,
            "error_message": f"Group {group_id} not found." if missing
            else f"Group {group_id} is not a classic group.",
            "group_id": group_id, "group_state": ClassicState.DEAD, "protocol_type": "",
            "protocol_data": "", "members": [], "authorized_operations": -2147483648,
        }

    def delete_group(self, group_id: str, now_ms: int) -> tuple[ErrorCode, Output]:
        out = Output()
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found, out
        if not group.is_empty():
            return ErrorCode.non_empty_group, out
        out.records.extend(_offset_tombstones(group_id, self.offsets.get(group_id, {})))
        if isinstance(group, ConsumerGroup | ShareGroup):
            out.records.extend(group.deletion_records())
        else:
            out.records.append((GroupMetadataKey(group_id), None))
            group.transition(ClassicState.DEAD, now_ms)
            classic.cancel_timers(group, self.context(now_ms))
        self._apply(out.records)
        self.groups.pop(group_id, None)
        return ErrorCode.none, out

    def share_group_delete_plan(self, group_id: str
                                ) -> tuple[tuple[ErrorCode, share_offsets.DeletePlan] | None,
                                           Output]:
        """DeleteGroups' first step for a share group (Kafka's sharePartitionDeleteRequests):
        None when `group_id` is no share group (its deletion goes on as any group's),
        NON_EMPTY_GROUP while it has members, else the share-partitions whose state to
        delete at the share coordinator before delete_group, all recorded as deleting."""
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return None, Output()
        if not group.is_empty():
            return (ErrorCode.non_empty_group, share_offsets.DeletePlan()), Output()
        plan = share_offsets.plan_group_delete(group, self.topics)
        self._apply(plan.records)
        return (ErrorCode.none, plan), Output(records=list(plan.records))

    # The share-group offsets admin APIs (the share coordinator's part is the broker's).

    def share_initialized_partitions(self, group_id: str) -> dict[str, frozenset[int]]:
        """Topic id -> the share group's initialized partitions (none for another group)."""
        group = self.groups.get(group_id)
        return group.initialized_partitions() if isinstance(group, ShareGroup) else {}

    def alter_share_group_offsets(
        self, group_id: str, requested: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> tuple[share_offsets.AlterPlan, Output]:
        """Raises ShareOffsetsError unless the group is an empty share group or new."""
        group = share_offsets.share_group(self.groups.get(group_id), group_id, create=True)
        return share_offsets.plan_alter(group, self.topics, requested), Output()

    def share_offsets_initialized(self, group_id: str,
                                  initialized: Mapping[str, tuple[str, Iterable[int]]]
                                  ) -> tuple[None, Output]:
        """Record the partitions the share coordinator initialized for the group."""
        group = self.groups.get(group_id)
        if group is not None and not isinstance(group, ShareGroup):
            return None, Output()
        records = share_offsets.initialized_records(group or ShareGroup(group_id), initialized)
        self._apply(records)
        return None, Output(records=records)

    def initiate_delete_share_group_offsets(self, group_id: str, names: Iterable[str]
                                            ) -> tuple[share_offsets.DeletePlan, Output]:
        """Raises ShareOffsetsError unless the group is an empty share group."""
        group = share_offsets.share_group(self.groups.get(group_id), group_id, create=False)
        plan = share_offsets.plan_delete(group, self.topics, names)
        self._apply(plan.records)
        return plan, Output(records=list(plan.records))

    def complete_delete_share_group_offsets(self, group_id: str, topic_ids: Iterable[str]
                                            ) -> tuple[None, Output]:
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return None, Output()
        records = share_offsets.deleted_records(group, topic_ids)
        self._apply(records)
        return None, Output(records=records)

    # Time.

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def tick(self, now_ms: int) -> Output:
        """Fire every timer due at now_ms."""
        out = Output()
        ctx = self.context(now_ms)
        for key in self.timers.pop_expired(now_ms):
            kind, group_id, *rest = key
            group = self.groups.get(group_id)
            if isinstance(group, ClassicGroup) and kind in CLASSIC_TIMERS:
                if kind == classic.JOIN_TIMER:
                    classic.on_join_timer(group, ctx, out)
                elif kind == classic.SYNC_TIMER:
                    classic.on_sync_timer(group, ctx, out)
                elif kind == classic.SESSION_TIMER:
                    classic.on_session_timer(group, rest[0], ctx, out)
                elif kind == classic.PENDING_TIMER:
                    classic.on_pending_timer(group, rest[0], ctx, out)
            elif isinstance(group, ConsumerGroup) and kind in CONSUMER_TIMERS:
                epoch = group.group_epoch
                records = consumer_handlers.on_timer(group, key, ctx)
                self._apply(records)
                out.records.extend(records)
                self._track_rebalance(group_id, epoch, now_ms, out)
            elif isinstance(group, ShareGroup) and kind == share_handlers.SESSION_TIMER:
                records = share_handlers.on_timer(group, key, ctx)
                self._apply(records)
                out.records.extend(records)
                if records:
                    out.departed.append((group_id, rest[0]))
        return out

    def expire_offsets(self, now_ms: int) -> Output:
        """Tombstone offsets past offsets.retention.minutes, as Kafka's expiry does: a
        group's offsets expire once it has been empty that long (standalone commits: since
        the commit), and an active group's only for topics it no longer subscribes to.
        Then every empty group left without offsets is deleted, as Kafka's cleanup does."""
        out = Output()
        retention = self.config.offsets_retention_ms
        for group_id, committed in list(self.offsets.items()):
            group = self.groups.get(group_id)
            expired = [
                tp for tp, value in committed.items()
                if _expired(group, tp[0], value, retention, now_ms)
            ]
            records: list[Record] = [(OffsetCommitKey(group_id, t, p), None) for t, p in expired]
            self._apply(records)
            out.records.extend(records)
        for group_id, group in list(self.groups.items()):
            # Share groups keep their offsets in the share-partition state: they never expire.
            if group_id in self.offsets or not group.is_empty() or isinstance(group, ShareGroup):
                continue
            if isinstance(group, ClassicGroup):
                if group.pending_members or group.state != ClassicState.EMPTY:
                    continue
                classic.cancel_timers(group, self.context(now_ms))
                if group.generation > 0:
                    out.records.append((GroupMetadataKey(group_id), None))
                del self.groups[group_id]
            else:
                records = group.deletion_records()
                self._apply(records)
                out.records.extend(records)
        return out


def _expired(group: Group | None, topic: str, value: OffsetCommitValue, retention: int,
             now_ms: int) -> bool:
    if value.expire_timestamp >= 0:
        return now_ms >= value.expire_timestamp
    if isinstance(group, ClassicGroup) and group.protocol_type:
        if group.is_empty():
            since = group.current_state_timestamp
            return now_ms >= (since if since >= 0 else value.commit_timestamp) + retention
        subscribed = group.subscribed_topics()
        if subscribed is None or topic in subscribed:
            return False
    elif isinstance(group, ConsumerGroup) and topic in group.subscribed_topic_names():
        return False
    return now_ms >= value.commit_timestamp + retention


def _protocol_type(group: Group) -> str:
    if isinstance(group, ShareGroup):
        return SHARE_PROTOCOL_TYPE
    if isinstance(group, ConsumerGroup):
        return consumer_group.CONSUMER_PROTOCOL_TYPE
    return group.protocol_type or ""


def _offset_tombstones(group_id: str,
                       committed: Mapping[TopicPartition, OffsetCommitValue]) -> list[Record]:
    return [(OffsetCommitKey(group_id, t, p), None) for t, p in committed]


def _heartbeat_error(request: HeartbeatRequest, code: ErrorCode,
                     message: str) -> HeartbeatResponse:
    return HeartbeatResponse(code, message, None, -1, 0, None)
