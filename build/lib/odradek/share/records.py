"""The records the share coordinator keeps in `__share_group_state`, one dataclass per key
and value schema of Kafka's share coordinator (share-coordinator/src/main/resources/common/
message/Share*.json, Kafka 4.3). The binary layout is in `record_codec.py`.

A share-partition's state is a ShareSnapshot record (the whole state) followed by
ShareUpdate records (changes to apply to it); a ShareSnapshot key with a null value (a
tombstone) deletes the state. Topic ids are canonical UUID strings.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A range of offsets in one delivery state (0 available, 2 acknowledged, 4 archived)
    with its delivery count: PersisterStateBatch, and StateBatch in the records and in
    Read/WriteShareGroupState."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


def offsets_without(first: int, last: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """The offset range [first, last] less [lo, hi]: none, one or two ranges."""
    if hi < first or lo > last:
        return [(first, last)]
    return [r for r in ((first, lo - 1), (hi + 1, last)) if r[0] <= r[1]]


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """The share-partition a record is about: Kafka's SharePartitionKey."""

    group_id: str
    topic_id: str
    partition: int

    @property
    def coordinator_key(self) -> str:
        """"groupId:topicId:partition", the key that picks the coordinator partition."""
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


@dataclass(frozen=True, slots=True)
class ShareSnapshotKey:
    """Record type 0."""

    key: SharePartitionKey


@dataclass(frozen=True, slots=True)
class ShareUpdateKey:
    """Record type 1."""

    key: SharePartitionKey


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1
    """Tagged field 0 (KIP-1226, Kafka 4.2), written only when not -1."""


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    """-1 when the start offset does not change."""
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1
    """Tagged field 0, as in ShareSnapshotValue."""


ShareRecord = (tuple[ShareSnapshotKey, ShareSnapshotValue | None]
               | tuple[ShareUpdateKey, ShareUpdateValue])
"""A record of `__share_group_state`: a snapshot (None: a tombstone) or an update."""
