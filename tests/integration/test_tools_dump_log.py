"""`odradek dump-log` on the files a real broker wrote: records produced by real clients come
out with their offsets, keys, headers and payloads in every codec; transactions show their
markers, aborted-transaction index and producer snapshot; compaction's offset gaps show;
the broker's own indexes verify clean and tampered copies do not; torn and corrupt copies
are dumped up to where they go bad, without a traceback."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.test_compaction import (
    COMPACTED,
    FAST_CLEANER,
    SMALL_BATCHES,
    compacted_exactly,
    roll_active_segment,
)
from tests.waiting import wait_until

FIRST = "00000000000000000000"
DENSE_INDEX = {"index.interval.bytes": "100"}
"""An index entry after (almost) every batch."""
ONE_RECORD_BATCHES = {"linger.ms": 0, "batch.num.messages": 1}
BATCH_LINE = re.compile(
    r"baseOffset: \d+ lastOffset: \d+ count: \d+ baseSequence: -?\d+ lastSequence: -?\d+ "
    r"producerId: -?\d+ producerEpoch: -?\d+ partitionLeaderEpoch: \d+ "
    r"isTransactional: (true|false) isControl: (true|false) "
    r"deleteHorizonMs: OptionalLong(\.empty|\[\d+\]) position: \d+ CreateTime: \d+ "
    r"size: \d+ magic: 2 compresscodec: \w+ crc: \d+ isvalid: (true|false)")


def dump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, "dump-log", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def dump_json(*args: str | Path) -> list[dict[str, Any]]:
    result = dump("--json", *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def of_type(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["type"] == kind]


def partition_dir(broker: BrokerProcess, topic: str) -> Path:
    return broker.data_dir / f"{topic}-0"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("dump-log")
    process = BrokerProcess(root / "data", root / "broker.log")
    process.start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture(scope="module")
def keyed_topic(broker: BrokerProcess) -> tuple[str, list[Out]]:
    """30 records with keys and headers from an idempotent producer, in small batches, on a
    densely indexed topic."""
    topic = create_topic(broker.bootstrap, unique("dump-keyed"), config=DENSE_INDEX)
    stamp = now_ms()
    outs = [Out(f"key-{i}".encode(), f"value-{i}".encode(), stamp + i,
                (("trace", f"t{i}".encode()), ("empty", None))) for i in range(30)]
    produce_confluent(broker.bootstrap, topic, outs,
                      {"enable.idempotence": True, **ONE_RECORD_BATCHES})
    return topic, outs


def test_keyed_records_dump_with_their_offsets_keys_headers_and_payloads(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]]) -> None:
    topic, outs = keyed_topic
    segment = partition_dir(broker, topic) / f"{FIRST}.log"
    result = dump("--print-data-log", segment)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert batches and all(BATCH_LINE.fullmatch(line) for line in batches), batches[:1]
    assert sum(int(line.split(" count: ")[1].split()[0]) for line in batches) == len(outs)
    consumed = read_confluent(broker.bootstrap, topic)
    expected = [f"| offset: {r.offset} CreateTime: {r.timestamp} keySize: {len(r.key or b'')} "
                f"valueSize: {len(r.value or b'')} sequence: {r.offset} "
                f"headerKeys: [trace,empty] key: {r.key.decode()} payload: {r.value.decode()}"
                for r in consumed if r.key and r.value]
    assert [line for line in lines if line.startswith("|")] == expected
    assert [r.key for r in consumed] == [o.key for o in outs]
    assert "producerId: -1 " not in batches[0], "the idempotent producer's id is shown"


def test_json_lines_carry_the_same_records(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]]) -> None:
    topic, outs = keyed_topic
    objects = dump_json("--print-data-log", partition_dir(broker, topic) / f"{FIRST}.log")
    records = of_type(objects, "record")
    assert [(r["offset"], r["key"], r["payload"], r["headerKeys"]) for r in records] == [
        (i, o.key.decode(), o.value.decode(), ["trace", "empty"])
        for i, o in enumerate(outs) if o.key and o.value]
    assert all(b["isvalid"] is True and b["deleteHorizonMs"] is None
               for b in of_type(objects, "batch"))


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_each_codec_dumps_decoded_records(broker: BrokerProcess, codec: str) -> None:
    topic = create_topic(broker.bootstrap, unique(f"dump-{codec}"))
    outs = [Out(f"k{i}".encode(), f"{codec}-payload-{i}-".encode() * 20, now_ms())
            for i in range(50)]
    produce_confluent(broker.bootstrap, topic, outs,
                      {"compression.type": codec, "linger.ms": 20})
    objects = dump_json("--print-data-log", partition_dir(broker, topic) / f"{FIRST}.log")
    assert {b["compresscodec"] for b in of_type(objects, "batch")} == {codec}
    consumed = read_confluent(broker.bootstrap, topic)
    assert [(r["offset"], r["key"], r["payload"]) for r in of_type(objects, "record")] == [
        (r.offset, r.key.decode(), r.value.decode()) for r in consumed if r.key and r.value]


def test_the_brokers_own_indexes_verify_clean(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]]) -> None:
    topic, _ = keyed_topic
    directory = partition_dir(broker, topic)
    index, time_index = directory / f"{FIRST}.index", directory / f"{FIRST}.timeindex"
    result = dump("--verify-index-only", index, time_index)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [f"Dumping {index}", f"Dumping {time_index}"]
    entries = dump(index).stdout.splitlines()[1:]
    batch_starts = {(b["lastOffset"], b["position"])
                    for b in of_type(dump_json(directory / f"{FIRST}.log"), "batch")}
    pairs = [tuple(int(n) for n in re.findall(r"\d+", line)) for line in entries]
    assert len(pairs) > 10 and set(pairs) <= batch_starts
    assert dump(time_index).stdout.splitlines()[1].startswith("timestamp: ")
    sane = dump("--index-sanity-check", index, time_index)
    assert sane.stdout.splitlines() == [f"Dumping {index}", f"{index} passed sanity check.",
                                        f"Dumping {time_index}",
                                        f"{time_index} passed sanity check."]


def test_a_tampered_index_reports_its_mismatches(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]], tmp_path: Path) -> None:
    topic, _ = keyed_topic
    directory = partition_dir(broker, topic)
    shutil.copy(directory / f"{FIRST}.log", tmp_path)
    index = tmp_path / f"{FIRST}.index"
    data = bytearray((directory / f"{FIRST}.index").read_bytes())
    relative, _ = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">i", data, 8, relative + 1)
    index.write_bytes(bytes(data))
    result = dump("--verify-index-only", index)
    assert result.returncode == 0, "a mismatch is a finding, as in Kafka, not a failure"
    assert result.stderr.splitlines() == [f"Mismatches in :{index}",
                                          f"  Index offset: {relative + 1}, log offset: "
                                          f"{relative}"]
    index.write_bytes(bytes(data[:-3]))
    broken = dump("--index-sanity-check", index, tmp_path / f"{FIRST}.log")
    assert broken.returncode == 1
    assert broken.stderr.splitlines() == [
        f"odradek dump-log: {index}: failed sanity check: entries out of order, pointing past "
        "the end of the segment, or a partial entry; the broker would rebuild it"]
    assert "Log starting offset: 0" in broken.stdout, "the other file is still dumped"


def test_a_torn_tail_dumps_the_whole_batches_and_says_where_valid_data_ends(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]], tmp_path: Path) -> None:
    topic, _ = keyed_topic
    original = partition_dir(broker, topic) / f"{FIRST}.log"
    whole = of_type(dump_json(original), "batch")
    torn = tmp_path / f"{FIRST}.log"
    torn.write_bytes(original.read_bytes()[:-10])
    result = dump("--deep-iteration", torn)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert len([line for line in lines if line.startswith("baseOffset:")]) == len(whole) - 1
    assert lines[-1] == (f"Found {whole[-1]['size'] - 10} invalid bytes at the end of "
                         f"{torn.name}")
    limited = dump("--max-bytes", str(whole[2]["position"]), original).stdout.splitlines()
    assert len(limited) == 2 + 2 and not limited[-1].startswith("Found")


def test_a_corrupt_batch_shows_isvalid_false_and_the_rest_still_dumps(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]], tmp_path: Path) -> None:
    topic, _ = keyed_topic
    data = bytearray((partition_dir(broker, topic) / f"{FIRST}.log").read_bytes())
    first_size = 12 + struct.unpack_from(">i", data, 8)[0]
    data[first_size - 2] ^= 0xFF  # inside the first batch's last record
    copy = tmp_path / f"{FIRST}.log"
    copy.write_bytes(bytes(data))
    valid = [b["isvalid"] for b in of_type(dump_json(copy), "batch")]
    assert valid[0] is False and all(valid[1:]) and len(valid) > 1


def test_missing_files_and_unknown_extensions_fail_alone(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]], tmp_path: Path) -> None:
    topic, _ = keyed_topic
    good = partition_dir(broker, topic) / f"{FIRST}.log"
    missing = tmp_path / f"{FIRST}.log"
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello")
    result = dump(missing, unknown, good)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"odradek dump-log: {missing}: No such file or directory",
        f"odradek dump-log: {unknown}: unknown file type '.txt'; expected .log, .index, "
        ".timeindex, .txnindex or .snapshot"]
    assert f"Dumping {good}" in result.stdout and "baseOffset: 0 " in result.stdout
    none = dump()
    assert none.returncode == 1 and "Traceback" not in none.stderr
    assert len(none.stderr.splitlines()) == 1
    assert dump("--max-bytes", "0", good).returncode == 2


def test_kafkas_comma_separated_files_option(
        broker: BrokerProcess, keyed_topic: tuple[str, list[Out]]) -> None:
    topic, _ = keyed_topic
    directory = partition_dir(broker, topic)
    result = dump("--files", f"{directory / f'{FIRST}.log'},{directory / f'{FIRST}.index'}")
    assert result.returncode == 0
    assert [line for line in result.stdout.splitlines() if line.startswith("Dumping")] == [
        f"Dumping {directory / f'{FIRST}.log'}", f"Dumping {directory / f'{FIRST}.index'}"]


def produce_committed_then_aborted(bootstrap: str, topic: str) -> None:
    """On partition 0: a transaction of three records committed, one of three aborted (values
    commit-<i> and abort-<i>), then a plain record ("after")."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{topic}",
                         "linger.ms": 5})
    producer.init_transactions(TIMEOUT)
    for outcome in ("commit", "abort"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, key=b"k", value=f"{outcome}-{i}".encode(), partition=0)
        producer.flush(TIMEOUT)
        if outcome == "commit":
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)
    produce_confluent(bootstrap, topic, [Out(b"k", b"after", now_ms(), partition=0)])


