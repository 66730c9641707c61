"""SharePartition (odradek/share/partition.py) against a per-offset model, and its rules one
by one.

The stateful test drives a share-partition over a growing log with random acquisitions,
acknowledgements, lock expiries, members leaving and reloads from what was persisted, and
checks it offset by offset against a dict offset -> (state, delivery count, owner, lock
deadline) that applies Kafka's rules record by record. The persisted side is modelled too:
every StateWrite is applied to a dict, and a reload builds the partition from it, so an
acknowledged record must never come back and an acquired one never be lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from kio.schema.errors import ErrorCode

from odradek.config.group import auto_offset_reset
from odradek.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    AcquireMode,
    FetchedBatch,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
    StateWrite,
    aborted_batch_ranges,
    initial_start_offset,
)

A, R, AV, ACQ, ACK, ARC = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                           RecordState.AVAILABLE, RecordState.ACQUIRED,
                           RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
LOCK_MS = 100
MEMBERS = ("m1", "m2", "m3")


@dataclass(frozen=True)
class Rec:
    state: RecordState
    count: int
    member: str = ""
    deadline: int | None = None


def per_offset(partition: SharePartition) -> dict[int, Rec]:
    """The partition's in-flight state offset by offset, at or past its start offset."""
    return {o: Rec(r.state, r.delivery_count, r.member_id, r.lock_deadline_ms)
            for r in partition.in_flight()
            for o in range(max(r.first_offset, partition.start_offset), r.last_offset + 1)}


