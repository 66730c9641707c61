"""The on-disk format, both ways. Kafka's own kafka-dump-log (DumpLogSegments) reads the
segments, indexes, transaction index and producer snapshot an Odradek broker wrote (every
codec, a transaction committed and one aborted, a compacted log), and what it prints agrees
with what was produced; its offsets and transaction-log decoders read the coordinators'
records in `__consumer_offsets` and `__transaction_state`. `odradek dump-log` reads the
files a real Apache Kafka broker wrote and prints what Kafka's tool prints on them. Both
tools run on both brokers' files, and their outputs must be equal line for line.

Kafka's tool runs in one JVM for every file (`kafka_tools.run_tools`)."""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.integration.apache_kafka import ApacheKafka
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import (
    Out,
    Rec,
    confluent_consumer,
    create_topic,
    now_ms,
    produce_confluent,
    read_confluent,
    receive,
)
from tests.integration.jvm.kafka_tools import DUMP_LOG, Outcome, Step, run_tools
from tests.integration.test_compaction import (
    COMPACTED,
    FAST_CLEANER,
    SMALL_BATCHES,
    compacted_exactly,
    roll_active_segment,
)
from tests.integration.test_tools_dump_log import produce_committed_then_aborted
from tests.waiting import wait_until

FIRST = "00000000000000000000"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DUMP_OPTIONS = ("--deep-iteration", "--print-data-log")
GROUPS = {"classic": "dump-classic", "consumer": "dump-consumer"}
"""A group of each protocol, each committing offset 7 of `codecs`."""
PARTITION_METADATA = "4"
"""ConsumerGroupPartitionMetadata: Odradek still writes it, Kafka 4.1 and later keep a hash of
the subscribed topics' metadata instead (KIP-1101) and read it only."""
DECODERS = {"__consumer_offsets": "--offsets-decoder",
            "__transaction_state": "--transaction-log-decoder"}
RECORD_LINE = re.compile(r"\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) "
                         r"valueSize: (-?\d+) sequence: (-?\d+) headerKeys: \[(.*?)\]"
                         r"(?: key: (.*?))?(?: payload: (.*))?$")


@dataclass
class Written:
    """What a broker was given: each topic's records as a consumer reads them back."""
    log_dir: Path
    codecs: list[Rec]
    transactional: list[Rec]
    compacted: list[Rec] | None


def produce_codecs(bootstrap: str, topic: str) -> None:
    """Ten keyed records with a header in each codec, on one partition."""
    for codec in CODECS:
        stamp = now_ms()
        outs = [Out(f"{codec}-k{i}".encode(), f"{codec}-value-{i}-".encode() * 5, stamp + i,
                    (("codec", codec.encode()),), partition=0) for i in range(10)]
        produce_confluent(bootstrap, topic, outs,
                          {"compression.type": codec, "linger.ms": 20,
                           "enable.idempotence": True})


def produce_compacted(bootstrap: str, topic: str) -> list[Rec]:
    """Twenty keys overwritten many times, compacted; the records that are left."""
    stamp = now_ms()
    outs = [Out(f"key-{i % 20}".encode(), f"v{i}".encode() * 20, stamp) for i in range(400)]
    acked = produce_confluent(bootstrap, topic, outs, SMALL_BATCHES)
    acked.append(roll_active_segment(bootstrap, topic, 1000))
    wait_until(lambda: compacted_exactly(bootstrap, topic, acked), 90, "compaction",
               interval=0.5)
    return read_confluent(bootstrap, topic)


