"""Reopening logs: clean restarts, crash recovery, index rebuilds, and the LogManager."""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest

from odradek.config.kafka_configs import BrokerConfig, effective_topic_config
from odradek.log import LogConfig, LogManager, OffsetOutOfRangeError, PartitionLog
from odradek.log import segment as segment_module
from odradek.log.manager import CLEAN_SHUTDOWN_FILE, parse_log_dir_name
from odradek.log.storage_failure import KafkaStorageError
from odradek.protocol.record_codec import build_batch, decode_records
from odradek.protocol.records import iter_batches, validate_batches

DEFAULTS: dict[str, object] = {
    **effective_topic_config(BrokerConfig({}), {}),
    "segment.bytes": 1_000,
    "index.interval.bytes": 200,
}
CONFIG = LogConfig.from_topic_config(DEFAULTS)


def append(log: PartitionLog, values: Sequence[bytes], timestamp_ms: int = 1_000) -> None:
    blob = bytearray(build_batch([(None, value) for value in values], timestamp_ms=timestamp_ms))
    log.append(blob, validate_batches(blob, 1 << 20), timestamp_ms)


def read_values(log: PartitionLog) -> list[bytes | None]:
    offset, values = log.log_start_offset, []
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        for batch in iter_batches(data):
            values += [r.value for r in decode_records(data[batch.position : batch.end])]
            offset = batch.next_offset
    return values


def fill(log: PartitionLog, batches: int = 40, first: int = 0) -> list[bytes]:
    values: list[bytes] = []
    for i in range(first, first + batches):
        batch = [b"value-%d-%d" % (i, j) for j in range(3)]
        append(log, batch, timestamp_ms=1_000 + i)
        values += batch
    return values


def filled_log(tmp_path: Path) -> tuple[PartitionLog, list[bytes]]:
    log = PartitionLog.open(tmp_path / "orders-0", CONFIG, 0)
    return log, fill(log)


def reopen(log: PartitionLog, recovery_point: int = 0, **kwargs: int) -> PartitionLog:
    log.close()
    return PartitionLog.open(log.directory, CONFIG, 0, recovery_point=recovery_point, **kwargs)


def state(log: PartitionLog) -> object:
    return (
        log.log_start_offset,
        log.log_end_offset,
        [
            (s.base_offset, s.size, s.next_offset, s.max_timestamp, s.offset_of_max_timestamp)
            for s in log.segments
        ],
        read_values(log),
        [log.offset_for_timestamp(ts) for ts in (0, 1_010, 1_025, 1_039, 1_040)],
        log.max_timestamp_offset(),
    )


def files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def last_log_file(log: PartitionLog) -> Path:
    return log.active_segment.log_path


# -- clean reopen ------------------------------------------------------------------------


@pytest.mark.parametrize("full_rescan", [False, True])
def test_reopen_gives_identical_state(tmp_path: Path, full_rescan: bool) -> None:
    log, values = filled_log(tmp_path)
    before = state(log)
    assert len(log.segments) >= 5
    leo = log.log_end_offset
    log.close()
    on_disk = files(log.directory)
    reopened = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=0 if full_rescan else leo)
    assert state(reopened) == before
    assert reopened.recovery_point == (0 if full_rescan else leo)
    reopened.close()
    assert files(log.directory) == on_disk
    assert read_values(reopen(reopened, leo)) == values