class SharePartitionMachine(RuleBasedStateMachine):
    @initialize(limit=st.integers(2, 6), locks=st.sampled_from([6, 1000]))
    def start(self, limit: int, locks: int) -> None:
        self.config = SharePartitionConfig(delivery_count_limit=limit, max_record_locks=locks,
                                           record_lock_duration_ms=LOCK_MS)
        self.partition = SharePartition(self.config, 0, 0, 0)
        self.log: list[tuple[int, int]] = []
        self.aborted: set[tuple[int, int]] = set()
        """Batches written by aborted transactions."""
        self.compacted: set[tuple[int, int]] = set()
        """Batches the cleaner removed."""
        self.now = 0
        self.recs: dict[int, Rec] = {}
        self.start_offset = 0
        self.persisted: dict[int, tuple[int, int]] = {}
        self.persisted_start = 0
        self.log_start = 0
        self.held_below: dict[int, Rec] = {}
        """Records still acquired that the log's start offset passed."""
        self.accepted: Counter[int] = Counter()
        """Each record's acceptances the partition confirmed (an ACCEPT answered NONE)."""

    # The model's rules.

    def expected_start(self) -> int:
        pending = [o for o, r in self.recs.items()
                   if o >= self.start_offset and not r.state.terminal]
        if pending:
            return min(pending)
        return max([self.start_offset - 1, *self.recs]) + 1

    def settle(self) -> None:
        self.start_offset = self.expected_start()
        self.held_below |= {o: r for o, r in self.recs.items()
                            if o < self.start_offset and r.state == ACQ}
        self.recs = {o: r for o, r in self.recs.items() if o >= self.start_offset}

    def persist(self, write: StateWrite | None) -> None:
        if write is None:
            return
        for batch in write.state_batches:
            assert batch.delivery_state != ACQ, write
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self.persisted[offset] = (batch.delivery_state, batch.delivery_count)
        self.persisted_start = write.start_offset
        self.persisted = {o: v for o, v in self.persisted.items() if o >= write.start_offset}
        assert write.delivery_complete_count == sum(
            1 for o, r in self.recs.items() if o >= write.start_offset and r.state.terminal)

    # Rules.

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 12),
          max_batches=st.integers(1, 4), batch_size=st.integers(1, 8),
          produced=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([False] * 4 + [True])),
                            max_size=3),
          mode=st.sampled_from(AcquireMode))
    def acquire(self, member: str, max_records: int, max_batches: int, batch_size: int,
                produced: list[tuple[int, bool]], mode: AcquireMode) -> None:
        """The log grows by `produced` batches (size, written by an aborted transaction),
        then `member` fetches, read_committed, in `mode`."""
        for size, aborted in produced:
            first = self.log[-1][1] + 1 if self.log else 0
            self.log.append((first, first + size - 1))
            if aborted:
                self.aborted.add(self.log[-1])
        fetch_offset = self.partition.next_fetch_offset()
        fetched = [b for b in self.log if b[1] >= fetch_offset and b not in self.compacted]
        fetched = fetched[:max_batches]
        aborted_ranges = [b for b in fetched if b in self.aborted]
        before = dict(self.recs)
        acquired = self.partition.acquire(member, fetch_offset, fetched, self.now, max_records,
                                          batch_size, aborted=aborted_ranges, mode=mode)
        offsets = [o for a in acquired for o in range(a.first_offset, a.last_offset + 1)]
        assert len(offsets) == len(set(offsets)), acquired
        if mode == AcquireMode.RECORD_LIMIT:
            assert len(offsets) <= max_records, (max_records, acquired)
        limit = self.config.delivery_count_limit
        if limit > 2 and any(a.delivery_count == limit for a in acquired):
            assert len(offsets) == 1, acquired  # a record's last delivery goes alone
        in_aborted = {o for lo, hi in aborted_ranges for o in range(lo, hi + 1)}
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):
                assert offset >= self.start_offset and fetched[0][0] <= offset <= fetched[-1][1]
                assert offset not in in_aborted, (offset, acquired, aborted_ranges)
                was = before.get(offset, Rec(AV, 0))
                assert was.state == AV, (offset, was)
                assert a.delivery_count == was.count + 1
                self.recs[offset] = Rec(ACQ, was.count + 1, member, self.now + LOCK_MS)
        # Stale: AVAILABLE records between the fetch offset and the first batch the log
        # returned were compacted away. Aborted: acquired, then archived at once.
        first_fetched = fetched[0][0] if fetched else fetch_offset
        for offset, rec in before.items():
            if fetch_offset <= offset < first_fetched and rec.state == AV:
                self.recs[offset] = Rec(ARC, rec.count)
        now = per_offset(self.partition)
        archived = {o for o in in_aborted if o >= self.start_offset
                    and before.get(o, Rec(AV, 0)).state == AV
                    and (o < self.partition.start_offset or o in now and now[o].state == ARC)}
        for offset in archived:
            self.recs[offset] = Rec(ARC, before.get(offset, Rec(AV, 0)).count + 1)
        span = range(max(first_fetched, fetch_offset), fetched[-1][1] + 1) if fetched else []
        if mode == AcquireMode.RECORD_LIMIT:
            # new records past the limit are in flight unacquired, never delivered
            self.recs |= {o: Rec(AV, 0) for o, r in now.items()
                          if o not in before and o not in self.recs and r == Rec(AV, 0)}
        throttled = any(before[o].state == AV
                        and before[o].count >= self.config.throttle_delivery_limit
                        for o in span if o in before)
        if self.config.max_record_locks == 1000 and max_records >= len(span) and not throttled:
            # Unbounded, a fetch acquires every AVAILABLE record it returned and every new
            # offset its batches span (a compacted batch between them too: the client reports
            # such offsets as gaps), but no hole among the records fetched before.
            end = max(before, default=self.start_offset - 1)
            wanted = {o for o in span if (before[o].state == AV if o in before else o > end)}
            assert set(offsets) | archived == wanted, (fetch_offset, fetched, acquired)
        self.settle()

    @rule(data=st.data())
    def compaction(self, data: st.DataObject) -> None:
        """The cleaner removes a whole batch from the log."""
        if self.log:
            self.compacted.add(data.draw(st.sampled_from(self.log)))

    @rule(member=st.sampled_from(MEMBERS), data=st.data())
    def acknowledge(self, member: str, data: st.DataObject) -> None:
        top = max([self.start_offset, *self.recs]) + 2
        held = sorted(o for o, r in self.recs.items() if r.state == ACQ)
        types = st.sampled_from(list(AcknowledgeType))
        if held and data.draw(st.integers(0, 4)):
            # Mostly acknowledge a run of records someone holds, as that member, in one or
            # two batches.
            first = data.draw(st.sampled_from(held))
            member = self.recs[first].member
            run = [o for o in held if o >= first and self.recs[o].member == member]
            last = data.draw(st.sampled_from([o for i, o in enumerate(run) if o == first + i]))
            cut = data.draw(st.integers(first, last + 1))
            ranges = [r for r in ((first, cut - 1), (cut, last)) if r[0] <= r[1]]
        else:
            lo = data.draw(st.integers(max(0, self.start_offset - 2), top))
            ranges = [(lo, data.draw(st.integers(lo, min(lo + 6, top))))]
        batches = []
        for lo, hi in ranges:
            if data.draw(st.booleans()):
                ack_types = (data.draw(types),)
            else:
                ack_types = tuple(data.draw(types) for _ in range(hi - lo + 1))
            batches.append(AcknowledgementBatch(lo, hi, ack_types))
        below = {o: (r.state, r.member_id) for r in self.partition.in_flight()
                 for o in range(r.first_offset, min(r.last_offset, self.start_offset - 1) + 1)}
        expected_error, expected, held_below = self.model_acknowledge(member, batches, below)
        result = self.partition.acknowledge(member, batches, self.now)
        assert result.error == expected_error, (batches, result)
        if expected_error == ErrorCode.none:
            gone = {o for lo, hi in self.aborted | self.compacted for o in range(lo, hi + 1)}
            self.accepted.update(
                o for b in batches for o in range(b.first_offset, b.last_offset + 1)
                if o not in gone and o <= (self.log[-1][1] if self.log else -1)
                and b.acknowledge_types[o - b.first_offset if len(b.acknowledge_types) > 1
                                        else 0] == AcknowledgeType.ACCEPT)
            self.recs, self.held_below = expected, held_below
            self.settle()
            self.persist(result.write)
        else:
            assert result.write is None

    def model_acknowledge(self, member: str, batches: list[AcknowledgementBatch],
                          below: dict[int, tuple[RecordState, str]]
                          ) -> tuple[ErrorCode, dict[int, Rec], dict[int, Rec]]:
        """The error and, without one, the records after the acknowledgement: those at or
        past the start offset, and those still held below it. Below the start offset only
        records the member holds may be named; the partition keeps those of the batch
        holding the start offset only (`below`, its state there), and each must be one
        the model saw the start offset pass while held."""
        recs = dict(self.recs)
        held_below = dict(self.held_below)
        end = max(self.recs, default=-1)
        failed = ErrorCode.invalid_record_state, self.recs, self.held_below
        for batch in batches:
            types = batch.acknowledge_types
            for offset in range(batch.first_offset,
                                min(batch.last_offset, self.start_offset - 1) + 1):
                rec = held_below.get(offset)
                if below.get(offset) != (ACQ, member):
                    return failed
                assert rec is not None and rec.member == member, (offset, rec)
                ack = types[0] if len(types) == 1 else types[offset - batch.first_offset]
                if ack == AcknowledgeType.RENEW:
                    held_below[offset] = replace(rec, deadline=self.now + LOCK_MS)
                else:
                    del held_below[offset]
                    below = {**below, offset: (ARC, "")}
            if batch.last_offset < self.start_offset:
                continue
            if end < self.start_offset:
                return failed
            if batch.last_offset not in recs:  # past the in-flight records, or in a hole
                return ErrorCode.invalid_request, self.recs, self.held_below
            for offset in range(max(batch.first_offset, self.start_offset),
                                batch.last_offset + 1):
                if offset not in recs:
                    continue  # a hole: the log had no batch there when it was fetched
                rec = recs[offset]
                if rec.state != ACQ or rec.member != member:
                    return failed
                types = batch.acknowledge_types
                ack = types[0] if len(types) == 1 else types[offset - batch.first_offset]
                if ack == AcknowledgeType.RENEW:
                    recs[offset] = replace(rec, deadline=self.now + LOCK_MS)
                elif ack == AcknowledgeType.ACCEPT:
                    recs[offset] = Rec(ACK, rec.count)
                elif ack == AcknowledgeType.RELEASE:
                    limit = rec.count >= self.config.delivery_count_limit
                    recs[offset] = Rec(ARC if limit else AV, rec.count)
                else:
                    recs[offset] = Rec(ARC, rec.count)
        return ErrorCode.none, recs, held_below

    @rule(elapsed=st.sampled_from([0, 1, LOCK_MS // 2, LOCK_MS, 2 * LOCK_MS]))
    def expire(self, elapsed: int) -> None:
        self.now += elapsed
        write = self.partition.expire_locks(self.now)
        expired = [o for o, r in self.recs.items()
                   if r.state == ACQ and r.deadline is not None and r.deadline <= self.now]
        assert self.written(write) == set(expired)
        for offset in expired:
            rec = self.recs[offset]
            limit = rec.count >= self.config.delivery_count_limit
            self.recs[offset] = Rec(ARC if limit else AV, rec.count)
        self.held_below = {o: r for o, r in self.held_below.items()
                           if r.deadline is not None and r.deadline > self.now}
        self.settle()
        self.persist(write)

    @rule(member=st.sampled_from(MEMBERS))
    def leave(self, member: str) -> None:
        write = self.partition.release_acquired_records(member)
        held = [o for o, r in self.recs.items() if r.state == ACQ and r.member == member]
        assert self.written(write) == set(held)
        for offset in held:
            count = self.recs[offset].count
            self.recs[offset] = Rec(ARC if count >= self.config.delivery_count_limit else AV,
                                    count)
        self.held_below = {o: r for o, r in self.held_below.items() if r.member != member}
        self.settle()
        self.persist(write)

    def written(self, write: StateWrite | None) -> set[int]:
        """The offsets at or past the start offset a write changes (records below it, held
        when the log start offset passed them, are archived but never read again)."""
        if write is None:
            return set()
        return {o for b in write.state_batches for o in range(b.first_offset, b.last_offset + 1)
                if o >= self.start_offset}

    @rule(data=st.data())
    def retention(self, data: st.DataObject) -> None:
        """The log's start offset moves (retention, DeleteRecords), maybe within a batch."""
        end = self.log[-1][1] + 1 if self.log else 0
        if end <= self.start_offset:
            return
        log_start = data.draw(st.integers(self.start_offset + 1, end))
        self.partition.update_log_start_offset(log_start)
        self.model_log_start(log_start)

    def model_log_start(self, log_start: int) -> None:
        """Records below the log start offset are gone: the start offset moves there."""
        self.log_start = max(self.log_start, log_start)
        self.start_offset = max(self.start_offset, log_start)
        self.settle()

    @rule()
    def reload(self) -> None:
        """A new leader: the partition as the persister holds it."""
        batches = [StateBatch(o, o, *self.persisted[o]) for o in sorted(self.persisted)]
        self.load(0, self.persisted_start, batches)

    def load(self, state_epoch: int, start_offset: int, batches: Sequence[StateBatch]) -> None:
        """A new leader loads the partition from what ReadShareGroupState returned and moves
        it to its log's start offset; the model holds the persisted state, gaps AVAILABLE."""
        self.partition = SharePartition.from_persisted(self.config, 1, state_epoch, start_offset,
                                                       batches)
        self.partition.update_log_start_offset(self.log_start)
        last = max(self.persisted, default=self.persisted_start - 1)
        self.recs = {}
        self.held_below = {}
        for offset in range(self.persisted_start, last + 1):
            state, count = self.persisted.get(offset, (AV, 0))
            self.recs[offset] = Rec(RecordState(state), count)
        self.start_offset = self.persisted_start
        self.model_log_start(self.log_start)

    # Invariants.

    @invariant()
    def matches_model(self) -> None:
        assert self.partition.start_offset == self.start_offset
        assert per_offset(self.partition) == self.recs
        end = max(self.recs, default=None)
        assert self.partition.end_offset == (self.start_offset if end is None else end)
        available = [o for o, r in self.recs.items() if r.state == AV]
        assert self.partition.next_fetch_offset() == min(
            available, default=self.start_offset if end is None else end + 1)
        deadlines = [r.lock_deadline_ms for r in self.partition.in_flight()
                     if r.lock_deadline_ms is not None]
        assert self.partition.next_lock_deadline() == min(deadlines, default=None)

    @invariant()
    def no_record_accepted_twice(self) -> None:
        """However stale an acknowledgement (a member's acquisition forgotten by a reload,
        or its lock expired), no record's acceptance is confirmed twice."""
        assert all(n == 1 for n in self.accepted.values()), self.accepted

    @invariant()
    def held_below_start_as_modelled(self) -> None:
        """Below the start offset the partition holds only records the model saw the start
        offset pass while held, with the same owner and lock."""
        for r in self.partition.in_flight():
            for offset in range(r.first_offset, min(r.last_offset, self.start_offset - 1) + 1):
                if r.state == ACQ:
                    assert self.held_below.get(offset) == Rec(ACQ, r.delivery_count,
                                                              r.member_id, r.lock_deadline_ms)

    @invariant()
    def delivery_count_within_limit(self) -> None:
        assert all(0 <= r.count <= self.config.delivery_count_limit
                   for r in self.recs.values())

    @invariant()
    def nothing_done_is_lost(self) -> None:
        """Every record acknowledged or archived is so in the persisted state too (or below
        its start offset): a new leader never delivers it again. Records of aborted
        transactions and compacted batches are archived without a write, as in Kafka: a new
        leader archives them again."""
        assert self.persisted_start <= self.start_offset
        gone = {o for lo, hi in self.aborted | self.compacted for o in range(lo, hi + 1)}
        for offset in range(max(self.persisted_start, self.log_start), self.start_offset):
            assert (offset in gone or offset not in self.persisted
                    or RecordState(self.persisted[offset][0]).terminal)
        for offset, rec in self.recs.items():
            if rec.state.terminal and offset not in gone:
                assert offset < self.persisted_start or (
                    offset in self.persisted and RecordState(self.persisted[offset][0]).terminal)


SharePartitionMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestSharePartitionModel = SharePartitionMachine.TestCase


# The rules one by one.


def fresh(limit: int = 5, locks: int = 2000) -> SharePartition:
    config = SharePartitionConfig(delivery_count_limit=limit, max_record_locks=locks,
                                  record_lock_duration_ms=LOCK_MS)
    return SharePartition(config, 0, 0, 0)


def states(partition: SharePartition) -> dict[int, tuple[RecordState, int, str]]:
    return {o: (r.state, r.count, r.member) for o, r in per_offset(partition).items()}


def test_acquire_takes_whole_batches_up_to_the_batch_crossing_max_records() -> None:
    partition = fresh()
    got = partition.acquire("m1", 0, [(0, 4), (5, 9), (10, 14)], 0, max_fetch_records=7)
    assert got == [AcquiredRecords(0, 9, 1)]
    assert partition.end_offset == 9
    assert partition.next_fetch_offset() == 10


def test_acquire_splits_acquired_ranges_at_batch_boundaries_by_batch_size() -> None:
    partition = fresh()
    got = partition.acquire("m1", 0, [(0, 2), (3, 5), (6, 8)], 0, 100, batch_size=3)
    assert got == [AcquiredRecords(0, 2, 1), AcquiredRecords(3, 5, 1), AcquiredRecords(6, 8, 1)]


def test_record_limit_acquires_part_of_a_batch_and_leaves_the_rest_available() -> None:
    partition = fresh()
    limited = AcquireMode.RECORD_LIMIT
    assert partition.acquire("m1", 0, [(0, 9), (10, 14)], 0, 4, mode=limited) == [
        AcquiredRecords(0, 3, 1)]
    assert partition.end_offset == 9  # the in-flight batch ends on the log's batch boundary
    assert states(partition) == {**{o: (ACQ, 1, "m1") for o in range(4)},
                                 **{o: (AV, 0, "") for o in range(4, 10)}}
    assert partition.next_fetch_offset() == 4
    assert partition.acquire("m2", 4, [(0, 9), (10, 14)], 0, 4, mode=limited) == [
        AcquiredRecords(4, 7, 1)]
    assert partition.acquire("m2", 8, [(0, 9), (10, 14)], 0, 4, mode=limited) == [
        AcquiredRecords(8, 9, 1), AcquiredRecords(10, 11, 1)]
    assert partition.end_offset == 14
    assert partition.next_fetch_offset() == 12


def test_a_fetch_of_often_redelivered_records_takes_ever_smaller_parts_of_their_batch() -> None:
    """Kafka's delivery throttling (limit 6: from 3 deliveries a fetch takes half the batch,
    then a quarter, ...; a record's last delivery goes alone), so that one bad record does
    not take a whole batch to the delivery limit with it."""
    partition = fresh(limit=6)
    batches = [(0, 99), (100, 109)]

    def fetch_and_release() -> list[AcquiredRecords]:
        got = partition.acquire("m1", partition.next_fetch_offset(), batches, 0, 1000)
        for a in got:
            released = partition.acknowledge("m1", [AcknowledgementBatch(
                a.first_offset, a.last_offset, (R,))], 0)
            assert released.error == ErrorCode.none
        return got

    assert fetch_and_release() == [AcquiredRecords(0, 109, 1)]
    assert fetch_and_release() == [AcquiredRecords(0, 109, 2)]
    assert fetch_and_release() == [AcquiredRecords(0, 109, 3)]
    assert fetch_and_release() == [AcquiredRecords(0, 54, 4)]  # 110 >> 1 records, nothing after
    assert fetch_and_release() == [AcquiredRecords(0, 26, 5)]  # 110 >> 2
    assert fetch_and_release() == [AcquiredRecords(0, 0, 6)]  # its last delivery: alone
    assert fetch_and_release() == [AcquiredRecords(1, 1, 6)]
    assert partition.start_offset == 2  # both archived at the delivery limit


def test_acquire_stops_at_max_record_locks() -> None:
    partition = fresh(locks=4)
    assert partition.acquire("m1", 0, [(0, 2), (3, 5)], 0, 100) == [AcquiredRecords(0, 5, 1)]
    assert not partition.can_acquire_records()
    assert partition.acquire("m2", 6, [(6, 8)], 0, 100) == []


def test_acquired_records_are_not_acquired_again_until_released() -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    assert partition.acquire("m2", 0, [(0, 4)], 0, 100) == []
    release = partition.acknowledge("m1", [AcknowledgementBatch(2, 3, (R,))], 0)
    assert release.error == ErrorCode.none
    assert release.write is not None
    assert release.write.state_batches == (StateBatch(2, 3, AV, 1),)
    assert partition.next_fetch_offset() == 2
    assert partition.acquire("m2", 2, [(0, 4)], 0, 100) == [AcquiredRecords(2, 3, 2)]
    assert states(partition)[2] == (ACQ, 2, "m2")


def test_accept_moves_the_start_offset_over_leading_done_records() -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4), (5, 9)], 0, 100, batch_size=5)
    result = partition.acknowledge("m1", [AcknowledgementBatch(0, 4, (A,)),
                                          AcknowledgementBatch(7, 7, (AcknowledgeType.REJECT,))],
                                   0)
    assert result.error == ErrorCode.none
    assert result.write == StateWrite(0, 0, 5, 1, (StateBatch(0, 4, ACK, 1),
                                                   StateBatch(7, 7, ARC, 1)))
    assert partition.start_offset == 5
    done = partition.acknowledge("m1", [AcknowledgementBatch(5, 9, (A, A, 0, A, A))], 0)
    assert done.error == ErrorCode.invalid_record_state  # 7 is already archived
    assert states(partition)[5] == (ACQ, 1, "m1")  # the whole request was rolled back
    done = partition.acknowledge("m1", [AcknowledgementBatch(5, 6, (A,)),
                                        AcknowledgementBatch(8, 9, (A,))], 0)
    assert done.error == ErrorCode.none
    assert partition.start_offset == partition.end_offset == 10
    assert partition.in_flight() == []


