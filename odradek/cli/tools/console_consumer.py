"""`odradek consume`: kafka-console-consumer.sh on confluent-kafka. Records are printed one a
line as Kafka's DefaultMessageFormatter prints them (`--format text`) or as JSON objects
(`--format json`, see `odradek.cli.tools.record_lines`); at exit, "Processed a total of N
messages" goes to standard error."""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from odradek.cli.tools.common import (
    QUIET_CLIENT,
    ToolError,
    add_client_options,
    client_properties,
    describe_kafka_error,
    librdkafka_config,
    runs,
)
from odradek.cli.tools.record_lines import (
    TIMESTAMP_TYPES,
    ConsumerRecord,
    MessageFormatter,
    format_json,
    split_property,
)
from odradek.cli.tools.wire import check_login

TOOL = "consume"
POLL_SECONDS = 0.5
"""The longest a poll blocks, so that Ctrl-C and --timeout-ms are noticed."""


def add_consume_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "consume", help="print a topic's records (kafka-console-consumer)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print records, one a line, until Ctrl-C, --max-messages or "
                    "--timeout-ms.\n\n--property keys (--format text), as Kafka's "
                    "DefaultMessageFormatter:\n"
                    "  print.timestamp print.partition print.offset print.epoch "
                    "print.delivery\n  print.headers print.key (false) print.value (true)\n"
                    "  key.separator=\\t  line.separator=\\n  headers.separator=,  "
                    "null.literal=null")
    add_client_options(parser, tabular=False)
    parser.add_argument("--consumer.config", dest="command_config", type=Path, metavar="FILE",
                        help="the same as --command-config")
    topics = parser.add_mutually_exclusive_group(required=True)
    topics.add_argument("--topic", help="the topic to consume")
    topics.add_argument("--include", metavar="REGEX",
                        help="consume every topic whose whole name matches REGEX")
    parser.add_argument("--partition", type=int,
                        help="consume this partition only (from its end unless --offset or "
                             "--from-beginning)")
    parser.add_argument("--offset", help="with --partition: earliest, latest (default) or an "
                                         "offset")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest record when there is no committed offset")
    parser.add_argument("--group", help="the consumer group (default: a new random one that "
                                        "commits nothing)")
    parser.add_argument("--max-messages", type=int, metavar="N",
                        help="exit after N records")
    parser.add_argument("--timeout-ms", type=int, metavar="MS",
                        help="exit when no record arrives for MS milliseconds")
    parser.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"),
                        help="read_uncommitted (default) or read_committed, which hides "
                             "aborted and open transactions")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (Kafka's formatter, default) or json (one object a line)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a formatter property (repeatable; text format)")
    parser.add_argument("--consumer-property", action="append", default=[],
                        metavar="KEY=VALUE", help="a consumer config (repeatable)")
    parser.set_defaults(run=runs(TOOL, consume))


def start_offset(args: argparse.Namespace) -> int:
    """Where --partition starts: --offset, else the beginning or the end (checked even
    without --partition, so that a bad --offset is reported as such)."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

    if args.offset is None:
        return OFFSET_BEGINNING if args.from_beginning else OFFSET_END
    named = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(args.offset.lower())
    if named is not None:
        return named
    if not args.offset.isdigit():
        raise ToolError(f"the offset {args.offset!r} is incorrect: use earliest, latest or a "
                        f"non-negative number")
    return int(args.offset)


def check_arguments(args: argparse.Namespace) -> None:
    if args.partition is not None:
        if args.topic is None:
            raise ToolError("--partition needs --topic")
        if args.from_beginning and args.offset is not None:
            raise ToolError("--from-beginning and --offset cannot be used together")
    elif args.offset is not None:
        raise ToolError("--offset needs --partition")
    if args.max_messages is not None and args.max_messages < 0:
        raise ToolError("--max-messages must not be negative")


def consumer_config(args: argparse.Namespace) -> dict[str, str]:
    """The config file, then --consumer-property, then the flags, as Kafka's console consumer
    layers them; all group ids given must agree."""
    config = {**QUIET_CLIENT, **client_properties(args)}
    extra = dict(split_property(item) for item in args.consumer_property)
    groups = {group for group in (args.group, config.get("group.id"), extra.get("group.id"))
              if group is not None}
    if len(groups) > 1:
        raise ToolError(f"the group ids given do not match: {', '.join(sorted(groups))}")
    if groups and args.partition is not None:
        raise ToolError("--group and --partition cannot be used together")
    config.update(extra)
    reset = config.get("auto.offset.reset")
    if reset is None:
        config["auto.offset.reset"] = "earliest" if args.from_beginning else "latest"
    elif args.from_beginning and reset != "earliest":
        raise ToolError(f"--from-beginning and auto.offset.reset={reset} contradict each "
                        f"other")
    config["bootstrap.servers"] = args.bootstrap_server
    config.setdefault("client.id", "console-consumer")
    if args.isolation_level is not None:
        config["isolation.level"] = args.isolation_level
    config.setdefault("isolation.level", "read_uncommitted")
    if groups:
        config["group.id"] = groups.pop()
    else:
        config["group.id"] = f"console-consumer-{random.randrange(100_000)}"
        config.setdefault("enable.auto.commit", "false")
    return librdkafka_config(config)


def record_formatter(args: argparse.Namespace) -> Callable[[ConsumerRecord], bytes]:
    properties = dict(split_property(item) for item in args.property)
    if args.format == "json":
        if properties:
            raise ToolError("--property applies to --format text only")
        return lambda record: format_json(record) + b"\n"
    return MessageFormatter.from_properties(properties).format


def consume(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException

    check_arguments(args)
    offset = start_offset(args)
    formatter = record_formatter(args)
    config = consumer_config(args)
    check_login(config, args.bootstrap_server, args.timeout)
    try:
        consumer = Consumer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise ToolError(f"invalid consumer configuration: {describe_kafka_error(error)}"
                        ) from None
    out = sys.stdout.buffer
    processed = 0
    try:
        _start(consumer, args, offset)
        for message in _messages(consumer, args, out.flush):
            out.write(formatter(_record(message)))
            processed += 1
        out.flush()
    finally:
        consumer.close()
        print(f"Processed a total of {processed} messages", file=sys.stderr)


def _start(consumer: Any, args: argparse.Namespace, offset: int) -> None:
    """Assign or subscribe, once the cluster has answered and the topic is known."""
    from confluent_kafka import TopicPartition

    if args.topic is None:
        consumer.list_topics(timeout=args.timeout)
        # librdkafka takes a name starting with ^ as a regular expression; Kafka's pattern
        # must match the whole name.
        consumer.subscribe([f"^({args.include})$"])
        return
    topic = consumer.list_topics(args.topic, timeout=args.timeout).topics.get(args.topic)
    if topic is None or topic.error is not None:
        reason = "" if topic is None else f": {describe_kafka_error(topic.error)}"
        raise ToolError(f"topic {args.topic!r} does not exist{reason}")
    if args.partition is None:
        consumer.subscribe([args.topic])
        return
    if args.partition not in topic.partitions:
        raise ToolError(f"topic {args.topic!r} has no partition {args.partition}")
    consumer.assign([TopicPartition(args.topic, args.partition, offset)])


def _messages(consumer: Any, args: argparse.Namespace, idle: Callable[[], None]
              ) -> Iterator[Any]:
    """Records until --max-messages, or until none came for --timeout-ms; `idle` is called
    whenever no record is waiting."""
    from confluent_kafka import KafkaException

    timeout = None if args.timeout_ms is None else args.timeout_ms / 1000
    count = 0
    last = time.monotonic()
    while args.max_messages is None or count < args.max_messages:
        message = consumer.poll(0)
        if message is None:
            idle()
            waited = time.monotonic() - last
            if timeout is not None and waited >= timeout:
                return
            wait = POLL_SECONDS if timeout is None else min(POLL_SECONDS, timeout - waited)
            message = consumer.poll(wait)
            if message is None:
                continue
        if message.error() is not None:
            raise KafkaException(message.error())
        last = time.monotonic()
        count += 1
        yield message


def _record(message: Any) -> ConsumerRecord:
    timestamp_type, timestamp = message.timestamp()
    return ConsumerRecord(
        topic=message.topic(), partition=message.partition(), offset=message.offset(),
        timestamp=timestamp, timestamp_type=TIMESTAMP_TYPES[timestamp_type],
        key=message.key(), value=message.value(), headers=tuple(message.headers() or ()),
        leader_epoch=message.leader_epoch())
