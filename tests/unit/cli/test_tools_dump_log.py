"""`odradek dump-log`'s lines, on batches built with the record codec: Kafka's
kafka-dump-log.sh field names and order, deep iteration, control records, torn tails, bad
CRCs, and the index checks."""

from __future__ import annotations

import json

import pytest

from odradek.cli.tools.dump_log_format import (
    Findings,
    Line,
    LogOptions,
    dump_log,
    dump_offset_index,
    dump_producer_snapshot,
    dump_time_index,
    dump_txn_index,
)
from odradek.log.txn_index import AbortedTxn
from odradek.protocol.control import build_marker_batch
from odradek.protocol.record_codec import Record, build_batch
from odradek.protocol.records import GZIP, LZ4, SNAPPY, ZSTD, parse_batch_header
from odradek.txn.producer_state import ProducerStateManager

T = 1_700_000_000_000
DEEP = LogOptions(print_data=True)
SHALLOW = LogOptions()


def segment(*batches: bytes, base_offset: int = 0) -> bytes:
    """Batches laid one after the other, their base offsets consecutive from base_offset."""
    out = bytearray()
    offset = base_offset
    for batch in batches:
        info = parse_batch_header(batch)
        out += offset.to_bytes(8, "big") + batch[8:]
        offset += info.last_offset_delta + 1
    return bytes(out)


def texts(data: bytes, options: LogOptions = SHALLOW, findings: Findings | None = None,
          base_offset: int = 0) -> list[str]:
    found = Findings() if findings is None else findings
    return [line.text() for line in dump_log(data, "x.log", base_offset, options, found,
                                             "/d/x.log")]


def test_a_batch_prints_kafkas_fields_in_kafkas_order() -> None:
    batch = build_batch([(b"k", b"v"), (b"k2", b"v2")], base_offset=40, timestamp_ms=T,
                        producer_id=7, producer_epoch=2, base_sequence=10,
                        partition_leader_epoch=3)
    crc = parse_batch_header(batch).crc
    assert texts(batch, base_offset=40) == [
        "Log starting offset: 40",
        f"baseOffset: 40 lastOffset: 41 count: 2 baseSequence: 10 lastSequence: 11 "
        f"producerId: 7 producerEpoch: 2 partitionLeaderEpoch: 3 isTransactional: false "
        f"isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {T} "
        f"size: {len(batch)} magic: 2 compresscodec: none crc: {crc} isvalid: true",
    ]


def test_positions_add_up_and_the_cleaner_fields_show() -> None:
    first = build_batch([(b"a", b"1")], timestamp_ms=T)
    cleaned = build_batch([(b"b", None)], timestamp_ms=T, delete_horizon_ms=T + 5000,
                          log_append_time_ms=T + 9)
    lines = texts(segment(first, cleaned))
    assert f"position: {len(first)} LogAppendTime: {T + 9} " in lines[2]
    assert "deleteHorizonMs: OptionalLong[1700000005000]" in lines[2]


def test_deep_iteration_prints_each_record_with_key_headers_and_payload() -> None:
    records = [Record(0, T, b"key-0", b"value-0", (("trace", b"1"), ("span", None))),
               Record(1, T + 1, None, b"no key"),
               Record(2, T + 2, b"gone", None)]
    batch = build_batch(records, producer_id=3, producer_epoch=0, base_sequence=5)
    lines = texts(batch, DEEP)
    assert lines[2:] == [
        f"| offset: 0 CreateTime: {T} keySize: 5 valueSize: 7 sequence: 5 "
        "headerKeys: [trace,span] key: key-0 payload: value-0",
        f"| offset: 1 CreateTime: {T + 1} keySize: -1 valueSize: 6 sequence: 6 headerKeys: [] "
        "payload: no key",
        f"| offset: 2 CreateTime: {T + 2} keySize: 4 valueSize: -1 sequence: 7 headerKeys: [] "
        "key: gone",
    ]


def test_deep_iteration_without_print_data_leaves_keys_and_payloads_out() -> None:
    lines = texts(build_batch([(b"k", b"v")], timestamp_ms=T), LogOptions(deep_iteration=True))
    assert lines[2] == f"| offset: 0 CreateTime: {T} keySize: 1 valueSize: 1 sequence: -1 " \
                       "headerKeys: []"


def test_skip_record_metadata_prints_only_key_and_payload() -> None:
    options = LogOptions(print_data=True, skip_record_metadata=True)
    assert texts(build_batch([(b"k", b"v")]), options)[2] == "| key: k payload: v"


def test_sequences_wrap_at_int32_max() -> None:
    batch = build_batch([(b"a", b"1"), (b"b", b"2")], producer_id=1, producer_epoch=0,
                        base_sequence=2**31 - 1)
    lines = texts(batch, LogOptions(deep_iteration=True))
    assert "baseSequence: 2147483647 lastSequence: 0 " in lines[1]
    assert "sequence: 2147483647 " in lines[2]
    assert "sequence: 0 " in lines[3]


