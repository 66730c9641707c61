"""Exact offset translation from offset syncs, against a model of a mirrored partition:
upstream gaps (aborted data, markers, compaction), downstream gaps (the mirror's own
transaction markers), commits with position syncs, syncs re-emitted after a restart, a cap
on the history kept, upstream rewinds, and a compacted syncs topic (MM2's answers where
syncs are missing). Also MM2's rules for emitting checkpoints and syncing group offsets."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.mirror.formats import Checkpoint, OffsetSync
from odradek.mirror.translation import (
    GroupOffset,
    OffsetTranslator,
    checkpoints_for_group,
    offsets_to_sync,
)


def translator(*syncs: tuple[int, int], max_syncs: int = 1000) -> OffsetTranslator:
    result = OffsetTranslator(max_syncs)
    result.add_all(OffsetSync("orders", 0, u, d) for u, d in syncs)
    return result


def test_stretch_is_one_to_one() -> None:
    t = translator((0, 0), (10, 10))
    assert [t.translate("orders", 0, c) for c in (0, 5, 10)] == [0, 5, 10]


def test_upstream_gap_is_capped_at_the_next_sync() -> None:
    # records 0..4 at 0..4; upstream 5..7 aborted; record 8 at 5
    t = translator((0, 0), (8, 5), (9, 6))
    assert t.translate("orders", 0, 4) == 4
    assert t.translate("orders", 0, 6) == 5
    assert t.translate("orders", 0, 8) == 5


def test_downstream_gap() -> None:
    # records 0..4 at 0..4, a commit marker at 5, record 5 at 6
    t = translator((0, 0), (5, 5), (5, 6), (7, 8))
    assert t.translate("orders", 0, 5) == 6
    assert t.translate("orders", 0, 6) == 7


def test_same_upstream_offset_keeps_the_larger_downstream() -> None:
    # the position sync (5, 5) re-emitted after the stretch sync (5, 6) must not win
    t = translator((0, 0), (5, 6), (5, 5), (9, 10))
    assert t.translate("orders", 0, 7) == 8


def test_ahead_of_the_mirror_or_before_history_is_not_translated() -> None:
    t = translator((3, 0), (10, 7))
    assert t.translate("orders", 0, 11) is None
    assert t.translate("orders", 0, 2) is None
    assert t.translate("orders", 1, 5) is None
    assert t.translate("payments", 0, 5) is None


def test_upstream_rewind_forgets_the_old_history() -> None:
    t = translator((0, 0), (100, 100), (0, 150))
    assert t.syncs("orders", 0) == [(0, 150)]
    assert t.translate("orders", 0, 0) == 150
    assert t.translate("orders", 0, 50) is None


def test_cap_drops_the_oldest() -> None:
    t = translator((0, 0), (5, 6), (9, 11), max_syncs=2)
    assert t.syncs("orders", 0) == [(5, 6), (9, 11)]
    assert t.translate("orders", 0, 3) is None
    assert t.translate("orders", 0, 7) == 8


@dataclass
class Mirrored:
    """A partition copied by a model mirror: where each record landed, the syncs it wrote
    in order, and its final position."""
    landed: dict[int, int]
    syncs: list[tuple[int, int]]
    position: tuple[int, int]


@st.composite
def mirrored_partitions(draw: st.DrawFn, exactly_once: bool | None = None) -> Mirrored:
    """Upstream offsets with gaps, copied in transactions (each ends with a marker when
    exactly-once), syncs written as the contract says: a sync wherever downstream minus
    upstream differs from the last sync's line, and a position sync at each commit."""
    if exactly_once is None:
        exactly_once = draw(st.booleans())
    present = draw(st.lists(st.booleans(), min_size=1, max_size=60).filter(any))
    upstream = [u for u, kept in enumerate(present) if kept]
    end = len(present)
    landed: dict[int, int] = {}
    syncs: list[tuple[int, int]] = []
    shift: int | None = None
    downstream = draw(st.integers(0, 5))
    at = last = 0
    position = (0, 0)
    while at < len(upstream):
        size = draw(st.integers(1, 8))
        for u in upstream[at:at + size]:
            last = u
            if downstream - u != shift:
                shift = downstream - u
                syncs.append((u, downstream))
            landed[u] = downstream
            downstream += 1
        at += size
        next_upstream = upstream[at] if at < len(upstream) else end
        position = (draw(st.integers(last + 1, next_upstream)), downstream)
        syncs.append(position)
        shift = position[1] - position[0]
        if exactly_once:
            downstream += 1  # the commit marker
        downstream += draw(st.integers(0, 2))  # foreign writes on the target
    return Mirrored(landed, syncs, position)