def test_appends_continue_after_reopen(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    log = reopen(log, log.log_end_offset)
    values += fill(log, 10, first=40)
    assert read_values(reopen(log)) == values


def test_empty_segment_left_by_a_roll_survives(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    log.roll(0)
    leo = log.log_end_offset
    log = reopen(log)
    assert log.active_segment.base_offset == leo == log.log_end_offset
    assert read_values(log) == values


# -- crash recovery ----------------------------------------------------------------------


def torn_tail(path: Path, next_offset: int) -> None:
    batch = build_batch([(None, b"never acknowledged")] * 4, base_offset=next_offset)
    with open(path, "ab") as out:
        out.write(batch[: len(batch) // 2])


def garbage_tail(path: Path, next_offset: int) -> None:
    with open(path, "ab") as out:
        out.write(b"\x00\x00\x00\x00" + bytes(range(256)) * 3)


def zeroed_tail(path: Path, next_offset: int) -> None:
    with open(path, "ab") as out:
        out.write(bytes(4096))


@pytest.mark.parametrize("damage", [torn_tail, garbage_tail, zeroed_tail])
@pytest.mark.parametrize("recovery_point", [0, 60])
def test_a_damaged_tail_is_truncated(tmp_path: Path, damage: object, recovery_point: int) -> None:
    log, values = filled_log(tmp_path)
    path = last_log_file(log)
    size = path.stat().st_size
    leo = log.log_end_offset
    log.close()
    damage(path, leo)  # type: ignore[operator]
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=recovery_point)
    assert path.stat().st_size == size
    assert log.log_end_offset == leo
    assert read_values(log) == values
    values += fill(log, 5, first=40)
    assert read_values(reopen(log)) == values


def test_a_flipped_byte_in_the_last_batch_drops_that_batch(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    path = last_log_file(log)
    leo = log.log_end_offset
    log.close()
    data = bytearray(path.read_bytes())
    last_batch = list(iter_batches(data))[-1]
    data[last_batch.end - 2] ^= 0x40
    path.write_bytes(data)
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=leo - 20)
    assert log.log_end_offset == leo - 3
    assert path.stat().st_size == last_batch.position
    assert read_values(log) == values[:-3]
    append(log, [b"after"])
    assert read_values(reopen(log)) == [*values[:-3], b"after"]


def test_corruption_in_an_older_segment_truncates_there_and_drops_later_segments(
    tmp_path: Path,
) -> None:
    log, values = filled_log(tmp_path)
    victim = log.segments[2]
    later = [path for s in log.segments[3:] for path in s.paths()]
    log.close()
    data = bytearray(victim.log_path.read_bytes())
    batches = list(iter_batches(data))
    data[batches[1].end - 1] ^= 0xFF
    victim.log_path.write_bytes(data)
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=0)
    assert log.log_end_offset == batches[1].base_offset
    assert log.active_segment.base_offset == victim.base_offset
    assert not any(path.exists() for path in later)
    assert read_values(log) == values[: batches[1].base_offset]


@pytest.mark.parametrize("chunk_bytes", [70, segment_module.RECOVERY_CHUNK_BYTES])
@pytest.mark.parametrize("victim", [0, 3])
def test_a_batch_with_an_offset_going_backwards_is_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int, victim: int
) -> None:
    # baseOffset lies outside the CRC: recovery must check offsets itself.
    log, values = filled_log(tmp_path)
    active = log.active_segment
    log.close()
    data = bytearray(active.log_path.read_bytes())
    batch = list(iter_batches(data))[victim]
    struct.pack_into(">q", data, batch.position, active.base_offset - 1)
    active.log_path.write_bytes(data)
    monkeypatch.setattr(segment_module, "RECOVERY_CHUNK_BYTES", chunk_bytes)
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=0)
    assert log.log_end_offset == batch.base_offset
    assert read_values(log) == values[: batch.base_offset]


def test_data_below_the_recovery_point_is_not_rescanned(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    first = log.segments[0].log_path
    leo = log.log_end_offset
    log.close()
    data = bytearray(first.read_bytes())
    data[-2] ^= 0x01  # a value byte: only a CRC check would notice
    first.write_bytes(data)
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=leo)
    assert log.log_end_offset == leo
    assert len(read_values(log)) == len(values)


def test_recovery_reads_batches_cut_by_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = PartitionLog.open(tmp_path / "orders-0", CONFIG, 0)
    values: list[bytes] = []
    for i in range(30):
        batch = [b"v" * (i * 13 % 200), b"%d" % i]
        append(log, batch)
        values += batch
    leo = log.log_end_offset
    log.close()
    garbage_tail(log.active_segment.log_path, leo)
    monkeypatch.setattr(segment_module, "RECOVERY_CHUNK_BYTES", 70)
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=0)
    assert log.log_end_offset == leo
    assert read_values(log) == values


def test_deleted_index_files_are_rebuilt(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    leo = log.log_end_offset
    log.close()
    on_disk = files(log.directory)
    for path in [*log.directory.glob("*.index"), *log.directory.glob("*.timeindex")]:
        path.unlink()
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=leo)
    assert read_values(log) == values
    log.close()
    assert files(log.directory) == on_disk


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_corrupt_index_files_are_rebuilt(tmp_path: Path, suffix: str) -> None:
    log, values = filled_log(tmp_path)
    leo = log.log_end_offset
    log.close()
    on_disk = files(log.directory)
    for path in log.directory.glob("*" + suffix):
        with open(path, "ab") as out:
            out.write(b"\x01\x02\x03")
    log = PartitionLog.open(log.directory, CONFIG, 0, recovery_point=leo)
    assert read_values(log) == values
    log.close()
    assert files(log.directory) == on_disk


