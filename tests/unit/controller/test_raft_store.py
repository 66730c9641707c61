"""The controller's on-disk Raft state: entries, hard state and snapshots survive a reload;
conflicting suffixes are replaced; a torn or corrupt log tail is cut at the last whole frame;
snapshots compact the log and a corrupt one is refused."""

import logging
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.controller import raft_store
from odradek.controller.raft_store import (
    LOG_FILE,
    STATE_FILE,
    RaftLogStore,
    RaftStoreError,
    snapshot_file_name,
)
from odradek.raft.types import Entry, HardState, Snapshot


def entries(first: int, last: int, term: int = 1) -> list[Entry]:
    return [Entry(term, i, f"e{i}".encode()) for i in range(first, last + 1)]


def opened(directory: Path) -> RaftLogStore:
    store = RaftLogStore(directory)
    store.load()
    return store


def stored(directory: Path) -> list[Entry]:
    return RaftLogStore(directory).load().entries


def frame_size(entry: Entry) -> int:
    return 24 + len(entry.data)


def test_entries_and_hard_state_round_trip(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(HardState(3, 2, 4), entries(1, 5), sync=True)
    assert (store.first_index, store.last_index) == (1, 5)

    again = RaftLogStore(tmp_path)
    state = again.load()
    assert state.entries == entries(1, 5)
    assert state.hard_state == HardState(3, 2, 4)
    assert state.snapshot is None
    assert (again.first_index, again.last_index) == (1, 5)


def test_a_missing_directory_or_empty_files_are_a_fresh_node(tmp_path: Path) -> None:
    store = RaftLogStore(tmp_path / "a" / "b")
    state = store.load()
    assert (state.hard_state, state.snapshot, state.entries) == (HardState(), None, [])
    assert (tmp_path / "a" / "b").is_dir()
    assert (store.first_index, store.last_index) == (1, 0)

    (tmp_path / LOG_FILE).write_bytes(b"")
    (tmp_path / STATE_FILE).write_bytes(b"")
    state = RaftLogStore(tmp_path).load()
    assert (state.hard_state, state.snapshot, state.entries) == (HardState(), None, [])


def test_a_conflicting_suffix_replaces_the_stored_one(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 5), sync=True)
    store.save(None, entries(3, 4, term=2), sync=True)
    assert store.last_index == 4
    assert stored(tmp_path) == entries(1, 2) + entries(3, 4, term=2)

    store.save(None, entries(5, 6, term=2), sync=False)
    store.save(None, entries(2, 2, term=3), sync=True)
    assert store.last_index == 2
    assert stored(tmp_path) == entries(1, 1) + entries(2, 2, term=3)


def test_saving_after_a_reload_appends_and_truncates_in_the_recovered_file(
    tmp_path: Path,
) -> None:
    opened(tmp_path).save(HardState(1, 1, 0), entries(1, 4), sync=True)

    store = opened(tmp_path)
    store.save(None, entries(5, 6), sync=True)
    store.save(None, entries(4, 4, term=2), sync=True)
    store = opened(tmp_path)
    store.save(None, entries(5, 5, term=2), sync=True)

    state = RaftLogStore(tmp_path).load()
    assert state.entries == entries(1, 3) + entries(4, 5, term=2)
    assert state.hard_state == HardState(1, 1, 0)
    assert (tmp_path / LOG_FILE).stat().st_size == sum(map(frame_size, state.entries))


def test_gaps_are_refused_and_leave_the_log_alone(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 2), sync=True)
    with pytest.raises(ValueError, match="do not fit"):
        store.save(None, entries(4, 4), sync=True)
    with pytest.raises(ValueError, match="jump"):
        store.save(None, [Entry(1, 3, b""), Entry(1, 5, b"")], sync=True)
    with pytest.raises(ValueError, match="do not fit"):
        store.save(None, entries(0, 0), sync=True)

    assert store.last_index == 2
    assert stored(tmp_path) == entries(1, 2)


