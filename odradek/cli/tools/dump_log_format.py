"""What `odradek dump-log` prints about each kind of file, as Kafka's kafka-dump-log.sh
(DumpLogSegments) prints it, computed from bytes and parsed entries without IO.

Every printed line is a `Line`: a kind and its named fields, rendered either as Kafka's
`name: value` text or as a JSON object. What the checks find (index entries that do not match
the log, offsets that are not consecutive) is gathered in `Findings` and reported after all
files, as Kafka does.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from odradek.log.txn_index import VERSION as TXN_INDEX_VERSION
from odradek.log.txn_index import AbortedTxn
from odradek.protocol.control import read_marker
from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import (
    CREATE_TIME,
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    MAGIC,
    NO_COMPRESSION,
    SNAPPY,
    ZSTD,
    BatchInfo,
    Buffer,
    InvalidRecordsError,
    iter_batches,
    validate_batches,
)
from odradek.txn.producer_state import NO_SEQUENCE, ProducerStateManager, last_sequence

TIMESTAMP_TYPES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime"}
CODECS = {NO_COMPRESSION: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
NO_TIMESTAMP = -1
SEQUENCE_MODULUS = 1 << 31
"""Sequence numbers wrap from Int.MaxValue to 0."""

_MESSAGES = {
    "file": "Dumping {file}",
    "log": "Log starting offset: {startingOffset}",
    "invalid-bytes": "Found {invalidBytes} invalid bytes at the end of {file}",
    "undecodable": "| cannot decode the records: {error}",
    "index-empty": "{file} is empty.",
    "sanity-check": "{file} passed sanity check.",
}
"""Kinds of line printed as a sentence; the other kinds print `name: value` pairs."""


@dataclass(frozen=True, slots=True)
class OptionalLong:
    """A field that is a Java OptionalLong in Kafka, whose tool prints its toString."""

    value: int | None

    def __str__(self) -> str:
        return "OptionalLong.empty" if self.value is None else f"OptionalLong[{self.value}]"


@dataclass(frozen=True, slots=True)
class Line:
    kind: str
    fields: dict[str, object]

    def text(self) -> str:
        template = _MESSAGES.get(self.kind)
        if template is not None:
            return template.format(**self.fields)
        pairs = " ".join(f"{name}: {_text(value)}" for name, value in self.fields.items())
        return f"| {pairs}" if self.kind == "record" else pairs

    def json(self) -> dict[str, object]:
        return {"type": self.kind, **{name: value.value if isinstance(value, OptionalLong)
                                      else value for name, value in self.fields.items()}}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


_FINDINGS = {
    "index-mismatch": ("Mismatches in :{file}", "  Index offset: {0}, log offset: {1}",
                       ("indexOffset", "logOffset")),
    "index-out-of-order": ("Found out of order offset in :{file}",
                           "  Index offset: {0}, Previously indexed offset: {1}",
                           ("indexOffset", "previousIndexOffset")),
    "timestamp-mismatch": ("Found timestamp mismatch in :{file}",
                           "  Index timestamp: {0}, log timestamp: {1}",
                           ("indexTimestamp", "logTimestamp")),
    "timestamp-out-of-order": ("Found out of order timestamp in :{file}",
                               "  Index timestamp: {0}, Previously indexed timestamp: {1}",
                               ("indexTimestamp", "previousIndexTimestamp")),
    "offset-not-found": ("The following indexed offsets are not found in the log.",
                         "Indexed offset: {0}, found log offset: {1}",
                         ("indexOffset", "logOffset")),
    "non-consecutive": ("Non-consecutive offsets in {file}", "  {0} is followed by {1}",
                        ("offset", "nextOffset")),
}
"""Each kind of finding: Kafka's heading, its line per pair, and the pair's JSON names."""


@dataclass
class Findings:
    """What the checks found, by kind and file, in the order Kafka reports them."""

    found: dict[str, dict[str, list[tuple[int, int]]]] = field(
        default_factory=lambda: {kind: {} for kind in _FINDINGS})

    def add(self, kind: str, file: str, pair: tuple[int, int]) -> None:
        self.found[kind].setdefault(file, []).append(pair)

    def __bool__(self) -> bool:
        return any(self.found.values())

    def text(self) -> list[str]:
        lines = []
        for kind, by_file in self.found.items():
            heading, item, _ = _FINDINGS[kind]
            for file, pairs in by_file.items():
                lines.append(heading.format(file=file))
                lines += [item.format(*pair) for pair in pairs]
        return lines

    def json(self) -> list[dict[str, object]]:
        objects: list[dict[str, object]] = []
        for kind, by_file in self.found.items():
            first, second = _FINDINGS[kind][2]
            objects += [{"type": kind, "file": file, first: a, second: b}
                        for file, pairs in by_file.items() for a, b in pairs]
        return objects


@dataclass(frozen=True, slots=True)
class LogOptions:
    deep_iteration: bool = False
    print_data: bool = False
    skip_record_metadata: bool = False
    max_bytes: int | None = None
    """Read only the batches within the first max_bytes bytes (no invalid-bytes report)."""


def dump_log(data: Buffer, name: str, base_offset: int, options: LogOptions,
             findings: Findings, file_key: str) -> Iterator[Line]:
    """The lines for a segment's bytes: one per batch, and per record with deep iteration;
    a torn or garbled tail ends the walk and is reported as invalid bytes."""
    yield Line("log", {"startingOffset": base_offset})
    end = len(data) if options.max_bytes is None else min(len(data), options.max_bytes)
    valid_bytes = 0
    previous_offset: int | None = None
    deep = options.deep_iteration or options.print_data
    for info in iter_batches(data, 0, end):
        if info.magic != MAGIC:
            break
        batch = data[info.position:info.end]
        yield batch_line(info, batch_is_valid(batch, info))
        if deep:
            lines, offsets = record_lines(batch, info, options)
            yield from lines
            for offset in offsets:
                if previous_offset is not None and offset != previous_offset + 1:
                    findings.add("non-consecutive", file_key, (previous_offset, offset))
                previous_offset = offset
        valid_bytes = info.end
    trailing = len(data) - valid_bytes
    if trailing and options.max_bytes is None:
        yield Line("invalid-bytes", {"invalidBytes": trailing, "file": name})


def batch_is_valid(batch: Buffer, info: BatchInfo) -> bool:
    """Whether the batch passes the broker's checks of a stored batch (CRC32C included)."""
    try:
        validate_batches(batch, info.size, from_client=False)
    except InvalidRecordsError:
        return False
    return True