def test_transactions_show_markers_aborted_index_and_producer_snapshot(
        fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("dump-txn"))
    produce_committed_then_aborted(bootstrap, topic)
    committed = read_confluent(bootstrap, topic)  # librdkafka reads read_committed
    fresh_broker.stop()  # the producer snapshot is written when the log closes

    directory = partition_dir(fresh_broker, topic)
    objects = dump_json("--print-data-log", directory / f"{FIRST}.log")
    records = of_type(objects, "record")
    markers = [r for r in records if "endTxnMarker" in r]
    assert [m["endTxnMarker"] for m in markers] == ["COMMIT", "ABORT"]
    data = {r["offset"]: r["payload"] for r in records if "payload" in r}
    assert [(r.offset, r.value) for r in committed] == [
        (offset, payload.encode()) for offset, payload in data.items()
        if not payload.startswith("abort")]
    aborted = sorted(o for o, payload in data.items() if payload.startswith("abort"))
    assert [data[o] for o in aborted] == ["abort-0", "abort-1", "abort-2"]
    transactional = [b for b in of_type(objects, "batch") if b["isTransactional"]]
    producer_id = transactional[0]["producerId"]
    assert {b["producerId"] for b in transactional} == {producer_id}
    assert [b["isControl"] for b in transactional][-1] is True

    txn_index = dump(directory / f"{FIRST}.txnindex")
    assert txn_index.stdout.splitlines()[1:] == [
        f"version: 0 producerId: {producer_id} firstOffset: {aborted[0]} "
        f"lastOffset: {markers[1]['offset']} lastStableOffset: {markers[1]['offset'] + 1}"]
    (snapshot,) = directory.glob("*.snapshot")
    lines = dump(snapshot).stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(f"producerId: {producer_id} producerEpoch: 0 coordinatorEpoch: ")
    assert "currentTxnFirstOffset: OptionalLong.empty " in lines[1]
    assert f" lastOffset: {aborted[-1]} " in lines[1]