def test_entries_covered_by_the_snapshot_are_refused(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 4), sync=True)
    store.save_snapshot(Snapshot(3, 1, b"image"))
    with pytest.raises(ValueError, match="do not fit"):
        store.save(None, entries(3, 5), sync=True)


def test_writing_before_load_is_refused(tmp_path: Path) -> None:
    opened(tmp_path).save(None, entries(1, 2), sync=True)
    store = RaftLogStore(tmp_path)
    with pytest.raises(RuntimeError, match="load"):
        store.save(None, entries(1, 1), sync=True)
    with pytest.raises(RuntimeError, match="load"):
        store.save_snapshot(Snapshot(1, 1, b""))
    assert stored(tmp_path) == entries(1, 2)


def test_every_torn_last_frame_recovers_exactly_the_whole_frames(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    opened(tmp_path / "full").save(None, entries(1, 3), sync=True)
    data = (tmp_path / "full" / LOG_FILE).read_bytes()
    whole_two = frame_size(entries(1, 1)[0]) + frame_size(entries(2, 2)[0])
    assert len(data) == whole_two + frame_size(entries(3, 3)[0])
    for cut in range(whole_two + 1, len(data)):
        directory = tmp_path / f"cut{cut}"
        directory.mkdir()
        (directory / LOG_FILE).write_bytes(data[:cut])
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="odradek.controller.store"):
            store = RaftLogStore(directory)
            assert store.load().entries == entries(1, 2), cut
        assert f"at byte {whole_two}" in caplog.text
        assert (directory / LOG_FILE).stat().st_size == whole_two
        assert store.last_index == 2
        store.save(None, entries(3, 3, term=2), sync=True)
        assert stored(directory) == entries(1, 2) + entries(3, 3, term=2)