@pytest.mark.parametrize(("batch", "error"), [
    (AcknowledgementBatch(0, 1, (A,)), ErrorCode.invalid_record_state),  # another owner
    (AcknowledgementBatch(3, 2, (A,)), ErrorCode.invalid_request),  # last before first
    (AcknowledgementBatch(0, 3, (A, A)), ErrorCode.invalid_request),  # types' count
    (AcknowledgementBatch(0, 0, (9,)), ErrorCode.invalid_request),  # no such type
    (AcknowledgementBatch(3, 9, (A,)), ErrorCode.invalid_request),  # past the in-flight ones
])
def test_acknowledge_errors(batch: AcknowledgementBatch, error: ErrorCode) -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    assert partition.acknowledge("m2", [batch], 0).error == error


def test_acknowledging_records_never_acquired_is_invalid_record_state() -> None:
    partition = fresh()
    assert (partition.acknowledge("m1", [AcknowledgementBatch(0, 0, (A,))], 0).error
            == ErrorCode.invalid_record_state)
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    partition.acknowledge("m1", [AcknowledgementBatch(0, 1, (R,))], 0)
    assert (partition.acknowledge("m1", [AcknowledgementBatch(0, 0, (A,))], 0).error
            == ErrorCode.invalid_record_state)


def test_records_the_member_holds_below_the_start_offset_are_skipped() -> None:
    """The log's start offset moved past records m1 still holds: acknowledging them
    succeeds (they are gone from the log, as in Kafka), once."""
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    partition.update_log_start_offset(2)
    result = partition.acknowledge("m1", [AcknowledgementBatch(0, 3, (A,))], 0)
    assert result.error == ErrorCode.none
    assert partition.start_offset == 4
    again = partition.acknowledge("m1", [AcknowledgementBatch(0, 1, (A,))], 0)
    assert again.error == ErrorCode.invalid_record_state


