"""KIP-932's share group as its records describe it, after Kafka 4.x's ShareGroup and
ShareGroupMember.

All of a share group's state is durable: `ShareGroup.replay` alone applies its records, when
a handler's records are appended (`share_handlers`) and when a shard loads
`__consumer_offsets` alike. A share group is Empty without members and Stable with them
(Kafka's ShareGroupState); it is Dead once deleted, when it is gone from the shard.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group.consumer_group import (
    STABLE,
    Assignment,
    described_assignment,
    from_topic_partitions,
    to_topic_partitions,
)
from odradek.group.model import TopicsView
from odradek.group.records import (
    Record,
    RecordKey,
    RecordValue,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TopicPartitionsInfo,
)

SHARE_PROTOCOL_TYPE = "share"
EMPTY_STATE, STABLE_STATE, DEAD_STATE = "Empty", "Stable", "Dead"
"""Kafka's ShareGroupState names."""
LEAVE_GROUP_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned: Assignment = field(default_factory=dict)

    def metadata_value(self) -> ShareGroupMemberMetadataValue:
        return ShareGroupMemberMetadataValue(
            rack_id=self.rack_id, client_id=self.client_id, client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
        )

    def assignment_value(self) -> ShareGroupCurrentMemberAssignmentValue:
        return ShareGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch, previous_member_epoch=self.previous_member_epoch,
            state=self.state, assigned_partitions=to_topic_partitions(self.assigned),
        )


EMPTY_STATE_PARTITIONS = ShareGroupStatePartitionMetadataValue((), (), ())

TopicPartitionSet = Mapping[str, tuple[str, Iterable[int]]]
"""Topic id -> (topic name, partitions)."""


@dataclass(frozen=True, slots=True)
class ShareInitialization:
    """Share-partitions whose state the share coordinator must create before the group
    assigns them: InitializeShareGroupState at `state_epoch` (the group epoch) with start
    offset -1, which their leader resolves from `share.auto.offset.reset` on first use."""

    group_id: str
    state_epoch: int
    partitions: dict[str, tuple[str, tuple[int, ...]]]
    """Topic id -> (topic name, partitions)."""

    def keys(self) -> set[tuple[str, int]]:
        return {(t, p) for t, (_, partitions) in self.partitions.items() for p in partitions}


def with_partitions(topics: tuple[TopicPartitionsInfo, ...], added: TopicPartitionSet
                    ) -> tuple[TopicPartitionsInfo, ...]:
    """`topics` with `added` merged in."""
    merged = {t.topic_id: (t.topic_name, set(t.partitions)) for t in topics}
    for topic_id, (name, partitions) in added.items():
        merged.setdefault(topic_id, (name, set()))[1].update(partitions)
    return tuple(TopicPartitionsInfo(t, n, tuple(sorted(p))) for t, (n, p) in merged.items()
                 if p)


def without_partitions(topics: tuple[TopicPartitionsInfo, ...], removed: set[tuple[str, int]]
                       ) -> tuple[TopicPartitionsInfo, ...]:
    """`topics` without the (topic id, partition) pairs in `removed`."""
    kept = (TopicPartitionsInfo(t.topic_id, t.topic_name,
                                tuple(p for p in t.partitions if (t.topic_id, p) not in removed))
            for t in topics)
    return tuple(t for t in kept if t.partitions)