@settings(max_examples=60, deadline=None)
@given(
    datas=st.lists(st.binary(max_size=40), min_size=1, max_size=8),
    cut_fraction=st.floats(min_value=0, max_value=1),
)
def test_a_log_cut_anywhere_keeps_the_frames_before_the_cut(
    datas: list[bytes], cut_fraction: float
) -> None:
    written = [Entry(1 + i // 3, i + 1, data) for i, data in enumerate(datas)]
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        opened(directory).save(None, written, sync=False)
        data = (directory / LOG_FILE).read_bytes()
        cut = round(cut_fraction * len(data))
        (directory / LOG_FILE).write_bytes(data[:cut])

        ends = [sum(frame_size(e) for e in written[:n]) for n in range(1, len(written) + 1)]
        assert stored(directory) == [e for e, end in zip(written, ends, strict=True) if end <= cut]


def test_a_flipped_byte_anywhere_in_the_last_frame_truncates_it(tmp_path: Path) -> None:
    opened(tmp_path / "full").save(None, entries(1, 3), sync=True)
    data = (tmp_path / "full" / LOG_FILE).read_bytes()
    last_frame = len(data) - frame_size(entries(3, 3)[0])
    for position in range(last_frame, len(data)):
        directory = tmp_path / f"flip{position}"
        directory.mkdir()
        corrupt = bytearray(data)
        corrupt[position] ^= 0x10
        (directory / LOG_FILE).write_bytes(bytes(corrupt))
        assert stored(directory) == entries(1, 2), position
        assert (directory / LOG_FILE).stat().st_size == last_frame


def test_a_frame_that_does_not_follow_the_one_before_ends_the_log(tmp_path: Path) -> None:
    opened(tmp_path / "other").save(None, entries(1, 4), sync=True)
    other = (tmp_path / "other" / LOG_FILE).read_bytes()
    frames = [frame_size(e) for e in entries(1, 4)]
    index_3, index_4 = other[sum(frames[:2]):sum(frames[:3])], other[sum(frames[:3]):]
    cases = [
        ("gap", [Entry(1, 1, b"a"), Entry(1, 2, b"b")], index_4),
        ("older term", [Entry(2, 1, b"a"), Entry(2, 2, b"b")], index_3),
    ]
    for name, written, tail in cases:
        opened(tmp_path / name).save(None, written, sync=True)
        head = (tmp_path / name / LOG_FILE).read_bytes()
        (tmp_path / name / LOG_FILE).write_bytes(head + tail)
        assert stored(tmp_path / name) == written, name
        assert (tmp_path / name / LOG_FILE).read_bytes() == head, name


def test_a_snapshot_compacts_the_log_and_survives_reload(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(HardState(1, 1, 6), entries(1, 6), sync=True)
    snapshot = Snapshot(4, 1, b"image", frozenset({1, 2, 3}))
    store.save_snapshot(snapshot)
    assert (store.first_index, store.last_index) == (5, 6)
    assert (tmp_path / LOG_FILE).stat().st_size == sum(map(frame_size, entries(5, 6)))

    reloaded = RaftLogStore(tmp_path)
    state = reloaded.load()
    assert state.snapshot == snapshot
    assert state.entries == entries(5, 6)
    assert state.hard_state == HardState(1, 1, 6)
    assert (reloaded.first_index, reloaded.last_index) == (5, 6)
    assert [p.name for p in tmp_path.glob("*.checkpoint")] == [snapshot_file_name(snapshot)]

    store.save(None, entries(6, 7, term=2), sync=True)
    assert stored(tmp_path) == entries(5, 5) + entries(6, 7, term=2)


def test_a_newer_snapshot_replaces_the_older_one(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 6), sync=True)
    store.save_snapshot(Snapshot(2, 1, b"old", frozenset({1})))
    store.save_snapshot(Snapshot(6, 1, b"newer", frozenset({1, 2})))
    assert [p.name for p in tmp_path.glob("*.checkpoint")] == [
        "00000000000000000006-0000000001.checkpoint"
    ]
    state = RaftLogStore(tmp_path).load()
    assert state.snapshot == Snapshot(6, 1, b"newer", frozenset({1, 2}))
    assert state.entries == []

    store.save_snapshot(Snapshot(5, 1, b"stale"))
    assert RaftLogStore(tmp_path).load().snapshot == Snapshot(6, 1, b"newer", frozenset({1, 2}))


def test_installing_a_snapshot_past_the_log_end_empties_the_log(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 3), sync=True)
    store.save_snapshot(Snapshot(10, 2, b"leader's", frozenset({1})))
    assert (store.first_index, store.last_index) == (11, 10)
    assert (tmp_path / LOG_FILE).stat().st_size == 0
    assert stored(tmp_path) == []

    store.save(None, entries(11, 12, term=2), sync=True)
    state = RaftLogStore(tmp_path).load()
    assert state.snapshot is not None and state.snapshot.index == 10
    assert state.entries == entries(11, 12, term=2)


def test_installing_a_snapshot_whose_term_differs_discards_every_entry(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 3) + entries(4, 6, term=2), sync=True)
    store.save_snapshot(Snapshot(5, 3, b"other term"))
    assert (store.first_index, store.last_index) == (6, 5)
    state = RaftLogStore(tmp_path).load()
    assert state.entries == []
    assert state.snapshot == Snapshot(5, 3, b"other term")