@pytest.mark.parametrize("member", ["m1", "m2"])
def test_acknowledging_records_done_below_the_start_offset_is_invalid_record_state(
        member: str) -> None:
    """Records below the start offset that were accepted (here by m1) are no longer
    acquired by anyone: an acknowledgement naming them, wholly or in part, confirms
    nothing."""
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    partition.acquire("m2", 5, [(5, 9)], 0, 100)
    partition.acknowledge("m1", [AcknowledgementBatch(0, 1, (A,))], 0)
    assert partition.start_offset == 2
    for batch in (AcknowledgementBatch(0, 0, (A,)), AcknowledgementBatch(1, 2, (A,))):
        result = partition.acknowledge(member, [batch], 0)
        assert (result.error, result.write) == (ErrorCode.invalid_record_state, None)
    partition.acknowledge("m1", [AcknowledgementBatch(2, 4, (A,))], 0)
    assert partition.start_offset == 5  # batch 0-4 is no longer in flight
    result = partition.acknowledge(member, [AcknowledgementBatch(3, 3, (A,))], 0)
    assert (result.error, result.write) == (ErrorCode.invalid_record_state, None)


def test_an_acquisition_a_reload_forgot_cannot_confirm_what_another_member_accepted(
        ) -> None:
    """CI's record accepted twice (test_share_consumer.py, its share coordinator's broker
    killed): m1 acquired 225; a write failed, so the leader rebuilt the partition from
    its persisted state (start offset 224), which forgot that acquisition; m2 acquired
    224-461 and accepted them. m1's acknowledgement of 225, retried until the rebuilt
    partition answered, must fail: a success would report 225 accepted a second time."""
    partition = fresh()
    assert partition.acquire("m1", 224, [(224, 224), (225, 225)], 0, 100) == [
        AcquiredRecords(224, 225, 1)]
    reloaded = SharePartition.from_persisted(partition.config, 0, 0, 224, [])
    assert reloaded.acquire("m2", 224, [(224, 461)], 0, 500) == [AcquiredRecords(224, 461, 1)]
    accepted = reloaded.acknowledge("m2", [AcknowledgementBatch(224, 461, (A,))], 0)
    assert accepted.error == ErrorCode.none
    assert reloaded.start_offset == 462
    stale = reloaded.acknowledge("m1", [AcknowledgementBatch(225, 225, (A,))], 0)
    assert (stale.error, stale.write) == (ErrorCode.invalid_record_state, None)


