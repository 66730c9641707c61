"""`odradek dump-log FILES...`: Kafka's kafka-dump-log.sh, offline. Prints log segments
(`.log`), offset and time indexes (`.index`, `.timeindex`, checked against their segment),
transaction indexes (`.txnindex`) and producer snapshots (`.snapshot`), the reader chosen by
the file's extension.

As in Kafka, what the checks find (index mismatches, non-consecutive offsets, a torn tail,
a bad CRC) is reported, not failed on. The exit status is 1 when a file could not be dumped
at all: missing or unreadable, an unknown extension, a corrupt transaction index or producer
snapshot, or an index that fails `--index-sanity-check` (Kafka stops with an exception
there); the other files are still dumped.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from odradek.cli.tools.common import ToolError, runs
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
from odradek.log.index import OffsetIndex, TimeIndex, read_offset_entries, read_time_entries
from odradek.log.producer_snapshots import SNAPSHOT_SUFFIX
from odradek.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from odradek.log.txn_index import CorruptIndexError, TransactionIndex
from odradek.protocol.records import Buffer
from odradek.txn.producer_state import CorruptSnapshotError, ProducerStateManager

TOOL = "dump-log"


class FileError(Exception):
    """One file that cannot be dumped; the others still are."""


def add_dump_log_parser(commands: Any) -> None:
    tool = commands.add_parser(
        TOOL, help="print the contents of log segments, indexes, transaction indexes and "
        "producer snapshots (offline)",
        description="Parse log files and print their contents, as kafka-dump-log.sh does; "
        "useful for debugging a seemingly corrupt segment. Needs no cluster.")
    tool.add_argument("files", nargs="*", metavar="FILE",
                      help="*.log, *.index, *.timeindex, *.txnindex or *.snapshot files")
    tool.add_argument("--files", dest="file_list", metavar="FILE1,FILE2",
                      help="the files as one comma-separated list (Kafka's form)")
    tool.add_argument("--print-data-log", action="store_true",
                      help="print each record's key and payload (implies --deep-iteration)")
    tool.add_argument("--deep-iteration", action="store_true",
                      help="print a line per record, not only per batch")
    tool.add_argument("--skip-record-metadata", action="store_true",
                      help="leave each record's offset, timestamp, sizes and headers out")
    tool.add_argument("--verify-index-only", action="store_true",
                      help="check indexes against their segment without printing entries")
    tool.add_argument("--index-sanity-check", action="store_true",
                      help="only run the check the broker runs at startup to decide whether "
                      "an index needs rebuilding")
    tool.add_argument("--max-bytes", type=_positive, metavar="BYTES",
                      help="read only the batches in the first BYTES bytes of each .log")
    tool.add_argument("--json", action="store_true",
                      help="print JSON lines of the same fields (findings too, on stdout)")
    tool.set_defaults(run=runs(TOOL, dump_files))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def dump_files(args: argparse.Namespace) -> int:
    paths = list(args.files)
    if args.file_list:
        paths += [name.strip() for name in args.file_list.split(",") if name.strip()]
    if not paths:
        raise ToolError("no files given: name them as arguments or with --files")
    emit: Callable[[Line], None] = (
        (lambda line: print(json.dumps(line.json()))) if args.json
        else (lambda line: print(line.text())))
    findings = Findings()
    status = 0
    for name in paths:
        path = Path(name)
        emit(Line("file", {"file": name}))
        try:
            for line in _dump(path, args, findings):
                emit(line)
        except FileError as error:
            sys.stdout.flush()
            print(f"odradek {TOOL}: {name}: {error}", file=sys.stderr)
            status = 1
    if args.json:
        for finding in findings.json():
            print(json.dumps(finding))
    else:
        sys.stdout.flush()
        for text in findings.text():
            print(text, file=sys.stderr)
    return status


def _dump(path: Path, args: argparse.Namespace, findings: Findings) -> Iterator[Line]:
    suffix = path.suffix
    if suffix == LOG_SUFFIX:
        options = LogOptions(deep_iteration=args.deep_iteration, print_data=args.print_data_log,
                             skip_record_metadata=args.skip_record_metadata,
                             max_bytes=args.max_bytes)
        with _mapped(path) as data:
            yield from dump_log(data, path.name, _base_offset(path), options, findings,
                                _key(path))
    elif suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        yield from _dump_index(path, args, findings)
    elif suffix == TXN_INDEX_SUFFIX:
        _read(path)  # the broker's reader takes a missing file for an empty index
        try:
            entries = TransactionIndex(path).entries()
        except CorruptIndexError as error:
            raise FileError(f"corrupt transaction index: {error}") from None
        yield from dump_txn_index(entries)
    elif suffix == SNAPSHOT_SUFFIX:
        try:
            state = ProducerStateManager.from_snapshot(_read(path))
        except CorruptSnapshotError as error:
            raise FileError(f"corrupt producer snapshot: {error}") from None
        yield from dump_producer_snapshot(state)
    else:
        raise FileError(f"unknown file type {suffix or '(no extension)'!r}; expected "
                        f"{', '.join((LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX))}, "
                        f"{TXN_INDEX_SUFFIX} or {SNAPSHOT_SUFFIX}")


def _dump_index(path: Path, args: argparse.Namespace, findings: Findings) -> Iterator[Line]:
    base_offset = _base_offset(path)
    log_path = path.with_name(path.name.split(".")[0] + LOG_SUFFIX)
    data = _read(path)
    is_offset_index = path.suffix == INDEX_SUFFIX
    if is_offset_index:
        offsets, positions = read_offset_entries(data)
        entries = [(base_offset + o, p) for o, p in zip(offsets, positions, strict=True)]
    else:
        timestamps, time_offsets = read_time_entries(data)
        entries = [(t, base_offset + o) for t, o in zip(timestamps, time_offsets, strict=True)]
    if args.index_sanity_check:
        if is_offset_index and not entries:
            yield Line("index-empty", {"file": str(path)})
            return
        log_size = _size(log_path, path)
        intact = (OffsetIndex.load(path, base_offset, log_size) if is_offset_index
                  else TimeIndex.load(path, base_offset)) is not None
        if not intact:
            raise FileError("failed sanity check: entries out of order, pointing past the end "
                            "of the segment, or a partial entry; the broker would rebuild it")
        yield Line("sanity-check", {"file": str(path)})
        return
    dump = dump_offset_index if is_offset_index else dump_time_index
    _size(log_path, path)
    with _mapped(log_path) as log:
        yield from dump(entries, log, base_offset=base_offset, file=_key(path),
                        verify_only=args.verify_index_only, findings=findings)


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise FileError(f"cannot tell the base offset: the name should be <offset>{path.suffix}")
    return int(stem)


def _key(path: Path) -> str:
    """Findings name files by absolute path, as Kafka does."""
    return str(path.absolute())


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise FileError(error.strerror or str(error)) from None


def _size(log_path: Path, index_path: Path) -> int:
    try:
        return log_path.stat().st_size
    except OSError as error:
        raise FileError(f"cannot check {index_path.name} against its segment {log_path.name}: "
                        f"{error.strerror or error}") from None


@contextmanager
def _mapped(path: Path) -> Iterator[Buffer]:
    """The file's bytes, mapped rather than read: segments can be large."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, around the yield
    except OSError as error:
        raise FileError(error.strerror or str(error)) from None
    with file:
        if not os.fstat(file.fileno()).st_size:
            yield b""
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield cast(Buffer, mapped)  # a buffer like bytes, read on demand