def test_a_compacted_log_shows_its_offset_gaps(fresh_broker: BrokerProcess) -> None:
    fresh_broker.overrides.update(FAST_CLEANER)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("dump-compacted"),
                         config={**COMPACTED, "segment.ms": "1000"})
    stamp = now_ms()
    outs = [Out(f"key-{i % 20}".encode(), f"v{i}".encode() * 20, stamp) for i in range(1500)]
    # The last values of keys 0 to 2 lie among superseded ones: the compacted log has gaps.
    outs += [Out(f"key-{k}".encode(), f"last-{k}".encode(), stamp) for k in (0, 1, 0, 2, 0)]
    acked = produce_confluent(bootstrap, topic, outs, SMALL_BATCHES)
    acked.append(roll_active_segment(bootstrap, topic, 1000))
    wait_until(lambda: compacted_exactly(bootstrap, topic, acked), 60, "compaction",
               interval=0.5)
    consumed = read_confluent(bootstrap, topic)
    fresh_broker.stop()

    segments = sorted(partition_dir(fresh_broker, topic).glob("*.log"))
    result = dump("--print-data-log", *segments)
    assert result.returncode == 0, result.stderr
    records = [line for line in result.stdout.splitlines() if line.startswith("| offset: ")]
    dumped = [(int(line.split()[2]), line.split(" key: ")[1]) for line in records]
    assert dumped == [(r.offset, f"{r.key.decode()} payload: {r.value.decode()}")
                      for r in consumed if r.key and r.value]
    assert len(dumped) < len(outs) // 10
    offsets = [offset for offset, _ in dumped]
    gaps = {(a, b) for a, b in zip(offsets, offsets[1:], strict=False) if b != a + 1}
    reported = {(int(a), int(b)) for a, b in
                re.findall(r"^  (\d+) is followed by (\d+)$", result.stderr, re.MULTILINE)}
    assert reported and reported <= gaps
    headings = [line for line in result.stderr.splitlines() if not line.startswith("  ")]
    assert headings and all(line.startswith("Non-consecutive offsets in /") and
                            line.endswith(".log") for line in headings)
