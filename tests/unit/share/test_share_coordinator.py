"""The share coordinator shard (odradek/share/coordinator.py): each handler and its errors,
snapshots every `share.coordinator.snapshot.update.records.per.snapshot` updates, replay of
the encoded records giving the same state, and the share-partition state machine run with
the shard, through the record codec, as its persister."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, settings
from hypothesis.stateful import rule
from kio.schema.errors import ErrorCode

from odradek.share.coordinator import (
    Output,
    ShareCoordinatorConfig,
    ShareCoordinatorShard,
    combine_state_batches,
    coordinator_partition,
)
from odradek.share.partition import StateWrite
from odradek.share.record_codec import decode, encode
from odradek.share.records import (
    SharePartitionKey,
    ShareRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    StateBatch,
)
from tests.unit.share.test_share_partition import SharePartitionMachine

TOPIC = "5f6c2a4e-8a1b-4c3d-9e0f-112233445566"
KEY = SharePartitionKey("g", TOPIC, 0)


def shard(per_snapshot: int = 500) -> ShareCoordinatorShard:
    return ShareCoordinatorShard(ShareCoordinatorConfig(per_snapshot),
                                 lambda topic: 3 if topic == TOPIC else None)


def replayed(records: list[ShareRecord], per_snapshot: int = 500) -> ShareCoordinatorShard:
    """A shard loaded from the bytes of these records, as a new coordinator loads."""
    loaded = shard(per_snapshot)
    for record in records:
        loaded.replay(decode(*encode(record)))
    return loaded


def test_coordinator_partition_hashes_group_topic_partition() -> None:
    # Java: Utils.abs("g:5f6c2a4e-8a1b-4c3d-9e0f-112233445566:0".hashCode()) % 50
    assert KEY.coordinator_key == f"g:{TOPIC}:0"
    assert coordinator_partition(KEY, 50) == 41
    assert coordinator_partition(SharePartitionKey("g", TOPIC, 1), 50) == 42


def test_initialize_then_read_write_and_read_back() -> None:
    s = shard()
    result, out = s.initialize_state(KEY, state_epoch=1, start_offset=5, now_ms=100)
    assert result.error == ErrorCode.none
    assert out.records == [(ShareSnapshotKey(KEY), ShareSnapshotValue(0, 1, 0, 5, 100, 100, (),
                                                                      0))]
    read, out = s.read_state(KEY, leader_epoch=2, now_ms=200)
    assert (read.error, read.state_epoch, read.start_offset, read.state_batches) == (
        ErrorCode.none, 1, 5, ())
    assert [type(k) for k, _ in out.records] == [ShareUpdateKey]  # the new leader's epoch
    assert s.states[KEY].leader_epoch == 2
    assert s.read_state(KEY, leader_epoch=2, now_ms=200)[1].records == []
    write, out = s.write_state(KEY, 1, 2, 7, 1, [StateBatch(5, 6, 2, 1), StateBatch(7, 9, 0, 1)],
                               300)
    assert write.error == ErrorCode.none
    read, _ = s.read_state(KEY, leader_epoch=2, now_ms=300)
    assert (read.start_offset, read.state_batches) == (7, (StateBatch(7, 9, 0, 1),))
    summary, _ = s.read_state_summary(KEY)
    assert (summary.start_offset, summary.delivery_complete_count, summary.leader_epoch,
            summary.state_epoch) == (7, 1, 2, 1)


def test_fencing() -> None:
    s = shard()
    s.initialize_state(KEY, 3, 0, 0)
    s.read_state(KEY, 5, 0)
    assert s.write_state(KEY, 3, 4, 0, 0, [], 0)[0].error == ErrorCode.fenced_leader_epoch
    assert s.write_state(KEY, 2, 5, 0, 0, [], 0)[0].error == ErrorCode.fenced_state_epoch
    assert s.read_state(KEY, 4, 0)[0].error == ErrorCode.fenced_leader_epoch
    assert s.initialize_state(KEY, 2, 0, 0)[0].error == ErrorCode.fenced_state_epoch
    assert s.write_state(KEY, -1, -1, 0, 0, [], 0)[0].error == ErrorCode.none
    fenced, out = s.write_state(KEY, 3, 4, 9, 0, [], 0)
    assert out.records == [] and s.states[KEY].start_offset == 0


def test_errors_for_unknown_and_uninitialized_partitions() -> None:
    s = shard()
    assert s.write_state(KEY, 0, 0, 0, 0, [], 0)[0].error == ErrorCode.invalid_request
    assert s.read_state(KEY, 0, 0)[0].error == ErrorCode.invalid_request
    assert s.read_state_summary(KEY)[0].start_offset == -1
    bad = SharePartitionKey("g", TOPIC, 3)
    assert s.initialize_state(bad, 0, 0, 0)[0].error == ErrorCode.unknown_topic_or_partition
    other = SharePartitionKey("g", "00000000-0000-0000-0000-000000000001", 0)
    assert s.delete_state(other)[0].error == ErrorCode.unknown_topic_or_partition
    negative = SharePartitionKey("g", TOPIC, -1)
    assert s.read_state_summary(negative)[0].error == ErrorCode.invalid_request


def test_delete_writes_a_tombstone_and_forgets_the_state() -> None:
    s = shard()
    records = s.initialize_state(KEY, 1, 0, 0)[1].records
    assert s.delete_state(SharePartitionKey("g", TOPIC, 1))[1].records == []
    result, out = s.delete_state(KEY)
    assert result.error == ErrorCode.none
    assert out.records == [(ShareSnapshotKey(KEY), None)]
    assert KEY not in s.states
    assert KEY not in replayed(records + out.records).states
    assert s.initialize_state(KEY, 0, 0, 0)[0].error == ErrorCode.none  # epochs forgotten too


def test_a_snapshot_follows_the_configured_number_of_updates() -> None:
    s = shard(per_snapshot=2)
    records = s.initialize_state(KEY, 1, 0, 0)[1].records
    kinds = []
    for i in range(5):
        out = s.write_state(KEY, 1, 0, i, 0, [StateBatch(i, i, 2, 1)], 10 + i)[1]
        records += out.records
        kinds += [type(k).__name__ for k, _ in out.records]
    assert kinds == ["ShareUpdateKey", "ShareUpdateKey", "ShareSnapshotKey", "ShareUpdateKey",
                     "ShareUpdateKey"]
    snapshot = records[3][1]
    assert isinstance(snapshot, ShareSnapshotValue)
    assert (snapshot.snapshot_epoch, snapshot.start_offset, snapshot.state_batches) == (
        1, 2, (StateBatch(2, 2, 2, 1),))
    assert replayed(records, per_snapshot=2).states == s.states
    assert replayed(records[3:], per_snapshot=2).states[KEY] == s.states[KEY]


def test_combine_state_batches() -> None:
    current = (StateBatch(0, 9, 0, 1), StateBatch(10, 19, 2, 1))
    new = (StateBatch(5, 12, 2, 1), StateBatch(15, 15, 4, 3))
    assert combine_state_batches(current, new, 3) == (
        StateBatch(3, 4, 0, 1), StateBatch(5, 14, 2, 1), StateBatch(15, 15, 4, 3),
        StateBatch(16, 19, 2, 1))
    assert combine_state_batches(current, (), -1) == current
    assert combine_state_batches(current, (), 30) == ()


class PersistedThroughTheCoordinator(SharePartitionMachine):
    """The share-partition state machine with the coordinator shard as its persister: every
    write goes through WriteShareGroupState into records, and a reload reads the state back
    from a shard loaded from those records' bytes (a new share coordinator)."""

    def persist(self, write: StateWrite | None) -> None:
        super().persist(write)
        if not hasattr(self, "coordinator"):
            self.coordinator = shard(per_snapshot=3)
            self.log_records = self.coordinator.initialize_state(KEY, 0, 0, 0)[1].records
        if write is None:
            return
        result, out = self.coordinator.write_state(
            KEY, write.state_epoch, write.leader_epoch, write.start_offset,
            write.delivery_complete_count, write.state_batches, self.now)
        assert result.error == ErrorCode.none
        self.log_records += out.records

    @rule()
    def coordinator_moves(self) -> None:
        self.persist(None)
        self.coordinator = replayed(self.log_records, per_snapshot=3)
        read, _ = self.coordinator.read_state(KEY, -1, self.now)
        assert read.error == ErrorCode.none
        assert read.start_offset == self.persisted_start
        offsets = {o: (b.delivery_state, b.delivery_count) for b in read.state_batches
                   for o in range(b.first_offset, b.last_offset + 1)}
        assert offsets == self.persisted
        self.load(read.state_epoch, read.start_offset, read.state_batches)


