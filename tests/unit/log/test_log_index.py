"""The sparse index files and the checkpoint files, on their own."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from odradek.log.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from odradek.log.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_is_a_floor_search(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    for offset, position in ((109, 4100), (121, 8300), (140, 12500)):
        index.add(offset, position)
    assert index.lookup(100) == 0
    assert index.lookup(108) == 0
    assert index.lookup(109) == 4100
    assert index.lookup(120) == 4100
    assert index.lookup(121) == 8300
    assert index.lookup(10**12) == 12500
    assert index.last_offset == 140
    assert index.last_position == 12500


def test_offset_index_file_holds_relative_offsets_and_positions(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100)
    index.add(109, 4100)
    index.add(121, 8300)
    index.write_pending()
    index.close()
    assert path.read_bytes() == struct.pack(">iiii", 9, 4100, 21, 8300)
    loaded = OffsetIndex.load(path, 100, log_size=9000)
    assert loaded is not None
    assert len(loaded) == 2
    assert loaded.lookup(125) == 8300


@pytest.mark.parametrize(
    "content",
    [
        struct.pack(">ii", 9, 4100) + b"\x00\x01",  # torn entry
        struct.pack(">iiii", 21, 4100, 9, 8300),  # offsets out of order
        struct.pack(">iiii", 9, 8300, 21, 4100),  # positions out of order
        struct.pack(">ii", 9, 20000),  # position past the end of the log
        struct.pack(">ii", -1, 0),  # offset below the base offset
    ],
)
def test_corrupt_offset_index_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(content)
    assert OffsetIndex.load(path, 100, log_size=9000) is None


def test_missing_index_is_refused(tmp_path: Path) -> None:
    assert OffsetIndex.load(tmp_path / "00000000000000000000.index", 0, 0) is None
    assert TimeIndex.load(tmp_path / "00000000000000000000.timeindex", 0) is None


def test_offset_index_truncation_rewrites_the_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    for i in range(1, 5):
        index.add(i * 10, i * 1000)
    index.write_pending()
    index.truncate_to_position(3000)
    assert path.read_bytes() == struct.pack(">iiii", 10, 1000, 20, 2000)
    assert index.lookup(35) == 2000


def test_offset_index_is_full_by_segment_index_bytes(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0)
    index.add(1, 100)
    assert not index.is_full(20)  # room for 2 entries of 8 bytes
    index.add(2, 200)
    assert index.is_full(20)


def test_time_index_keeps_only_growing_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000050.timeindex"
    index = TimeIndex(path, 50)
    index.maybe_add(1000, 55)
    index.maybe_add(1000, 60)  # not larger: skipped
    index.maybe_add(900, 61)  # smaller: skipped
    index.maybe_add(2000, 70)
    index.write_pending()
    index.close()
    assert path.read_bytes() == struct.pack(">qiqi", 1000, 5, 2000, 20)
    assert index.lookup(999) == (-1, 50)
    assert index.lookup(1000) == (1000, 55)
    assert index.lookup(1999) == (1000, 55)
    assert index.lookup(5000) == (2000, 70)
    assert index.last_entry() == (2000, 70)
    loaded = TimeIndex.load(path, 50)
    assert loaded is not None and loaded.last_entry() == (2000, 70)


@pytest.mark.parametrize(
    "content",
    [
        struct.pack(">qi", 1000, 5) + b"\x00" * 5,
        struct.pack(">qiqi", 2000, 5, 1000, 20),
        struct.pack(">qiqi", 1000, 20, 2000, 5),
    ],
)
def test_corrupt_time_index_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "00000000000000000050.timeindex"
    path.write_bytes(content)
    assert TimeIndex.load(path, 50) is None


def test_time_index_truncation(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(path, 0)
    for i in range(1, 5):
        index.maybe_add(i * 100, i * 10)
    index.truncate_to_offset(30)
    assert path.read_bytes() == struct.pack(">qiqi", 100, 10, 200, 20)
    assert index.last_entry() == (200, 20)


def test_checkpoint_file_is_kafka_text_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_checkpoint(path, {("orders", 1): 1432, ("my.topic-x", 0): 7, ("orders", 0): 1500})
    assert path.read_text() == "0\n3\nmy.topic-x 0 7\norders 0 1500\norders 1 1432\n"
    assert read_checkpoint(path) == {("orders", 1): 1432, ("my.topic-x", 0): 7, ("orders", 0): 1500}
    assert [p.name for p in tmp_path.iterdir()] == ["recovery-point-offset-checkpoint"]


def test_checkpoint_reads_a_file_written_by_kafka(tmp_path: Path) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text("0\n2\n__consumer_offsets 13 0\nclicks 2 4711\n")
    assert read_checkpoint(path) == {("__consumer_offsets", 13): 0, ("clicks", 2): 4711}


def test_missing_checkpoint_is_empty(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {}


@pytest.mark.parametrize(
    "text",
    ["", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt zero 1\n", "0\n1\nt 0 1 9\n", "0\nx\n"],
)
def test_malformed_checkpoint_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_checkpoint(path)