class ShareGroup:
    """A share group as its records describe it."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareMember] = {}
        self.target: dict[str, dict[str, frozenset[int]]] = {}
        self.state_partitions = EMPTY_STATE_PARTITIONS
        """The partitions whose share-partition state is being initialized, is initialized or
        is being deleted."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareGroup):
            return NotImplemented
        return self._durable() == other._durable()

    __hash__ = None  # type: ignore[assignment]

    def _durable(self) -> tuple[Any, ...]:
        return (self.group_id, self.group_epoch, self.metadata_hash, self.assignment_epoch,
                self.members, self.target, self.state_partitions)

    def copy(self) -> ShareGroup:
        """A copy that replays independently (members and values are immutable)."""
        clone = ShareGroup(self.group_id)
        clone.group_epoch = self.group_epoch
        clone.metadata_hash = self.metadata_hash
        clone.assignment_epoch = self.assignment_epoch
        clone.members = dict(self.members)
        clone.target = dict(self.target)
        clone.state_partitions = self.state_partitions
        return clone

    def replay(self, key: RecordKey, value: RecordValue | None) -> None:
        match key:
            case ShareGroupMetadataKey():
                assert value is None or isinstance(value, ShareGroupMetadataValue)
                self.group_epoch = 0 if value is None else value.epoch
                self.metadata_hash = 0 if value is None else value.metadata_hash
            case ShareGroupMemberMetadataKey(member_id=member_id):
                assert value is None or isinstance(value, ShareGroupMemberMetadataValue)
                if value is None:
                    self.members.pop(member_id, None)
                    return
                member = self.members.get(member_id) or ShareMember(member_id)
                self.members[member_id] = replace(
                    member, rack_id=value.rack_id, client_id=value.client_id,
                    client_host=value.client_host,
                    subscribed_topic_names=frozenset(value.subscribed_topic_names))
            case ShareGroupTargetAssignmentMemberKey(member_id=member_id):
                assert value is None or isinstance(value, ShareGroupTargetAssignmentMemberValue)
                if value is None:
                    self.target.pop(member_id, None)
                else:
                    self.target[member_id] = from_topic_partitions(value.topic_partitions)
            case ShareGroupTargetAssignmentMetadataKey():
                assert value is None or isinstance(value, ShareGroupTargetAssignmentMetadataValue)
                self.assignment_epoch = -1 if value is None else value.assignment_epoch
            case ShareGroupCurrentMemberAssignmentKey(member_id=member_id):
                assert value is None or isinstance(value, ShareGroupCurrentMemberAssignmentValue)
                self._replay_current_assignment(member_id, value)
            case ShareGroupStatePartitionMetadataKey():
                assert value is None or isinstance(value, ShareGroupStatePartitionMetadataValue)
                self.state_partitions = value or EMPTY_STATE_PARTITIONS
            case _:
                raise ValueError(f"not a share group record: {key!r}")

    def _replay_current_assignment(
        self, member_id: str, value: ShareGroupCurrentMemberAssignmentValue | None
    ) -> None:
        member = self.members.get(member_id)
        if value is None:
            if member is not None:
                self.members[member_id] = replace(
                    member, member_epoch=LEAVE_GROUP_EPOCH,
                    previous_member_epoch=LEAVE_GROUP_EPOCH, assigned={})
            return
        self.members[member_id] = replace(
            member or ShareMember(member_id), member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, state=value.state,
            assigned=from_topic_partitions(value.assigned_partitions))

    # Queries.

    @property
    def state(self) -> str:
        return STABLE_STATE if self.members else EMPTY_STATE

    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}

    def initialized_partitions(self) -> dict[str, frozenset[int]]:
        """Topic id -> partitions whose share-partition state is initialized."""
        return {t.topic_id: frozenset(t.partitions)
                for t in self.state_partitions.initialized_topics}

    def assigned_partitions(self) -> dict[str, frozenset[int]]:
        """Topic id -> partitions in some member's target assignment."""
        assigned: dict[str, frozenset[int]] = {}
        for target in self.target.values():
            for topic_id, partitions in target.items():
                assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
        return assigned

    def deletion_records(self) -> list[Record]:
        """Tombstones for every record of the group, in Kafka's order, group epoch last."""
        gid = self.group_id
        members = list(self.members)
        records: list[Record] = []
        records += [(ShareGroupCurrentMemberAssignmentKey(gid, m), None) for m in members]
        records += [(ShareGroupTargetAssignmentMemberKey(gid, m), None)
                    for m in dict.fromkeys([*members, *self.target])]
        records.append((ShareGroupTargetAssignmentMetadataKey(gid), None))
        records += [(ShareGroupMemberMetadataKey(gid, m), None) for m in members]
        records.append((ShareGroupStatePartitionMetadataKey(gid), None))
        records.append((ShareGroupMetadataKey(gid), None))
        return records

    def describe(self, topics: TopicsView, assignor: str) -> dict[str, Any]:
        """This group as one `groups` entry of a ShareGroupDescribe v1 response."""
        members = [{
            "member_id": m.member_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": sorted(m.subscribed_topic_names),
            "assignment": described_assignment(m.assigned, topics),
        } for m in self.members.values()]
        return {
            "error_code": ErrorCode.none,
            "error_message": None,
            "group_id": self.group_id,
            "group_state": self.state,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "assignor_name": assignor,
            "members": members,
            "authorized_operations": -2147483648,
        }