@pytest.mark.parametrize(("codec", "name"),
                         [(GZIP, "gzip"), (SNAPPY, "snappy"), (LZ4, "lz4"), (ZSTD, "zstd")])
def test_compressed_batches_name_their_codec_and_decode(codec: int, name: str) -> None:
    batch = build_batch([(f"k{i}".encode(), f"v{i}".encode() * 50) for i in range(5)],
                        compression=codec)
    lines = texts(batch, DEEP)
    assert f"compresscodec: {name} " in lines[1]
    assert [line.split(" key: ")[1] for line in lines[2:]] == [
        f"k{i} payload: {f'v{i}' * 50}" for i in range(5)]


def test_a_transaction_marker_prints_its_type_and_coordinator_epoch() -> None:
    data = segment(build_batch([(b"k", b"v")], producer_id=9, producer_epoch=1,
                               base_sequence=0, is_transactional=True),
                   build_marker_batch(9, 1, coordinator_epoch=4, commit=False, timestamp_ms=T))
    lines = texts(data, DEEP)
    assert "isTransactional: true isControl: true " in lines[3]
    assert lines[4] == (f"| offset: 1 CreateTime: {T} keySize: 4 valueSize: 6 sequence: -1 "
                        "headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 4")


def test_a_torn_tail_ends_the_dump_with_its_size() -> None:
    whole = segment(*(build_batch([(b"k", b"v" * 100)]) for _ in range(3)))
    cut = len(whole) - 40
    lines = texts(whole[:cut])
    assert [line.split()[1] for line in lines if line.startswith("baseOffset")] == ["0", "1"]
    third = len(whole) // 3 * 2
    assert lines[-1] == f"Found {cut - third} invalid bytes at the end of x.log"


def test_garbage_after_the_batches_counts_as_invalid_bytes() -> None:
    data = build_batch([(b"k", b"v")]) + b"\x00" * 70
    assert texts(data)[-1] == "Found 70 invalid bytes at the end of x.log"


def test_a_bad_crc_marks_the_batch_invalid_and_the_dump_goes_on() -> None:
    first = bytearray(build_batch([(b"key", b"value-one")]))
    first[-3] ^= 0xFF  # a byte of the value
    data = segment(bytes(first), build_batch([(b"key", b"value-two")]))
    lines = texts(data, DEEP)
    assert lines[1].endswith("isvalid: false")
    assert lines[3].endswith("isvalid: true")
    assert lines[4].endswith("payload: value-two")
    assert not lines[-1].startswith("Found")


def test_max_bytes_reads_only_whole_batches_within_it_and_reports_no_tail() -> None:
    batch = build_batch([(b"k", b"v")])
    lines = texts(segment(batch, batch, batch), LogOptions(max_bytes=len(batch) * 2 + 10))
    assert len(lines) == 3
    assert "baseOffset: 1 " in lines[2]


def test_offset_gaps_are_reported_as_non_consecutive() -> None:
    records = [Record(0, T, b"a", b"1"), Record(3, T, b"b", b"2")]
    data = segment(build_batch(records), build_batch([(b"c", b"3")]))
    findings = Findings()
    texts(data, LogOptions(deep_iteration=True), findings)
    assert findings.text() == ["Non-consecutive offsets in /d/x.log", "  0 is followed by 3"]
    clean = Findings()
    texts(segment(build_batch([(b"a", b"1")]), build_batch([(b"b", b"2")])), DEEP, clean)
    assert not clean


def _index_fixture() -> tuple[bytes, list[tuple[int, int]]]:
    batches = [build_batch([(b"k", b"v"), (b"k", b"w")], timestamp_ms=T + i) for i in range(4)]
    data = segment(*batches, base_offset=100)
    size = len(batches[0])
    return data, [(101, 0), (103, size), (105, 2 * size), (107, 3 * size)]


def test_a_matching_offset_index_prints_its_entries_and_finds_nothing() -> None:
    data, entries = _index_fixture()
    findings = Findings()
    lines = [line.text() for line in dump_offset_index(
        entries, data, base_offset=100, file="/d/i", verify_only=False, findings=findings)]
    assert lines == [f"offset: {o} position: {p}" for o, p in entries]
    assert not findings