def test_lock_expiry_makes_records_available_then_archives_at_the_delivery_limit() -> None:
    partition = fresh(limit=2)
    partition.acquire("m1", 0, [(0, 1)], 0, 100)
    assert partition.next_lock_deadline() == LOCK_MS
    assert partition.expire_locks(LOCK_MS - 1) is None
    write = partition.expire_locks(LOCK_MS)
    assert write is not None and write.state_batches == (StateBatch(0, 1, AV, 1),)
    assert partition.acquire("m2", 0, [(0, 1)], LOCK_MS, 100) == [AcquiredRecords(0, 1, 2)]
    write = partition.expire_locks(2 * LOCK_MS)
    assert write is not None and write.state_batches == (StateBatch(0, 1, ARC, 2),)
    assert write.start_offset == 2
    assert partition.in_flight() == []


def test_release_at_the_delivery_limit_archives() -> None:
    partition = fresh(limit=1)
    partition.acquire("m1", 0, [(0, 0)], 0, 100)
    result = partition.acknowledge("m1", [AcknowledgementBatch(0, 0, (R,))], 0)
    assert result.write is not None
    assert result.write.state_batches == (StateBatch(0, 0, ARC, 1),)


def test_renew_extends_the_lock_and_persists_nothing() -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 1)], 0, 100)
    result = partition.acknowledge("m1", [AcknowledgementBatch(0, 1, (AcknowledgeType.RENEW,))],
                                   50)
    assert result.error == ErrorCode.none
    assert result.write is not None and result.write.state_batches == ()
    assert partition.expire_locks(LOCK_MS) is None
    assert partition.next_lock_deadline() == 50 + LOCK_MS