def assert_exact(mirrored: Mirrored, t: OffsetTranslator, may_decline: bool) -> None:
    """Every committed offset C up to the position translates to D with every record
    before C below D and every record from C on at D or above: 0 missing, 0 duplicates."""
    first = mirrored.syncs[0][0]
    for committed in range(first, mirrored.position[0] + 1):
        result = t.translate("orders", 0, committed)
        if result is None and may_decline:
            continue
        assert result is not None, committed
        before = [d for u, d in mirrored.landed.items() if u < committed]
        after = [d for u, d in mirrored.landed.items() if u >= committed]
        assert all(d < result for d in before), (committed, result)
        assert all(d >= result for d in after), (committed, result)
    assert t.translate("orders", 0, mirrored.position[0] + 1) is None


@settings(max_examples=300, deadline=None)
@given(mirrored_partitions())
def test_translation_is_exact(mirrored: Mirrored) -> None:
    assert_exact(mirrored, translator(*mirrored.syncs), may_decline=False)


@settings(max_examples=200, deadline=None)
@given(mirrored_partitions(), st.data())
def test_re_emitted_syncs_change_nothing(mirrored: Mirrored, data: st.DataObject) -> None:
    t = translator(*mirrored.syncs)
    t.add_all(OffsetSync("orders", 0, u, d)
              for u, d in data.draw(st.lists(st.sampled_from(mirrored.syncs), max_size=10)))
    assert_exact(mirrored, t, may_decline=False)


@settings(max_examples=200, deadline=None)
@given(mirrored_partitions(), st.integers(2, 6))
def test_a_capped_history_declines_but_never_errs(mirrored: Mirrored, cap: int) -> None:
    assert_exact(mirrored, translator(*mirrored.syncs, max_syncs=cap), may_decline=True)


def test_a_gap_in_the_syncs_topic_gives_mm2s_answer_up_to_the_next_sync() -> None:
    t = OffsetTranslator()
    for offset, (u, d) in [(0, (0, 0)), (5, (10, 12)), (6, (20, 23))]:
        t.advance(offset)
        t.add(OffsetSync("orders", 0, u, d))
    assert [t.translate("orders", 0, c) for c in (0, 4, 10, 15)] == [0, 1, 12, 17]
    at_least_once = OffsetTranslator(markers=False)
    for offset, (u, d) in [(0, (0, 0)), (5, (10, 12))]:
        at_least_once.advance(offset)
        at_least_once.add(OffsetSync("orders", 0, u, d))
    assert at_least_once.translate("orders", 0, 4) == 0


def compacted_read(log: list[tuple[int, tuple[int, int]]], cleaned_to: int,
                   read_first: int) -> list[int]:
    """The offsets of `log` (partition, sync) a reader gets when the cleaner compacts the
    log up to `cleaned_to` (keeping, per partition, its latest record before that point)
    after the reader has read the first `read_first` records."""
    latest = {partition: offset for offset, (partition, _) in enumerate(log[:cleaned_to])}
    return [offset for offset, (partition, _) in enumerate(log)
            if offset < read_first or offset >= cleaned_to or latest[partition] == offset]