def test_leftover_and_orphan_files_are_removed(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    directory = log.directory
    log.close()
    leftovers = [
        "00000000000000000000.log.deleted",
        "00000000000000000007.index.deleted",
        "00000000000000000003.log.cleaned",
        "00000000000000000003.log.swap",
        "00000000000000999999.index",
        "00000000000000999999.timeindex",
    ]
    for name in leftovers:
        (directory / name).write_bytes(b"junk")
    (directory / "partition.metadata").write_text("version: 0\n")
    log = PartitionLog.open(directory, CONFIG, 0, recovery_point=0)
    assert not any((directory / name).exists() for name in leftovers)
    assert (directory / "partition.metadata").exists()
    assert read_values(log) == values


def test_recovery_restores_epochs_a_stale_checkpoint_lacks(tmp_path: Path) -> None:
    """The checkpoint lagged the log in the hour-long campaign (its write hit a full disk).
    The restarted leader answered its followers that epoch 21 ended at its log end, so they
    cut their epoch-22 batches and fetched them again, for 40 minutes. Recovery assigns the
    epochs of the batches it rescans, as Kafka's does."""
    log = PartitionLog.open(tmp_path / "orders-0", CONFIG, 0)
    for epoch in (21, 22):
        blob = bytearray(build_batch([(None, b"in epoch %d" % epoch)], timestamp_ms=1_000))
        log.append(blob, validate_batches(blob, 1 << 20), 1_000, leader_epoch=epoch)
    checkpoint = log.leader_epochs.path
    assert checkpoint is not None
    log.close()
    checkpoint.write_text("0\n1\n21 0\n")
    assert reopen(log, recovery_point=2).leader_epochs.end_offset_for(21, 2) == (21, 2), \
        "data below the recovery point is not rescanned"
    recovered = reopen(log, recovery_point=0)
    assert [(e.epoch, e.start_offset) for e in recovered.leader_epochs.entries] == [
        (21, 0), (22, 1)]
    assert recovered.leader_epochs.end_offset_for(21, 2) == (21, 1)
    assert checkpoint.read_text().splitlines()[-1] == "22 1"


def test_a_leader_epoch_whose_checkpoint_cannot_be_written_stops_the_log(
        tmp_path: Path) -> None:
    """Becoming leader writes the epoch's checkpoint before any batch of it; a write that
    fails goes to the log's failure handler (the broker halts) and leaves the cache as the
    file has it."""
    log = PartitionLog.open(tmp_path / "orders-0", CONFIG, 0)
    failures: list[OSError] = []
    log.on_storage_error = lambda directory, error: failures.append(error)
    log.start_leader_epoch(3)
    (log.directory / "leader-epoch-checkpoint.tmp").mkdir()
    with pytest.raises(KafkaStorageError):
        log.start_leader_epoch(4)
    assert [type(error) for error in failures] == [IsADirectoryError]
    assert log.leader_epochs.latest_epoch == 3


def test_log_start_offset_from_a_checkpoint(tmp_path: Path) -> None:
    log, values = filled_log(tmp_path)
    log = reopen(log, log.log_end_offset, log_start_offset=5)
    assert log.log_start_offset == 5
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1 << 20)
    assert read_values(log)[-1] == values[-1]


def test_log_start_offset_past_the_end_starts_an_empty_log_there(tmp_path: Path) -> None:
    log, _ = filled_log(tmp_path)
    log = reopen(log, 0, log_start_offset=500)
    assert (log.log_start_offset, log.log_end_offset) == (500, 500)
    assert [path.name for path in log.directory.glob("*.log")] == ["00000000000000000500.log"]
    append(log, [b"x"])
    assert read_values(log) == [b"x"]


# -- LogManager ----------------------------------------------------------------------------


def manager(tmp_path: Path) -> LogManager:
    return LogManager(tmp_path / "data", lambda topic: CONFIG)


def test_parse_log_dir_name() -> None:
    assert parse_log_dir_name("my.topic-with-dashes-12") == ("my.topic-with-dashes", 12)
    assert parse_log_dir_name("__consumer_offsets-0") == ("__consumer_offsets", 0)
    assert parse_log_dir_name("orders-0.a1b2-delete") is None
    assert parse_log_dir_name("orders") is None
    assert parse_log_dir_name("-3") is None