def test_a_member_leaving_releases_its_records_and_keeps_their_delivery_count() -> None:
    """As Kafka 4.3 does: the records may have reached the member's application, so their
    next delivery is not a first one (librdkafka's 0174 counts first deliveries)."""
    partition = fresh()
    partition.acquire("m1", 0, [(0, 1)], 0, 100)
    partition.acquire("m2", 2, [(2, 3)], 0, 100)
    write = partition.release_acquired_records("m1")
    assert write is not None and write.state_batches == (StateBatch(0, 1, AV, 1),)
    assert partition.acquire("m3", 0, [(0, 1)], 0, 100) == [AcquiredRecords(0, 1, 2)]
    assert states(partition)[2] == (ACQ, 1, "m2")
    assert partition.release_acquired_records("m1") is None


def test_read_committed_archives_aborted_batches_and_never_delivers_them() -> None:
    fetched = [FetchedBatch(0, 2, producer_id=7, transactional=True),
               FetchedBatch(3, 4, producer_id=8, transactional=True),
               FetchedBatch(5, 5, producer_id=7, transactional=True, abort_marker=True),
               FetchedBatch(6, 7, producer_id=7, transactional=True)]
    aborted = aborted_batch_ranges(fetched, [(7, 0)])
    assert aborted == [(0, 2)]
    partition = fresh()
    got = partition.acquire("m1", 0, [(b.first_offset, b.last_offset) for b in fetched], 0,
                            100, aborted=aborted)
    assert got == [AcquiredRecords(3, 7, 1)]
    assert partition.start_offset == 3
    assert states(partition)[3] == (ACQ, 1, "m1")