PersistedThroughTheCoordinator.TestCase.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestPersistedThroughTheCoordinator = PersistedThroughTheCoordinator.TestCase


class Log:
    """The shard's partition as a list: a record's offset is its index."""

    def __init__(self, per_snapshot: int) -> None:
        self.records: list[ShareRecord] = []
        self.shard = ShareCoordinatorShard(ShareCoordinatorConfig(per_snapshot),
                                           lambda topic: 3, lambda: len(self.records))

    def append(self, out: Output) -> None:
        self.records += out.records

    def load_from(self, offset: int) -> ShareCoordinatorShard:
        loaded = ShareCoordinatorShard(ShareCoordinatorConfig(2), lambda topic: 3)
        for index, record in enumerate(self.records[offset:], offset):
            loaded.replay(decode(*encode(record)), index)
        return loaded


def test_the_last_redundant_offset_is_the_oldest_last_snapshot() -> None:
    """Kafka's ShareCoordinatorOffsetsManager: the smallest offset of the share-partitions'
    last snapshots; a deleted share-partition stops counting after its tombstone."""
    log = Log(per_snapshot=1)
    a, b = KEY, SharePartitionKey("g", TOPIC, 1)
    assert log.shard.last_redundant_offset() is None
    log.append(log.shard.initialize_state(a, 0, 0, 1)[1])  # 0: snapshot of a
    log.append(log.shard.initialize_state(b, 0, 0, 1)[1])  # 1: snapshot of b
    assert log.shard.last_redundant_offset() is None  # offset 0: nothing below it
    log.append(log.shard.write_state(a, 0, 0, 3, 0, [], 2)[1])  # 2: update of a
    log.append(log.shard.write_state(a, 0, 0, 4, 0, [], 2)[1])  # 3: snapshot of a
    assert log.shard.last_redundant_offset() == 1
    log.append(log.shard.write_state(b, 0, 0, 1, 0, [], 2)[1])  # 4: update of b
    log.append(log.shard.write_state(b, 0, 0, 2, 0, [], 2)[1])  # 5: snapshot of b
    assert isinstance(log.records[5][0], ShareSnapshotKey)
    assert log.shard.last_redundant_offset() == 3
    log.append(log.shard.delete_state(a)[1])  # 6: tombstone of a
    assert log.shard.last_redundant_offset() == 5
    assert log.load_from(5).states == log.shard.states