def mm2_answer(kept: list[tuple[int, int]], committed: int, past: int) -> int | None:
    """MM2's OffsetSyncStore.translateDownstream with every sync kept: the last sync at or
    before the commit, plus `past` (MM2's 1; 0 for at-least-once position syncs, whose
    downstream offset may be the next record's); none before the first."""
    before = [(u, d) for u, d in kept if u <= committed]
    if not before:
        return None
    u, d = max(before)
    return d + (0 if u == committed else past)


@settings(max_examples=300, deadline=None)
@given(st.booleans(), st.data())
def test_a_compacted_syncs_topic_translates_old_commits_as_mm2(
        exactly_once: bool, data: st.DataObject) -> None:
    partitions = data.draw(st.lists(mirrored_partitions(exactly_once), min_size=1,
                                    max_size=3))
    # the syncs topic: every partition's syncs in the order written, interleaved
    pending = [list(m.syncs) for m in partitions]
    log: list[tuple[int, tuple[int, int]]] = []
    while any(pending):
        p = data.draw(st.sampled_from([p for p, syncs in enumerate(pending) if syncs]))
        log.append((p, pending[p].pop(0)))
    read = compacted_read(log, data.draw(st.integers(0, len(log))),
                          data.draw(st.integers(0, len(log))))
    t = OffsetTranslator(markers=exactly_once)
    for offset in read:
        p, (u, d) = log[offset]
        t.advance(offset)
        t.add(OffsetSync("orders", p, u, d))
    holes = read != list(range(read[0], len(log)))
    for p, mirrored in enumerate(partitions):
        received = [log[offset][1] for offset in read if log[offset][0] == p]
        first, last = received[0][0], max(u for u, _ in received)
        for committed in range(mirrored.position[0] + 2):
            result = t.translate("orders", p, committed)
            if committed < first or committed > last:
                assert result is None, (p, committed, result)  # MM2: -1, no checkpoint
                continue
            assert result is not None
            expected = mm2_answer(received, committed, 1 if exactly_once else 0)
            assert expected is not None and result >= expected, (committed, result, expected)
            assert all(d >= result for u, d in mirrored.landed.items() if u >= committed), (
                f"{committed} -> {result} skips a record")
            if not holes:  # the history read is a suffix of what was written: exact
                assert all(d < result for u, d in mirrored.landed.items() if u < committed)


def test_checkpoints_follow_mm2s_emission_rules() -> None:
    t = translator((0, 0), (10, 12))
    rename = {"orders": "east.orders"}
    offsets = {("orders", 0): GroupOffset(4, "m"), ("other", 0): GroupOffset(1)}
    first = checkpoints_for_group("g", offsets, t, rename, {})
    assert first == [Checkpoint("g", "east.orders", 0, 4, 4, "m")]
    last = {("east.orders", 0): first[0]}
    assert checkpoints_for_group("g", offsets, t, rename, last) == []  # repeated
    ahead = {("orders", 0): GroupOffset(10)}
    assert checkpoints_for_group("g", ahead, t, rename, last)[0].downstream == 12
    rewind = {("orders", 0): GroupOffset(2)}
    assert checkpoints_for_group("g", rewind, t, rename, last)[0].downstream == 2
    beyond = {("orders", 0): GroupOffset(11)}
    assert checkpoints_for_group("g", beyond, t, rename, last) == []


@pytest.mark.parametrize(("target", "expected"), [
    (None, {("east.orders", 0): 7, ("east.orders", 1): 3}),
    ({}, {("east.orders", 0): 7, ("east.orders", 1): 3}),
    ({("east.orders", 0): 9, ("east.orders", 1): 2}, {("east.orders", 1): 3}),
])
def test_group_offsets_never_move_backwards(
        target: dict[tuple[str, int], int] | None, expected: dict[tuple[str, int], int]) -> None:
    checkpoints = [Checkpoint("g", "east.orders", 0, 7, 7), Checkpoint("g", "east.orders", 1, 3, 3)]
    result = offsets_to_sync(checkpoints, target)
    assert {key: value.offset for key, value in result.items()} == expected