def test_stale_available_batches_before_the_fetched_data_are_archived() -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4), (5, 9)], 0, 100, batch_size=5)
    partition.acknowledge("m1", [AcknowledgementBatch(0, 4, (R,))], 0)
    # Compaction removed 0-4: the log now starts its data at 5.
    assert partition.acquire("m2", 0, [(5, 9)], 0, 100) == []
    assert partition.start_offset == 5  # 0-4 archived, the start offset past them
    assert partition.next_fetch_offset() == 10


def test_log_start_offset_moving_archives_available_records() -> None:
    partition = fresh()
    partition.acquire("m1", 0, [(0, 4)], 0, 100)
    partition.acknowledge("m1", [AcknowledgementBatch(0, 4, (R,))], 0)
    partition.update_log_start_offset(3)
    assert partition.start_offset == 3
    assert partition.next_fetch_offset() == 3
    partition.update_log_start_offset(10)
    assert partition.start_offset == partition.end_offset == partition.next_fetch_offset() == 10


def test_from_persisted_fills_gaps_as_available_and_skips_leading_done_batches() -> None:
    batches = [StateBatch(10, 12, ACK, 1), StateBatch(15, 16, AV, 2), StateBatch(18, 18, ARC, 5)]
    partition = SharePartition.from_persisted(SharePartitionConfig(), 3, 2, 10, batches)
    assert partition.start_offset == 13
    assert partition.end_offset == 18
    assert states(partition) == {13: (AV, 0, ""), 14: (AV, 0, ""), 15: (AV, 2, ""),
                                 16: (AV, 2, ""), 17: (AV, 0, ""), 18: (ARC, 5, "")}
    assert partition.next_fetch_offset() == 13
    with pytest.raises(ValueError):
        SharePartition.from_persisted(SharePartitionConfig(), 0, 0, 11, batches)


