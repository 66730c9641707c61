"""KIP-848's consumer group as its records describe it, after Kafka 4.x's ConsumerGroup and
ConsumerGroupMember.

All of a consumer group's state is durable: `ConsumerGroup.replay` alone applies its records,
when a handler's records are appended (`consumer_handlers`) and when a shard loads
`__consumer_offsets` alike. Replay also keeps the indexes the handlers query (who owns a
partition, static members, what members subscribe to).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group.model import GroupError, TopicsView
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
EMPTY_STATE, ASSIGNING_STATE, RECONCILING_STATE, STABLE_STATE = (
    "Empty", "Assigning", "Reconciling", "Stable")
"""Kafka's ConsumerGroupState names."""

LEAVE_GROUP_EPOCH = -1
STATIC_LEAVE_GROUP_EPOCH = -2

# MemberState, as ConsumerGroupCurrentMemberAssignmentValue.state stores it.
STABLE = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2

Assignment = Mapping[str, frozenset[int]]
"""Topic id -> partitions; no topic maps to an empty set."""


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
            "assignment": described_assignment(m.assigned, topics),
            "target_assignment": described_assignment(self.target.get(m.member_id, {}), topics),
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


def described_assignment(assignment: Assignment, topics: TopicsView) -> dict[str, Any]:
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