def test_load_finishes_a_compaction_cut_short_by_a_crash(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save(None, entries(1, 6), sync=True)
    full_log = (tmp_path / LOG_FILE).read_bytes()
    store.save_snapshot(Snapshot(2, 1, b"old"))
    older = (tmp_path / snapshot_file_name(Snapshot(2, 1, b""))).read_bytes()
    store.save_snapshot(Snapshot(4, 1, b"new"))
    # The crash: the older snapshot not yet deleted, the log not yet rewritten, a tmp file left.
    (tmp_path / snapshot_file_name(Snapshot(2, 1, b""))).write_bytes(older)
    (tmp_path / LOG_FILE).write_bytes(full_log)
    (tmp_path / (snapshot_file_name(Snapshot(6, 1, b"")) + ".tmp")).write_bytes(b"partial")

    reloaded = RaftLogStore(tmp_path)
    state = reloaded.load()
    assert state.snapshot == Snapshot(4, 1, b"new")
    assert state.entries == entries(5, 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [LOG_FILE, snapshot_file_name(Snapshot(4, 1, b""))]
    )
    reloaded.save(None, entries(7, 7), sync=True)
    assert stored(tmp_path) == entries(5, 7)


def test_a_log_that_does_not_follow_its_snapshot_is_an_error(tmp_path: Path) -> None:
    store = opened(tmp_path / "gap")
    store.save(None, entries(1, 2), sync=True)
    store.save_snapshot(Snapshot(2, 1, b""))
    store.save(None, entries(3, 5), sync=True)
    snapshot_path = tmp_path / "gap" / snapshot_file_name(Snapshot(2, 1, b""))
    snapshot_path.unlink()
    with pytest.raises(RaftStoreError, match="gap"):
        RaftLogStore(tmp_path / "gap").load()


def test_a_corrupt_snapshot_is_a_clear_error(tmp_path: Path) -> None:
    store = opened(tmp_path)
    store.save_snapshot(Snapshot(2, 1, b"image", frozenset({1})))
    (path,) = tmp_path.glob("*.checkpoint")
    good = path.read_bytes()
    for position in (0, 5, len(good) - 1):
        corrupt = bytearray(good)
        corrupt[position] ^= 0x01
        path.write_bytes(bytes(corrupt))
        with pytest.raises(RaftStoreError, match="checksum"):
            RaftLogStore(tmp_path).load()
    path.write_bytes(good[:10])
    with pytest.raises(RaftStoreError, match="truncated"):
        RaftLogStore(tmp_path).load()
    path.rename(tmp_path / snapshot_file_name(Snapshot(3, 1, b"")))
    path = tmp_path / snapshot_file_name(Snapshot(3, 1, b""))
    path.write_bytes(good)
    with pytest.raises(RaftStoreError, match="name"):
        RaftLogStore(tmp_path).load()


def test_a_corrupt_quorum_state_is_a_clear_error(tmp_path: Path) -> None:
    opened(tmp_path).save(HardState(2, 1, 0), [], sync=True)
    (tmp_path / STATE_FILE).write_text('{"term": 2, "vote"')
    with pytest.raises(RaftStoreError, match="quorum-state"):
        RaftLogStore(tmp_path).load()
    (tmp_path / STATE_FILE).write_text('{"term": 2, "vote": 1, "commit": 0, "data_version": 9}')
    with pytest.raises(RaftStoreError, match="data_version 9"):
        RaftLogStore(tmp_path).load()


def test_the_hard_state_persists_and_an_unsynced_one_waits_for_the_next_sync(
    tmp_path: Path,
) -> None:
    store = opened(tmp_path)
    store.save(HardState(2, 3, 0), entries(1, 2), sync=True)
    assert RaftLogStore(tmp_path).load().hard_state == HardState(2, 3, 0)

    store.save(HardState(2, 3, 2), [], sync=False)
    assert RaftLogStore(tmp_path).load().hard_state == HardState(2, 3, 0)
    store.save(None, entries(3, 3), sync=True)
    assert RaftLogStore(tmp_path).load().hard_state == HardState(2, 3, 2)

    store.save(HardState(4, -1, 2), [], sync=True)
    assert RaftLogStore(tmp_path).load().hard_state == HardState(4, -1, 2)


def test_sync_fsyncs_the_written_files_and_the_directory_of_a_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(raft_store.os, "fsync", recording_fsync)
    directory = str(tmp_path.resolve())
    log_file, state_tmp = f"{directory}/{LOG_FILE}", f"{directory}/{STATE_FILE}.tmp"
    store = opened(tmp_path)
    store.save(HardState(1, 1, 0), entries(1, 1), sync=True)
    assert synced == [log_file, directory, state_tmp, directory]

    synced.clear()
    store.save(HardState(1, 1, 1), entries(2, 2), sync=False)
    assert synced == []
    store.save(None, entries(3, 3), sync=True)
    assert synced == [log_file, state_tmp, directory]