def test_loading_from_the_last_redundant_offset_loses_nothing() -> None:
    """Random writes, initializations and deletions of a few share-partitions: the shard
    loaded from its last redundant offset (an offset it reached at any time) holds the
    states of one loaded from the start."""
    rng = random.Random(932)
    keys = [SharePartitionKey("g", TOPIC, p) for p in range(3)]
    for _ in range(40):
        log = Log(per_snapshot=rng.randint(0, 4))
        prunes = []
        for step in range(rng.randint(5, 60)):
            key = rng.choice(keys)
            choice = rng.random()
            if key not in log.shard.states or choice < 0.05:
                log.append(log.shard.initialize_state(key, 0, rng.randint(0, 9), step)[1])
            elif choice < 0.1:
                log.append(log.shard.delete_state(key)[1])
            else:
                start = log.shard.states[key].start_offset + rng.randint(0, 3)
                first = start + rng.randint(0, 3)
                batch = StateBatch(first, first + rng.randint(0, 3), rng.choice((0, 2, 4)),
                                   rng.randint(1, 3))
                log.append(log.shard.write_state(key, 0, 0, start, 0, [batch], step)[1])
            offset = log.shard.last_redundant_offset()
            if offset is not None:
                prunes.append(offset)
        assert prunes == sorted(prunes), "the log start only moves up"
        for offset in sorted(set(prunes)):
            assert log.load_from(offset).states == log.load_from(0).states == log.shard.states


def test_cold_share_partitions_are_snapshotted_again() -> None:
    """Kafka's snapshotColdPartitions: the same state in a new snapshot (write timestamp now,
    create timestamp kept) once the last is an interval old; none once each has one."""
    log = Log(per_snapshot=500)
    log.shard.config = ShareCoordinatorConfig(500, cold_partition_snapshot_interval_ms=1000)
    a, b = KEY, SharePartitionKey("g", TOPIC, 1)
    assert log.shard.snapshot_cold_partitions(5000).records == []  # no state at all
    log.append(log.shard.initialize_state(a, 1, 0, 0)[1])  # 0
    log.append(log.shard.initialize_state(b, 1, 5, 500)[1])  # 1
    log.append(log.shard.write_state(a, 1, 0, 2, 0, [StateBatch(2, 3, 0, 1)], 900)[1])  # 2
    before = log.shard.states[a]
    out = log.shard.snapshot_cold_partitions(1000)  # 3: a's; b's is 500 ms old
    assert out.records == [(ShareSnapshotKey(a), ShareSnapshotValue(
        snapshot_epoch=1, state_epoch=1, leader_epoch=0, start_offset=2, create_timestamp=0,
        write_timestamp=1000, state_batches=(StateBatch(2, 3, 0, 1),),
        delivery_complete_count=0))]
    log.append(out)
    assert log.shard.states[a].state_batches == before.state_batches
    assert log.shard.last_redundant_offset() == 1  # b's snapshot holds it
    log.append(log.shard.snapshot_cold_partitions(1500))  # 4: b's
    assert log.shard.last_redundant_offset() == 3
    assert log.load_from(3).states == log.shard.states
    assert log.shard.snapshot_cold_partitions(10_000).records == [], "each had one"
