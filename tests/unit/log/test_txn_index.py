"""The aborted-transaction index file and transaction markers."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.log.txn_index import (
    AbortedTxn,
    CorruptIndexError,
    TransactionIndex,
    collect_aborted_transactions,
)
from odradek.protocol.control import ControlType, build_marker_batch, read_marker
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import InvalidRecordsError, validate_batches


def test_entries_are_kafkas_34_bytes_and_the_file_appears_on_the_first(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path)
    assert index.entries() == [] and not path.exists()
    index.append(AbortedTxn(7, 10, 20, 15))
    assert path.read_bytes() == (b"\x00\x00" + (7).to_bytes(8, "big") + (10).to_bytes(8, "big")
                                 + (20).to_bytes(8, "big") + (15).to_bytes(8, "big"))
    with pytest.raises(ValueError, match="appended after"):
        index.append(AbortedTxn(8, 11, 20, 15))
    assert TransactionIndex(path).entries() == [AbortedTxn(7, 10, 20, 15)]


def test_truncation_and_corruption(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "x.txnindex")
    for last in (5, 9, 14):
        index.append(AbortedTxn(1, last - 2, last, last))
    index.truncate_to(9)
    assert [e.last_offset for e in TransactionIndex(index.path).entries()] == [5]
    index.path.write_bytes(b"\x00" * 33)
    with pytest.raises(CorruptIndexError):
        TransactionIndex(index.path).entries()
    damaged = TransactionIndex(index.path)
    assert damaged.discard_if_corrupt() and not index.path.exists()


spans = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=12)


@given(spans, st.integers(0, 80), st.integers(0, 80), st.integers(1, 4))
def test_collect_matches_a_brute_force_filter(spans: list[tuple[int, int]], fetch: int,
                                              upper: int, segments: int) -> None:
    directory = Path(tempfile.mkdtemp())
    entries, last = [], -1
    for start, length in spans:
        first = max(start, last + 1)
        last = first + length
        entries.append(AbortedTxn(len(entries), first, last, last + 1))
    indexes = [TransactionIndex(directory / f"{i}.txnindex") for i in range(segments)]
    for i, entry in enumerate(entries):
        indexes[min(i * segments // max(len(entries), 1), segments - 1)].append(entry)
    expected = [e for e in entries if e.last_offset >= fetch and e.first_offset < upper]
    found = collect_aborted_transactions(indexes, fetch, upper)
    assert found == expected[:len(found)] and set(found) >= {
        e for e in expected if e.last_stable_offset <= upper}


def test_markers_round_trip_and_other_batches_are_not_markers() -> None:
    batch = build_marker_batch(7, 3, 12, commit=False, timestamp_ms=5)
    (info,) = validate_batches(batch, len(batch), from_client=False)
    assert info.is_control and info.is_transactional and info.producer_id == 7
    assert read_marker(batch) == (ControlType.ABORT, 12)
    with pytest.raises(InvalidRecordsError):
        read_marker(build_batch([(b"\x00\x00\x00\x05", b"")]))
