"""`odradek produce`: kafka-console-producer.sh on confluent-kafka. Each line of standard
input is a record, read as Kafka's LineMessageReader reads it (`--format text`) or as a
JSON object (`--format json`, see `odradek.cli.tools.record_lines`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from odradek.cli.tools.common import (
    QUIET_CLIENT,
    ToolError,
    add_client_options,
    client_properties,
    describe_kafka_error,
    librdkafka_config,
    runs,
)
from odradek.cli.tools.record_lines import LineReader, ProducerRecord, parse_json, split_property
from odradek.cli.tools.wire import check_login

TOOL = "produce"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PARTITION_ANY = -1
"""librdkafka's 'unassigned partition': its partitioner chooses."""


def add_produce_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "produce", help="produce standard input's lines to a topic (kafka-console-producer)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read records from standard input, one a line, and produce them to a "
                    "topic.\n\n--property keys (--format text), as Kafka's LineMessageReader:\n"
                    "  parse.key=false  key.separator=\\t  parse.headers=false\n"
                    "  headers.delimiter=\\t  headers.separator=,  headers.key.separator=:\n"
                    "  null.marker=<unset>  ignore.error=false\n"
                    "Line layout: [h1:v1,h2:v2<delimiter>][key<separator>]value")
    add_client_options(parser, tabular=False)
    parser.add_argument("--producer.config", dest="command_config", type=Path, metavar="FILE",
                        help="the same as --command-config")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (Kafka's line format, default) or json (one object a line)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a line reader property (repeatable; text format)")
    parser.add_argument("--producer-property", action="append", default=[],
                        metavar="KEY=VALUE", help="a producer config (repeatable)")
    parser.add_argument("--request-required-acks", metavar="ACKS",
                        help="the producer's acks (default -1, all in-sync replicas)")
    parser.add_argument("--compression-codec", nargs="?", const="gzip", choices=CODECS,
                        help="none (default), gzip (without a value), snappy, lz4 or zstd")
    parser.add_argument("--sync", action="store_true",
                        help="send each record alone and wait for its acknowledgement")
    parser.add_argument("--partition", type=int,
                        help="the partition of every record (default: the partitioner's "
                             "choice; a JSON record's own partition wins)")
    parser.set_defaults(run=runs(TOOL, produce))


def producer_config(args: argparse.Namespace) -> dict[str, str]:
    """The config file, then --producer-property, then the explicit flags, as Kafka's console
    producer layers them; --timeout bounds each record's delivery unless a config does."""
    config = {**QUIET_CLIENT, **client_properties(args)}
    config.update(split_property(item) for item in args.producer_property)
    config["bootstrap.servers"] = args.bootstrap_server
    config.setdefault("client.id", "console-producer")
    if args.request_required_acks is not None:
        config["acks"] = args.request_required_acks
    config.setdefault("acks", "-1")
    if args.compression_codec is not None:
        config["compression.type"] = args.compression_codec
    if "delivery.timeout.ms" not in config:
        config.setdefault("message.timeout.ms", str(int(args.timeout * 1000)))
    return librdkafka_config(config)


def record_parser(args: argparse.Namespace) -> Callable[[bytes, int], ProducerRecord]:
    properties = dict(split_property(item) for item in args.property)
    if args.format == "json":
        if properties:
            raise ToolError("--property applies to --format text only")
        return parse_json
    return LineReader.from_properties(properties).parse


def input_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Numbered lines without their line ending (\\n or \\r\\n, as Java's readLine)."""
    for number, line in enumerate(stream, 1):
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        yield number, line


class Deliveries:
    """Delivery reports: how many records were sent, and which failed."""

    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0
        self.first_error: Any = None

    def report(self, error: Any, _message: Any) -> None:
        if error is not None:
            self.failed += 1
            self.first_error = self.first_error or error

    def check(self, undelivered: int = 0) -> None:
        if self.failed:
            raise ToolError(f"{self.failed} of {self.sent} records failed delivery: "
                            f"{describe_kafka_error(self.first_error)}")
        if undelivered:
            raise ToolError(f"{undelivered} of {self.sent} records were not delivered in time")


def produce(args: argparse.Namespace) -> None:
    from confluent_kafka import KafkaException, Producer

    parse = record_parser(args)
    config = producer_config(args)
    check_login(config, args.bootstrap_server, args.timeout)
    try:
        producer = Producer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise ToolError(f"invalid producer configuration: {describe_kafka_error(error)}"
                        ) from None
    deliveries = Deliveries()
    default_partition = PARTITION_ANY if args.partition is None else args.partition
    try:
        for number, line in input_lines(sys.stdin.buffer):
            if args.format == "json" and not line.strip():
                continue
            record = parse(line, number)
            partition = default_partition if record.partition is None else record.partition
            _send(producer, args.topic, record, partition, deliveries)
            if args.sync:
                producer.flush()
                deliveries.check()
    finally:
        undelivered = producer.flush(args.timeout + 5)
    deliveries.check(undelivered)


def _send(producer: Any, topic: str, record: ProducerRecord, partition: int,
          deliveries: Deliveries) -> None:
    while True:
        try:
            producer.produce(topic, value=record.value, key=record.key, partition=partition,
                             timestamp=record.timestamp or 0,
                             headers=list(record.headers) or None,
                             on_delivery=deliveries.report)
            break
        except BufferError:
            producer.poll(0.1)
    deliveries.sent += 1
    producer.poll(0)