def batch_line(info: BatchInfo, valid: bool) -> Line:
    last_seq = NO_SEQUENCE if info.base_sequence < 0 else last_sequence(info)
    return Line("batch", {
        "baseOffset": info.base_offset,
        "lastOffset": info.last_offset,
        "count": info.record_count,
        "baseSequence": info.base_sequence,
        "lastSequence": last_seq,
        "producerId": info.producer_id,
        "producerEpoch": info.producer_epoch,
        "partitionLeaderEpoch": info.partition_leader_epoch,
        "isTransactional": info.is_transactional,
        "isControl": info.is_control,
        "deleteHorizonMs": OptionalLong(info.delete_horizon_ms),
        "position": info.position,
        TIMESTAMP_TYPES[info.timestamp_type]: info.max_timestamp,
        "size": info.size,
        "magic": info.magic,
        "compresscodec": CODECS.get(info.compression, f"unknown({info.compression})"),
        "crc": info.crc,
        "isvalid": valid,
    })


def record_lines(batch: Buffer, info: BatchInfo, options: LogOptions
                 ) -> tuple[list[Line], list[int]]:
    """A line per record of the batch, and the records' offsets."""
    try:
        records = decode_records(batch)
    except InvalidRecordsError as error:
        return [Line("undecodable", {"error": error.message})], []
    control: dict[str, object] = {}
    if info.is_control:
        try:
            marker, coordinator_epoch = read_marker(batch)
            control = {"endTxnMarker": marker.name, "coordinatorEpoch": coordinator_epoch}
        except InvalidRecordsError:
            control = {"controlType": "UNKNOWN"}
    timestamp_name = TIMESTAMP_TYPES[info.timestamp_type]
    lines = []
    for record in records:
        fields: dict[str, object] = {}
        if not options.skip_record_metadata:
            fields["offset"] = record.offset
            fields[timestamp_name] = record.timestamp
            fields["keySize"] = -1 if record.key is None else len(record.key)
            fields["valueSize"] = -1 if record.value is None else len(record.value)
            fields["sequence"] = (NO_SEQUENCE if info.base_sequence < 0 else
                                  (info.base_sequence + record.offset - info.base_offset)
                                  % SEQUENCE_MODULUS)
            fields["headerKeys"] = [key for key, _ in record.headers]
            fields.update(control)
        if options.print_data and not info.is_control:
            if record.key is not None:
                fields["key"] = record.key.decode(errors="replace")
            if record.value is not None:
                fields["payload"] = record.value.decode(errors="replace")
        lines.append(Line("record", fields))
    return lines, [record.offset for record in records]


