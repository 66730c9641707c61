"""`odradek produce` and `odradek consume` as subprocesses against a real `odradek dev`,
checked with confluent-kafka's own producer, consumer and admin client."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions as GroupPartitions
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    create_topic,
    produce_confluent,
    read_confluent,
    unique,
)
from tests.integration.tool_runs import one_line_failure
from tests.waiting import wait_until

UNREACHABLE = "127.0.0.1:1"
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}
"""New groups get their partitions at once, not after Kafka's 3 s initial rebalance delay."""


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*ODRADEK, *args], input=stdin, capture_output=True, timeout=90)


def produce(broker: BrokerProcess, topic: str, *args: str, stdin: bytes
            ) -> subprocess.CompletedProcess[bytes]:
    return run("produce", "--bootstrap-server", broker.bootstrap, "--topic", topic, *args,
               stdin=stdin)


def consume(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`odradek consume`; --timeout-ms only bounds a test that would otherwise hang."""
    return run("consume", "--bootstrap-server", broker.bootstrap, "--timeout-ms", "20000",
               *args)


def succeeded(result: subprocess.CompletedProcess[bytes]) -> bytes:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def processed(result: subprocess.CompletedProcess[bytes]) -> int:
    (line,) = [line for line in result.stderr.decode().splitlines()
               if line.startswith("Processed a total of ")]
    return int(line.split()[4])




def consume_while_producing(broker: BrokerProcess, args: list[str],
                            produce_one: Callable[[], None]) -> bytes:
    """Start `odradek consume`, then produce one record at a time until it exits: a consumer
    starting at the end sees the records produced once it is positioned, whenever that is."""
    command = [*ODRADEK, "consume", "--bootstrap-server", broker.bootstrap,
               "--timeout-ms", "20000", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def produce_and_wait() -> None:
        produce_one()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.2)

    try:
        wait_until(lambda: process.poll() is not None, 60,
                   "the consumer to see a new record and exit", between=produce_and_wait)
        stdout, stderr = process.communicate()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr.decode()
    return stdout


# --- text format ------------------------------------------------------------------------------


def test_text_lines_with_keys_headers_and_null_marker_round_trip(broker: BrokerProcess
                                                                  ) -> None:
    topic = create_topic(broker.bootstrap, unique("console-text"))
    lines = [b"h1:a,h1:b\tk1\tv1", b"h2:NULL\tNULL\tv2", b"NULL\tk3\tNULL"]
    result = produce(broker, topic, "--property", "parse.key=true", "--property",
                     "parse.headers=true", "--property", "null.marker=NULL",
                     stdin=b"\n".join(lines) + b"\r\n")
    succeeded(result)
    stored = [(r.key, r.value, r.headers) for r in read_confluent(broker.bootstrap, topic)]
    assert stored == [(b"k1", b"v1", (("h1", b"a"), ("h1", b"b"))),
                      (None, b"v2", (("h2", None),)),
                      (b"k3", None, ())]

    printed = succeeded(consume(broker, "--topic", topic, "--from-beginning",
                                "--max-messages", "3", "--property", "print.key=true",
                                "--property", "print.headers=true",
                                "--property", "null.literal=NULL"))
    assert printed.splitlines() == [lines[0], lines[1], b"NO_HEADERS\tk3\tNULL"]


def test_consume_prints_kafkas_fields(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-fields"), partitions=2)
    produce_confluent(broker.bootstrap, topic, [Out(b"k", b"v", 1_234_567, partition=1)])
    result = consume(broker, "--topic", topic, "--partition", "1", "--offset", "earliest",
                     "--max-messages", "1", "--property", "print.timestamp=true",
                     "--property", "print.partition=true", "--property", "print.offset=true",
                     "--property", "print.key=true", "--property", "key.separator= | ")
    assert succeeded(result) == b"CreateTime:1234567 | Partition:1 | Offset:0 | k | v\n"
    assert processed(result) == 1


def test_produce_flags_reach_the_producer(broker: BrokerProcess, tmp_path: Path) -> None:
    topic = create_topic(broker.bootstrap, unique("console-flags"), partitions=3)
    config = tmp_path / "producer.properties"
    config.write_text("linger.ms=0\n")
    succeeded(produce(broker, topic, "--partition", "2", "--sync", "--compression-codec",
                      "--request-required-acks", "1", "--producer-property", "batch.size=1000",
                      "--command-config", str(config), stdin=b"a\nb\n"))
    records = read_confluent(broker.bootstrap, topic, partitions=(0, 1, 2))
    assert [(r.partition, r.value) for r in records] == [(2, b"a"), (2, b"b")]


def test_a_config_file_is_read(broker: BrokerProcess, tmp_path: Path) -> None:
    config = tmp_path / "bad.properties"
    config.write_text("no.such.property=1\n")
    for option in ("--command-config", "--producer.config"):
        result = produce(broker, unique("unused"), option, str(config), stdin=b"x\n")
        assert "no.such.property" in one_line_failure(result, "produce")


# --- JSON lines -------------------------------------------------------------------------------


def test_json_lines_copy_a_topic_exactly(broker: BrokerProcess) -> None:
    source = create_topic(broker.bootstrap, unique("console-json"), partitions=2)
    copy = create_topic(broker.bootstrap, unique("console-json-copy"), partitions=2)
    every_byte = bytes(range(256))
    outs = [
        Out(every_byte, every_byte[::-1], 1_000_000_000_000, partition=0),
        Out(None, "héllo wörld\n".encode(), 1_000_000_000_001,
            (("dup", b"1"), ("dup", b"\xff\xfe"), ("none", None), ("dup", b"")), partition=1),
        Out(b"", b"", 1_000_000_000_002, partition=1),
        Out(b"k", None, 1_500_000_000_000, (("only", None),), partition=0),
    ]
    originals = produce_confluent(broker.bootstrap, source, outs)

    dumped = succeeded(consume(broker, "--topic", source, "--from-beginning", "--format",
                               "json", "--max-messages", str(len(outs))))
    objects = [json.loads(line) for line in dumped.splitlines()]
    first = next(o for o in objects if o["partition"] == 0 and o["offset"] == 0)
    assert first["key"] == {"base64": base64.b64encode(every_byte).decode()}
    assert first["timestamp"] == 1_000_000_000_000 and first["timestampType"] == "CreateTime"
    second = next(o for o in objects if o["partition"] == 1 and o["offset"] == 0)
    assert second["key"] is None and second["value"] == "héllo wörld\n"
    assert second["headers"] == [["dup", "1"], ["dup", {"base64": "//4="}], ["none", None],
                                 ["dup", ""]]

    succeeded(produce(broker, copy, "--format", "json", stdin=dumped))
    copied = read_confluent(broker.bootstrap, copy, partitions=(0, 1))
    assert copied == read_confluent(broker.bootstrap, source, partitions=(0, 1))
    assert copied == sorted(originals, key=lambda r: (r.partition, r.offset))


def test_a_malformed_json_line_fails_after_the_lines_before_it(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-bad-json"))
    result = produce(broker, topic, "--format", "json",
                     stdin=b'{"value": "ok"}\n\n{"value": "x"\n{"value": "never"}\n')
    assert "line 3 is not valid JSON" in one_line_failure(result, "produce")
    assert [r.value for r in read_confluent(broker.bootstrap, topic)] == [b"ok"]


# --- where consumption starts and ends --------------------------------------------------------


def test_consume_starts_at_the_end_unless_from_beginning(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-latest"))
    produce_confluent(broker.bootstrap, topic, [Out(None, b"old", 0)])

    def produce_new() -> None:
        produce_confluent(broker.bootstrap, topic, [Out(None, b"new", 0)])

    latest = consume_while_producing(broker, ["--topic", topic, "--max-messages", "1"],
                                     produce_new)
    assert latest == b"new\n"
    earliest = consume(broker, "--topic", topic, "--from-beginning", "--max-messages", "1")
    assert succeeded(earliest) == b"old\n"


def test_partition_and_offset(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-offset"), partitions=2)
    produce_confluent(broker.bootstrap, topic,
                      [Out(None, f"p{p}-{i}".encode(), 0, partition=p)
                       for p in (0, 1) for i in range(5)])

    def values(*args: str) -> list[bytes]:
        return succeeded(consume(broker, "--topic", topic, "--partition", "1", *args)
                         ).splitlines()

    assert values("--offset", "2", "--max-messages", "3") == [b"p1-2", b"p1-3", b"p1-4"]
    assert values("--offset", "earliest", "--max-messages", "2") == [b"p1-0", b"p1-1"]
    assert values("--from-beginning", "--max-messages", "1") == [b"p1-0"]

    def produce_new() -> None:
        produce_confluent(broker.bootstrap, topic, [Out(None, b"p1-new", 0, partition=1)])

    latest = consume_while_producing(
        broker, ["--topic", topic, "--partition", "1", "--offset", "latest",
                 "--max-messages", "1"], produce_new)
    assert latest == b"p1-new\n"


def test_include_consumes_every_matching_topic(broker: BrokerProcess) -> None:
    prefix = unique("console-include")
    for name in ("a", "b", "other"):
        topic = create_topic(broker.bootstrap, f"{prefix}-{name}")
        produce_confluent(broker.bootstrap, topic, [Out(None, name.encode(), 0)])
    result = consume(broker, "--include", f"{prefix}-(a|b)", "--from-beginning",
                     "--format", "json", "--max-messages", "2")
    topics = sorted(json.loads(line)["topic"] for line in succeeded(result).splitlines())
    assert topics == [f"{prefix}-a", f"{prefix}-b"]


def test_max_messages_stops_and_counts(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-max"))
    produce_confluent(broker.bootstrap, topic, [Out(None, b"%d" % i, 0) for i in range(10)])
    result = consume(broker, "--topic", topic, "--from-beginning", "--max-messages", "4")
    assert succeeded(result).splitlines() == [b"0", b"1", b"2", b"3"]
    assert processed(result) == 4


def test_timeout_ms_ends_a_quiet_consumer(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-quiet"))
    produce_confluent(broker.bootstrap, topic, [Out(None, b"only", 0)])
    result = run("consume", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                 "--partition", "0", "--offset", "earliest", "--timeout-ms", "1000")
    assert succeeded(result) == b"only\n"
    assert processed(result) == 1


def test_a_group_commits_what_it_consumed(broker: BrokerProcess, tmp_path: Path) -> None:
    topic = create_topic(broker.bootstrap, unique("console-group"))
    group = unique("console-group")
    produce_confluent(broker.bootstrap, topic, [Out(None, b"%d" % i, 0) for i in range(5)])
    first = consume(broker, "--topic", topic, "--group", group, "--from-beginning",
                    "--max-messages", "3")
    assert succeeded(first).splitlines() == [b"0", b"1", b"2"]

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    request = [GroupPartitions(group, [TopicPartition(topic, 0)])]
    committed = admin.list_consumer_group_offsets(request)[group].result(TIMEOUT)
    assert [(tp.partition, tp.offset) for tp in committed.topic_partitions] == [(0, 3)]

    config = tmp_path / "consumer.properties"
    config.write_text(f"group.id={group}\n")
    rest = consume(broker, "--topic", topic, "--consumer.config", str(config),
                   "--max-messages", "2")
    assert succeeded(rest).splitlines() == [b"3", b"4"]


def test_isolation_level_read_committed_hides_aborted_records(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("console-txn"))
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": unique("console-txn")})
    producer.init_transactions(TIMEOUT)
    for values, commit in (((b"c1", b"c2"), True), ((b"aborted",), False), ((b"c3",), True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value, partition=0)
        producer.flush(TIMEOUT)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)

    def values(level: str, count: int) -> list[bytes]:
        return succeeded(consume(broker, "--topic", topic, "--partition", "0", "--offset",
                                 "earliest", "--isolation-level", level, "--max-messages",
                                 str(count))).splitlines()

    assert values("read_committed", 3) == [b"c1", b"c2", b"c3"]
    assert values("read_uncommitted", 4) == [b"c1", b"c2", b"aborted", b"c3"]


# --- failures ---------------------------------------------------------------------------------


def test_consuming_an_unknown_topic_fails(broker: BrokerProcess) -> None:
    result = run("consume", "--bootstrap-server", broker.bootstrap, "--topic",
                 unique("console-missing"), "--timeout-ms", "1000")
    assert "does not exist" in one_line_failure(result, "consume")


def test_an_unreachable_bootstrap_server_fails_in_one_line() -> None:
    consumed = run("consume", "--bootstrap-server", UNREACHABLE, "--topic", "t",
                   "--timeout", "2")
    one_line_failure(consumed, "consume")
    produced = run("produce", "--bootstrap-server", UNREACHABLE, "--topic", "t",
                   "--timeout", "2", stdin=b"x\n")
    assert "1 of 1 records failed delivery" in one_line_failure(produced, "produce")


@pytest.mark.parametrize(("args", "message"), [
    (["--topic", "t", "--offset", "1"], "--offset needs --partition"),
    (["--include", "t", "--partition", "0"], "--partition needs --topic"),
    (["--topic", "t", "--partition", "0", "--offset", "-1"], "the offset '-1' is incorrect"),
    (["--topic", "t", "--partition", "0", "--group", "g"], "cannot be used together"),
    (["--topic", "t", "--group", "g", "--consumer-property", "group.id=h"], "do not match"),
    (["--topic", "t", "--property", "print.keys=true"], "unknown formatter property"),
    (["--topic", "t", "--format", "json", "--property", "print.key=true"], "text only"),
])
def test_bad_consume_arguments(broker: BrokerProcess, args: list[str], message: str) -> None:
    result = run("consume", "--bootstrap-server", broker.bootstrap, *args)
    assert message in one_line_failure(result, "consume")


def test_bad_produce_properties(broker: BrokerProcess) -> None:
    result = produce(broker, "t", "--property", "headers.separator=:", stdin=b"")
    assert "headers.separator and headers.key.separator" in one_line_failure(result, "produce")
    result = produce(broker, "t", "--property", "parse.key=true", stdin=b"no separator\n")
    assert "no key separator found on line 1" in one_line_failure(result, "produce")
