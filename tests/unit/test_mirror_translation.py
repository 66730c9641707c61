"""Exact offset translation from offset syncs, against a model of a mirrored partition:
upstream gaps (aborted data, markers, compaction), downstream gaps (the mirror's own
transaction markers), commits with position syncs, syncs re-emitted after a restart, a cap
on the history kept, and upstream rewinds. Also MM2's rules for emitting checkpoints and
syncing group offsets."""

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
def mirrored_partitions(draw: st.DrawFn) -> Mirrored:
    """Upstream offsets with gaps, copied in transactions (each ends with a marker when
    exactly-once), syncs written as the contract says: a sync wherever downstream minus
    upstream differs from the last sync's line, and a position sync at each commit."""
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