def commit_in_groups(bootstrap: str, topic: str) -> None:
    """A member of each group protocol joins, reads and commits offset 7, then leaves: the
    group coordinator's records of both protocols, and an offset commit."""
    for protocol, group in GROUPS.items():
        consumer = confluent_consumer(bootstrap, **{
            "group.id": group, "group.protocol": protocol, "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([topic])
            receive(consumer, 1)
            consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        finally:
            consumer.close()


def odradek_writes(root: Path) -> Written:
    """An Odradek broker's files: every codec, transactions, a compacted log."""
    broker = BrokerProcess(root / "data", root / "broker.log",
                           {**FAST_CLEANER, "log.index.interval.bytes": "200"})
    broker.start()
    try:
        bootstrap = broker.bootstrap
        for topic in ("codecs", "txn"):
            create_topic(bootstrap, topic)
        create_topic(bootstrap, "compacted", config={**COMPACTED, "segment.ms": "1000"})
        produce_codecs(bootstrap, "codecs")
        produce_committed_then_aborted(bootstrap, "txn")
        commit_in_groups(bootstrap, "codecs")
        compacted = produce_compacted(bootstrap, "compacted")
        return Written(broker.data_dir, read_confluent(bootstrap, "codecs"),
                       read_confluent(bootstrap, "txn"), compacted)
    finally:
        broker.stop()  # the producer snapshots are written as the logs close


def kafka_writes(root: Path) -> Written:
    """Apache Kafka's files: every codec and transactions."""
    kafka = ApacheKafka(root / "data", root / "kafka.log",
                        overrides={"log.index.interval.bytes": "200"})
    kafka.start()
    try:
        bootstrap = kafka.bootstrap
        for topic in ("codecs", "txn"):
            create_topic(bootstrap, topic)
        produce_codecs(bootstrap, "codecs")
        produce_committed_then_aborted(bootstrap, "txn")
        commit_in_groups(bootstrap, "codecs")
        return Written(kafka.data_dir / "logs", read_confluent(bootstrap, "codecs"),
                       read_confluent(bootstrap, "txn"), None)
    finally:
        if kafka.alive():
            kafka.stop()  # a controlled shutdown writes the producer snapshots


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Written]:
    """Both brokers' files, written side by side."""
    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(odradek_writes, tmp_path_factory.mktemp("dump-odradek"))
        theirs = pool.submit(kafka_writes, tmp_path_factory.mktemp("dump-kafka"))
        return {"odradek": ours.result(), "kafka": theirs.result()}


def dump_files(written: Written) -> dict[str, list[Path]]:
    """The files to dump, by a name for each run."""
    files: dict[str, list[Path]] = {}
    topics = ["codecs", "txn"] + (["compacted"] if written.compacted is not None else [])
    for topic in topics:
        directory = written.log_dir / f"{topic}-0"
        files[f"{topic}-log"] = sorted(directory.glob("*.log"))
        files[f"{topic}-indexes"] = sorted([*directory.glob("*.index"),
                                            *directory.glob("*.timeindex")])
        files[f"{topic}-snapshot"] = sorted(directory.glob("*.snapshot"))
    files["txn-txnindex"] = sorted((written.log_dir / "txn-0").glob("*.txnindex"))
    return files


def odradek_dump(paths: list[Path]) -> Outcome:
    run = subprocess.run([*ODRADEK, "dump-log", *DUMP_OPTIONS, "--files",
                          ",".join(map(str, paths))],
                         capture_output=True, text=True, timeout=120)
    return Outcome("odradek dump-log", run.returncode, run.stdout, run.stderr)


@dataclass
class Dumps:
    """Each tool's output on each run's files."""
    kafka: dict[str, Outcome]
    odradek: dict[str, Outcome]


@pytest.fixture(scope="module")
def dumps(written: dict[str, Written]) -> dict[str, Dumps]:
    """Kafka's tool on both brokers' files in one JVM; Odradek's alongside."""
    files = {(side, name): paths for side, done in written.items()
             for name, paths in dump_files(done).items()}
    assert all(files.values()), files
    steps = [Step(f"{side}/{name}", DUMP_LOG,
                  [*DUMP_OPTIONS, "--files", ",".join(map(str, paths))])
             for (side, name), paths in files.items()]
    steps += [Step(f"{side}/{topic}", DUMP_LOG, [
        decoder, "--files", ",".join(map(str, internal_segments(done.log_dir, topic)))])
        for side, done in written.items() for topic, decoder in DECODERS.items()]
    with ThreadPoolExecutor(2) as pool:
        ours = {key: pool.submit(odradek_dump, paths) for key, paths in files.items()}
        kafkas = run_tools(steps)
        return {side: Dumps({name: kafkas[f"{side}/{name}"]
                             for name in [*(n for (s, n) in files if s == side), *DECODERS]},
                            {name: ours[(s, name)].result() for (s, name) in files if s == side})
                for side in written}


def internal_segments(log_dir: Path, topic: str) -> list[Path]:
    """The non-empty segments of an internal topic's partitions."""
    segments = sorted(p for p in log_dir.glob(f"{topic}-*/*.log") if p.stat().st_size)
    assert segments, f"no {topic} records in {log_dir}"
    return segments


DECODED = re.compile(r"\| offset: (\d+) .*? key: (\{.*?\}) payload: (.*)$")


def decoded(out: Outcome) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each record's key and value as Kafka's decoder printed them (JSON; a tombstone's
    value is None)."""
    found = []
    for line in out.lines:
        match = DECODED.search(line)
        if match:
            payload = match[3].strip()
            found.append((json.loads(match[2]),
                          None if payload in ("", "<DELETE>") else json.loads(payload)))
    return found


def records(out: Outcome) -> list[tuple[int, str | None, str | None, str]]:
    """Offset, key, payload and header keys of each record line."""
    found = []
    for line in out.lines:
        match = RECORD_LINE.match(line)
        if match:
            found.append((int(match[1]), match[7], match[8], match[6]))
    return found


def test_kafkas_tool_reads_odradeks_segments_in_every_codec(written: dict[str, Written],
                                                            dumps: dict[str, Dumps]) -> None:
    out = dumps["odradek"].kafka["codecs-log"].ok()
    codecs = re.findall(r" compresscodec: (\w+) ", out.stdout)
    assert set(codecs) == set(CODECS) and "isvalid: false" not in out.stdout
    assert records(out) == [(r.offset, r.key.decode(), r.value.decode(), "codec")
                            for r in written["odradek"].codecs if r.key and r.value]


def test_kafkas_tool_reads_odradeks_transactions(written: dict[str, Written],
                                                 dumps: dict[str, Dumps]) -> None:
    out = dumps["odradek"].kafka["txn-log"].ok()
    markers = re.findall(r"endTxnMarker: (\w+) coordinatorEpoch: \d+", out.stdout)
    assert markers == ["COMMIT", "ABORT"]
    data = [(offset, payload) for offset, _, payload, _ in records(out) if payload]
    committed = [(r.offset, r.value.decode()) for r in written["odradek"].transactional
                 if r.value]
    assert [d for d in data if not d[1].startswith("abort")] == committed
    assert [p for _, p in data if p.startswith("abort")] == ["abort-0", "abort-1", "abort-2"]
    index = dumps["odradek"].kafka["txn-txnindex"].ok().lines
    assert len(index) == 2 and re.fullmatch(
        r"version: 0 producerId: \d+ firstOffset: \d+ lastOffset: \d+ lastStableOffset: \d+",
        index[1])


def test_kafkas_tool_reads_odradeks_snapshots_and_indexes(dumps: dict[str, Dumps]) -> None:
    codec_producers = dumps["odradek"].kafka["codecs-snapshot"].ok().lines[1:]
    assert len(codec_producers) == len(CODECS), "an idempotent producer for each codec"
    assert all(re.match(r"producerId: \d+ producerEpoch: 0 .* firstSequence: 0 "
                        r"lastSequence: 9 ", line) for line in codec_producers)
    transactional = dumps["odradek"].kafka["txn-snapshot"].ok().lines[1:]
    assert any(" coordinatorEpoch: " in line for line in transactional)
    for topic in ("codecs", "txn"):
        indexes = dumps["odradek"].kafka[f"{topic}-indexes"].ok()
        assert "Mismatches" not in indexes.stdout + indexes.stderr
        assert re.search(r"^offset: \d+ position: \d+$", indexes.stdout, re.MULTILINE)
        assert re.search(r"^timestamp: \d+ offset: \d+$", indexes.stdout, re.MULTILINE)


def test_kafkas_tool_reads_odradeks_compacted_log(written: dict[str, Written],
                                                  dumps: dict[str, Dumps]) -> None:
    out = dumps["odradek"].kafka["compacted-log"].ok()
    assert written["odradek"].compacted is not None
    assert [(o, k, p) for o, k, p, _ in records(out) if p] == [
        (r.offset, r.key.decode(), r.value.decode())
        for r in written["odradek"].compacted if r.key and r.value]


def test_odradeks_tool_reads_kafkas_files(written: dict[str, Written],
                                          dumps: dict[str, Dumps]) -> None:
    out = dumps["kafka"].odradek["codecs-log"]
    assert out.exit == 0, out.stderr
    assert records(out) == [(r.offset, r.key.decode(), r.value.decode(), "codec")
                            for r in written["kafka"].codecs if r.key and r.value]


@pytest.mark.parametrize("name", ["codecs-log", "codecs-indexes", "codecs-snapshot",
                                  "txn-log", "txn-indexes", "txn-snapshot", "txn-txnindex"])
def test_both_tools_print_the_same_on_kafkas_files(dumps: dict[str, Dumps], name: str) -> None:
    assert dumps["kafka"].odradek[name].stdout == dumps["kafka"].kafka[name].ok().stdout


@pytest.mark.parametrize("name", ["codecs-log", "codecs-indexes", "codecs-snapshot",
                                  "txn-log", "txn-indexes", "txn-snapshot", "txn-txnindex",
                                  "compacted-log", "compacted-indexes"])
def test_both_tools_print_the_same_on_odradeks_files(dumps: dict[str, Dumps], name: str) -> None:
    assert dumps["odradek"].odradek[name].stdout == dumps["odradek"].kafka[name].ok().stdout


def test_kafkas_decoders_read_odradeks_coordinator_records(dumps: dict[str, Dumps]) -> None:
    """Kafka's OffsetsMessageParser and TransactionLogMessageParser read every record of
    Odradek's `__consumer_offsets` and `__transaction_state`, and find in them every record
    type Kafka's own coordinators write for the same clients."""
    for topic in DECODERS:
        ours, theirs = (dumps[side].kafka[topic].ok() for side in ("odradek", "kafka"))
        assert "Exception" not in ours.stdout + ours.stderr and "Unknown" not in ours.stdout
        records_ = decoded(ours)
        assert len(records_) == len([line for line in ours.lines if "| offset: " in line])
        kinds, kafkas = ({key["type"] for key, _ in found}
                         for found in (records_, decoded(theirs)))
        assert kinds >= kafkas, (ours.stdout, theirs.stdout)
        assert kinds - kafkas <= {PARTITION_METADATA}, (ours.stdout, theirs.stdout)
    offsets = decoded(dumps["odradek"].kafka["__consumer_offsets"])
    commits = {(key["data"]["group"], value["data"]["offset"]) for key, value in offsets
               if key["type"] == "1" and value is not None}
    assert commits == {(group, 7) for group in GROUPS.values()}
    members = [value["data"] for key, value in offsets if key["type"] == "5" and value]
    assert members and all(m["classicMemberMetadata"] is None for m in members), (
        "a consumer-protocol member, not a classic one upgraded")
    statuses = [value["data"]["transactionStatus"] for key, value in
                decoded(dumps["odradek"].kafka["__transaction_state"])
                if value is not None and key["data"]["transactionalId"] == "t-txn"]
    assert statuses == [0, 1, 2, 4, 1, 3, 5], "Empty, then a commit and an abort"