def test_offset_index_mismatches_are_reported_as_kafka_does() -> None:
    data, entries = _index_fixture()
    size = entries[1][1]
    tampered = [entries[0], (104, size), (105, size + 7), entries[2], entries[3]]
    findings = Findings()
    lines = list(dump_offset_index(tampered, data, base_offset=100, file="/d/i",
                                   verify_only=True, findings=findings))
    assert lines == []
    assert findings.text() == [
        "Mismatches in :/d/i",
        "  Index offset: 104, log offset: 103",
        "  Index offset: 105, log offset: -1",
        "Found out of order offset in :/d/i",
        "  Index offset: 105, Previously indexed offset: 105",
    ]


def test_an_empty_index_and_a_zeroed_tail() -> None:
    data, entries = _index_fixture()
    findings = Findings()
    assert [line.text() for line in dump_offset_index(
        [], data, base_offset=100, file="/d/i", verify_only=False, findings=findings)
    ] == ["/d/i is empty."]
    zeroed = entries[:2] + [(100, 0), (100, 0)]
    lines = list(dump_offset_index(zeroed, data, base_offset=100, file="/d/i",
                                   verify_only=False, findings=findings))
    assert len(lines) == 2
    assert not findings


def test_time_index_entries_are_checked_against_the_batches() -> None:
    data, _ = _index_fixture()
    good = [(T, 101), (T + 2, 105), (T + 3, 107)]
    findings = Findings()
    lines = [line.text() for line in dump_time_index(
        good, data, base_offset=100, file="/d/t", verify_only=False, findings=findings)]
    assert lines == [f"timestamp: {t} offset: {o}" for t, o in good]
    assert not findings
    bad = [(T + 1, 101), (T, 103), (T + 5, 104), (T + 6, 200)]
    list(dump_time_index(bad, data, base_offset=100, file="/d/t", verify_only=True,
                         findings=findings))
    assert findings.text() == [
        "Found timestamp mismatch in :/d/t",
        f"  Index timestamp: {T + 1}, log timestamp: {T}",
        f"  Index timestamp: {T}, log timestamp: {T + 1}",
        "Found out of order timestamp in :/d/t",
        f"  Index timestamp: {T}, Previously indexed timestamp: {T + 1}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 104, found log offset: 105",
        "Indexed offset: 200, found log offset: -1",
    ]


def test_aborted_transactions_print_as_kafka_prints_them() -> None:
    lines = [line.text() for line in dump_txn_index([AbortedTxn(5, 10, 14, 15)])]
    assert lines == ["version: 0 producerId: 5 firstOffset: 10 lastOffset: 14 "
                     "lastStableOffset: 15"]


def test_producer_snapshot_entries_print_their_last_batch() -> None:
    state = ProducerStateManager()
    state.record(parse_batch_header(build_batch(
        [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], base_offset=20, timestamp_ms=T,
        producer_id=42, producer_epoch=3, base_sequence=6, is_transactional=True)))
    state.record(parse_batch_header(build_marker_batch(42, 3, 8, True, T)), (True, 8))
    state.record(parse_batch_header(build_batch(
        [(b"d", b"4")], base_offset=30, timestamp_ms=T + 1, producer_id=43, producer_epoch=0,
        base_sequence=0, is_transactional=True)))
    loaded = ProducerStateManager.from_snapshot(state.snapshot())
    assert [line.text() for line in dump_producer_snapshot(loaded)] == [
        f"producerId: 42 producerEpoch: 3 coordinatorEpoch: 8 "
        f"currentTxnFirstOffset: OptionalLong.empty lastTimestamp: {T} firstSequence: 6 "
        f"lastSequence: 8 lastOffset: 22 offsetDelta: 2 timestamp: {T}",
        f"producerId: 43 producerEpoch: 0 coordinatorEpoch: -1 "
        f"currentTxnFirstOffset: OptionalLong[30] lastTimestamp: {T + 1} firstSequence: 0 "
        f"lastSequence: 0 lastOffset: 30 offsetDelta: 0 timestamp: {T + 1}",
    ]


def test_json_lines_carry_the_same_fields_typed() -> None:
    batch = build_batch([(b"k", b"v")], timestamp_ms=T)
    lines = list(dump_log(batch, "x.log", 0, DEEP, Findings(), "/d/x.log"))
    decoded = [json.loads(json.dumps(line.json())) for line in lines]
    assert decoded[0] == {"type": "log", "startingOffset": 0}
    assert decoded[1]["deleteHorizonMs"] is None
    assert decoded[1]["isvalid"] is True
    assert decoded[2] == {"type": "record", "offset": 0, "CreateTime": T, "keySize": 1,
                          "valueSize": 1, "sequence": -1, "headerKeys": [], "key": "k",
                          "payload": "v"}
    assert Line("file", {"file": "a.log"}).text() == "Dumping a.log"
    findings = Findings()
    findings.add("index-mismatch", "/d/i", (3, 2))
    assert findings.json() == [{"type": "index-mismatch", "file": "/d/i", "indexOffset": 3,
                                "logOffset": 2}]