def test_clean_shutdown_then_load(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    logs.load(0)
    contents = {}
    for topic, partition in [("my.topic-with-dashes", 0), ("my.topic-with-dashes", 1), ("t", 3)]:
        log = logs.create(topic, partition, 0)
        assert logs.create(topic, partition, 0) is log
        contents[(topic, partition)] = fill(log, 10 + partition)
        log.high_watermark = log.log_end_offset
    deleted = logs.get("t", 3)
    assert deleted is not None
    deleted.delete_records_before(30)
    logs.shutdown()
    data = tmp_path / "data"
    assert (data / CLEAN_SHUTDOWN_FILE).exists()
    assert (data / "recovery-point-offset-checkpoint").read_text() == (
        "0\n3\nmy.topic-with-dashes 0 30\nmy.topic-with-dashes 1 33\nt 3 39\n"
    )
    first_base = deleted.segments[0].base_offset
    assert 0 < first_base < 30
    assert (data / "log-start-offset-checkpoint").read_text() == "0\n1\nt 3 30\n"
    assert not list(data.glob("*.tmp"))

    again = manager(tmp_path)
    again.load(0)
    assert not (data / CLEAN_SHUTDOWN_FILE).exists()
    assert sorted(key for key, _ in again.logs()) == sorted(contents)
    for (topic, partition), values in contents.items():
        loaded = again.get(topic, partition)
        assert loaded is not None
        assert loaded.recovery_point == loaded.log_end_offset == len(values)
        start = 30 if topic == "t" else 0
        assert loaded.log_start_offset == start
        assert read_values(loaded) == values[start:]


def test_load_without_the_marker_recovers_from_the_checkpointed_recovery_points(
    tmp_path: Path,
) -> None:
    logs = manager(tmp_path)
    logs.load(0)
    log = logs.create("orders", 0, 0)
    values = fill(log, 20)
    log.flush()
    logs.checkpoint()
    values += fill(log, 20, first=20)
    first_segment = log.segments[0].log_path
    tail = log.active_segment.log_path
    leo = log.log_end_offset
    log.close()  # the process dies: no shutdown, no marker
    garbage_tail(tail, leo)
    data = bytearray(first_segment.read_bytes())
    data[-2] ^= 0x01  # below the recovery point: not rescanned
    first_segment.write_bytes(data)

    again = manager(tmp_path)
    again.load(0)
    recovered = again.get("orders", 0)
    assert recovered is not None
    assert recovered.log_end_offset == leo
    assert tail.stat().st_size == recovered.active_segment.size
    assert recovered.recovery_point == 60
    assert len(read_values(recovered)) == len(values)


def test_delete_renames_the_dir_and_load_removes_it(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    logs.load(0)
    fill(logs.create("orders", 0, 0), 3)
    logs.create("orders", 1, 0)
    doomed = logs.delete("orders", 0)
    assert re.fullmatch(r"orders-0\.[0-9a-f]{32}-delete", doomed.name)
    assert doomed.is_dir() and not (tmp_path / "data" / "orders-0").exists()
    assert logs.get("orders", 0) is None
    logs.shutdown()
    (tmp_path / "data" / "notes").mkdir()
    again = manager(tmp_path)
    again.load(0)
    assert not doomed.exists()
    assert [key for key, _ in again.logs()] == [("orders", 1)]
    assert (tmp_path / "data" / "notes").is_dir()


def test_cleaner_checkpoints_survive_a_restart_and_a_cut_pulls_them_back(
    tmp_path: Path,
) -> None:
    """Kafka's maybeTruncateCheckpoint: data written again past a cut is dirty, even when the
    cut comes after a restart, before the cleaner has looked at the log."""
    logs = manager(tmp_path)
    logs.load(0)
    cleaned, other, never = (logs.create("t", p, 0) for p in range(3))
    for log in (cleaned, other, never):
        fill(log, 40)
    cleaned.cleaner_checkpoint = 30
    other.cleaner_checkpoint = 20
    logs.checkpoint_cleaning()
    assert (tmp_path / "data" / "cleaner-offset-checkpoint").read_text() == (
        "0\n2\nt 0 30\nt 1 20\n")
    logs.shutdown()

    again = manager(tmp_path)
    again.load(0)
    cut, kept, fresh = (again.get("t", p) for p in range(3))
    assert cut is not None and kept is not None and fresh is not None
    assert (cut.cleaner_checkpoint, kept.cleaner_checkpoint, fresh.cleaner_checkpoint) == (
        30, 20, None)
    cut.truncate_to(25, now_ms=0)
    kept.truncate_to(35, now_ms=0)
    fresh.truncate_to(10, now_ms=0)
    assert (cut.cleaner_checkpoint, kept.cleaner_checkpoint, fresh.cleaner_checkpoint) == (
        cut.log_end_offset, 20, None)
    assert cut.log_end_offset <= 25
    kept.truncate_fully_and_start_at(15, now_ms=0)
    assert kept.cleaner_checkpoint == 15