def dump_offset_index(entries: Sequence[tuple[int, int]], log: Buffer, *, base_offset: int,
                      file: str, verify_only: bool, findings: Findings) -> Iterator[Line]:
    """An `.index`'s (offset, position) entries; each must name the last offset of the batch
    starting at its position, and offsets must increase."""
    if not entries:
        yield Line("index-empty", {"file": file})
        return
    batch_starts = {info.position: info.last_offset for info in iter_batches(log)}
    previous: int | None = None
    for i, (offset, position) in enumerate(entries):
        if i > 0 and offset == base_offset:
            return  # the zeroed tail of a preallocated (Kafka) index
        log_offset = batch_starts.get(position, -1)
        if log_offset != offset:
            findings.add("index-mismatch", file, (offset, log_offset))
        if previous is not None and offset <= previous:
            findings.add("index-out-of-order", file, (offset, previous))
        if not verify_only:
            yield Line("offset-index-entry", {"offset": offset, "position": position})
        previous = offset


def dump_time_index(entries: Sequence[tuple[int, int]], log: Buffer, *, base_offset: int,
                    file: str, verify_only: bool, findings: Findings) -> Iterator[Line]:
    """A `.timeindex`'s (timestamp, offset) entries; each must name the last offset of a
    batch whose largest record timestamp it holds, and timestamps must increase."""
    batches = list(iter_batches(log))
    last_offsets = [info.last_offset for info in batches]
    previous = NO_TIMESTAMP
    for i, (timestamp, offset) in enumerate(entries):
        if i > 0 and offset == base_offset:
            return
        found = bisect.bisect_left(last_offsets, offset)
        if found == len(batches):
            findings.add("offset-not-found", file, (offset, -1))
        elif batches[found].last_offset != offset:
            findings.add("offset-not-found", file, (offset, batches[found].last_offset))
        else:
            info = batches[found]
            log_timestamp = _max_record_timestamp(log[info.position:info.end])
            if log_timestamp != timestamp:
                findings.add("timestamp-mismatch", file, (timestamp, log_timestamp))
            if previous >= timestamp:
                findings.add("timestamp-out-of-order", file, (timestamp, previous))
        if not verify_only:
            yield Line("time-index-entry", {"timestamp": timestamp, "offset": offset})
        previous = timestamp


def _max_record_timestamp(batch: Buffer) -> int:
    try:
        return max((record.timestamp for record in decode_records(batch)), default=NO_TIMESTAMP)
    except InvalidRecordsError:
        return NO_TIMESTAMP


def dump_txn_index(entries: Sequence[AbortedTxn]) -> Iterator[Line]:
    for entry in entries:
        yield Line("aborted-txn", {
            "version": TXN_INDEX_VERSION,
            "producerId": entry.producer_id,
            "firstOffset": entry.first_offset,
            "lastOffset": entry.last_offset,
            "lastStableOffset": entry.last_stable_offset,
        })


def dump_producer_snapshot(state: ProducerStateManager) -> Iterator[Line]:
    """A line per producer; the fields of its last batch when the snapshot has one."""
    for entry in state.producers.values():
        fields: dict[str, object] = {
            "producerId": entry.producer_id,
            "producerEpoch": entry.epoch,
            "coordinatorEpoch": entry.coordinator_epoch,
            "currentTxnFirstOffset": OptionalLong(entry.current_txn_first_offset),
            "lastTimestamp": entry.last_timestamp,
        }
        if entry.batches:
            last = entry.batches[-1]
            fields.update({
                "firstSequence": last.first_seq,
                "lastSequence": last.last_seq,
                "lastOffset": last.last_offset,
                "offsetDelta": last.last_offset - last.first_offset,
                "timestamp": last.timestamp,
            })
        yield Line("producer", fields)
