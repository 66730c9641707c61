"""The in-memory log and the leader's per-follower progress."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek.raft import Entry, Snapshot
from odradek.raft.log import RaftLog
from odradek.raft.progress import Progress, ProgressState


def log_of(*terms: int, offset: int = 0, offset_term: int = 0) -> RaftLog:
    return RaftLog(offset, offset_term,
                   [Entry(t, offset + 1 + i, b"") for i, t in enumerate(terms)])


def test_terms_are_known_from_the_offset_to_the_end() -> None:
    log = log_of(2, 3, offset=5, offset_term=2)
    assert [log.term_at(i) for i in range(4, 9)] == [None, 2, 2, 3, None]
    assert (log.first_index, log.last_index, log.last_term) == (6, 7, 3)
    assert log_of().last_term == 0 and log_of().term_at(0) == 0


def test_slices_clip_to_the_log() -> None:
    log = log_of(1, 1, 2, offset=2, offset_term=1)
    assert [e.index for e in log.slice(4, 5)] == [4, 5]
    assert [e.index for e in log.slice(1, 9)] == [3, 4, 5]
    assert log.slice(6, 9) == []


def test_up_to_date_compares_last_term_then_length() -> None:
    log = log_of(1, 2, 2)
    assert log.is_up_to_date(3, 1)
    assert log.is_up_to_date(2, 3)
    assert not log.is_up_to_date(2, 2)
    assert not log.is_up_to_date(1, 9)


def test_truncate_compact_and_restore() -> None:
    log = log_of(1, 1, 2, 2)
    log.truncate_after(3)
    assert log.last_index == 3
    log.compact(2, 1)
    assert (log.offset, log.offset_term, [e.index for e in log.entries]) == (2, 1, [3])
    log.restore(Snapshot(9, 4, b""))
    assert (log.first_index, log.last_index, log.last_term) == (10, 9, 4)


@given(
    st.lists(st.integers(0, 3), max_size=30).map(lambda steps: _running(steps)),
    st.integers(0, 40),
    st.integers(0, 12),
)
def test_find_conflict_by_term_is_the_last_index_at_or_below_with_term_at_most(
    terms: list[int], index: int, term: int
) -> None:
    log = log_of(*terms)
    expected = max((i for i in range(0, min(index, log.last_index) + 1)
                    if (log.term_at(i) or 0) <= term), default=0)
    assert log.find_conflict_by_term(index, term) == expected


def _running(steps: list[int]) -> list[int]:
    """Non-decreasing terms, as in any Raft log."""
    terms, term = [], 1
    for step in steps:
        term += step
        terms.append(term)
    return terms


def test_progress_rejections_that_are_stale_are_ignored() -> None:
    pr = Progress(match=5, next=9, state=ProgressState.REPLICATE)
    assert not pr.rejected(5, 2)
    assert pr.rejected(8, 6)
    assert (pr.state, pr.next) == (ProgressState.PROBE, 7)
    assert not pr.rejected(8, 6), "a probe only answers for next - 1"
    assert pr.rejected(6, 2)
    assert pr.next == 6, "never below match + 1"


def test_progress_pipelines_and_frees_on_acknowledgement() -> None:
    pr = Progress(match=1, next=2)
    pr.become_replicate()
    for last in (3, 5, 7):
        assert not pr.paused(3)
        pr.sent(last)
    assert pr.paused(3) and pr.next == 8
    assert pr.acknowledged(5) and not pr.paused(3)
    assert list(pr.inflight) == [7]
    assert not pr.acknowledged(4)


def test_a_probe_waits_for_an_answer() -> None:
    pr = Progress(match=0, next=1)
    assert not pr.paused(8)
    pr.sent(4)
    assert pr.paused(8) and pr.next == 1