def test_a_partition_persisted_entirely_done_starts_after_it() -> None:
    partition = SharePartition.from_persisted(SharePartitionConfig(), 0, 0, 0,
                                              [StateBatch(0, 9, ACK, 1)])
    assert partition.start_offset == partition.end_offset == partition.next_fetch_offset() == 10


@pytest.mark.parametrize(("reset", "expected"), [
    ("latest", 90), ("earliest", 5), ("by_duration:PT1H", 42), ("by_duration:P1DT2M3.5S", 42),
])
def test_initial_start_offset(reset: str, expected: int) -> None:
    asked = []

    def offset_for(timestamp: int) -> int:
        asked.append(timestamp)
        return 42

    parsed = auto_offset_reset(reset)
    assert initial_start_offset(parsed.strategy, parsed.duration_ms, 5, 90, 10**8,
                                offset_for) == expected
    if parsed.duration_ms is not None:
        assert asked == [10**8 - parsed.duration_ms]


def test_by_duration_without_an_offset_at_that_time_starts_at_the_end() -> None:
    assert initial_start_offset("by_duration", 1000, 0, 7, 5000, lambda ts: None) == 7


def test_a_record_left_available_when_the_log_start_moved_into_its_batch_is_delivered_again(
        ) -> None:
    """Found by the state machine above: loaded with offsets 1-2 AVAILABLE, then the log
    start moved to 2 (offset 1 archived). The fetch from 2 returns the log's batch 0-2,
    which begins below every in-flight batch; offset 2 must still be acquired, or it stays
    AVAILABLE for ever and the group's lag never reaches 0."""
    partition = SharePartition.from_persisted(
        SharePartitionConfig(delivery_count_limit=2), 1, 0, 1,
        [StateBatch(1, 2, RecordState.AVAILABLE, 1)])
    partition.update_log_start_offset(2)
    assert partition.acquire("m1", 2, [(0, 2)], 0, 1) == [AcquiredRecords(2, 2, 2)]
