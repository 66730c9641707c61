"""`odradek perf produce|consume`: the counterparts of kafka-producer-perf-test and
kafka-consumer-perf-test, on confluent-kafka (librdkafka). The producer prints Kafka's
progress line every --reporting-interval and Kafka's summary with latency percentiles; the
consumer prints Kafka's --show-detailed-stats lines, then its summary."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
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
from odradek.cli.tools.record_lines import split_property
from odradek.cli.tools.wire import check_login
from odradek.net.librdkafka import FETCH_QUEUE_BACKOFF_MS

MB = 1024 * 1024
"""Kafka's perf tools count a MB as 2^20 bytes."""
LATENCY_SAMPLES = 500_000
"""At most this many latencies are kept for the percentiles, as in Kafka."""
PERCENTILES = (0.5, 0.95, 0.99, 0.999)
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                   "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def add_perf_parser(commands: Any) -> None:
    perf = commands.add_parser("perf", help="producer/consumer performance tests")
    tools = perf.add_subparsers(dest="tool", required=True)

    produce = tools.add_parser("produce", help="like kafka-producer-perf-test")
    add_client_options(produce, tabular=False)
    produce.add_argument("--topic", required=True)
    produce.add_argument("--num-records", type=int, required=True)
    produce.add_argument("--record-size", type=int, default=100)
    produce.add_argument("--throughput", type=int, default=-1,
                         help="messages/s cap (-1: unthrottled)")
    produce.add_argument("--producer-props", nargs="*", default=[], metavar="KEY=VALUE",
                         help="librdkafka producer properties, e.g. acks=all linger.ms=5")
    _add_reporting_interval(produce)
    produce.set_defaults(run=runs("perf", run_produce))

    consume = tools.add_parser("consume", help="like kafka-consumer-perf-test (--timeout: "
                                               "seconds without a message before giving up)")
    add_client_options(consume, tabular=False)
    consume.add_argument("--topic", required=True)
    consume.add_argument("--messages", type=int, required=True)
    consume.add_argument("--consumer-props", nargs="*", default=[], metavar="KEY=VALUE")
    consume.add_argument("--show-detailed-stats", action="store_true",
                         help="print Kafka's stats line every --reporting-interval")
    _add_reporting_interval(consume)
    consume.set_defaults(run=runs("perf", run_consume))


def _add_reporting_interval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reporting-interval", type=int, default=5000, metavar="MS",
                        help="milliseconds between progress lines (default 5000)")


def _config(args: argparse.Namespace, defaults: dict[str, Any], items: Sequence[str]
            ) -> dict[str, Any]:
    """Our defaults, then --command-config and --bootstrap-server, then the -props items."""
    if args.reporting_interval <= 0:
        raise ToolError("--reporting-interval must be greater than 0")
    config = librdkafka_config({**QUIET_CLIENT, **defaults, **client_properties(args),
                                  **dict(split_property(item) for item in items)})
    check_login(config, args.bootstrap_server, args.timeout)
    return config


# --- producer --------------------------------------------------------------------------------


def percentiles(latencies: Sequence[int], fractions: Sequence[float]) -> list[int]:
    """Kafka's percentiles: the sorted sample at index fraction * count (0 for none)."""
    ordered = sorted(latencies)
    return [ordered[int(fraction * len(ordered))] if ordered else 0 for fraction in fractions]


@dataclass
class ProducerStats:
    """kafka-producer-perf-test's statistics: the totals, a window printed every reporting
    interval, and sampled latencies (ms) for the percentiles. Times are in seconds."""

    num_records: int
    interval: float
    start: float
    count: int = 0
    total_bytes: int = 0
    total_latency: int = 0
    max_latency: int = 0
    window_start: float = 0.0
    window_count: int = 0
    window_bytes: int = 0
    window_latency: int = 0
    window_max_latency: int = 0
    latencies: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.window_start = self.start
        self.sampling = max(1, self.num_records // LATENCY_SAMPLES)

    def record(self, latency: int, size: int, now: float) -> str | None:
        """Counts an acknowledged record; returns the window's line when one is due."""
        if self.count % self.sampling == 0:
            self.latencies.append(latency)
        self.count += 1
        self.total_bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += size
        self.window_latency += latency
        self.window_max_latency = max(self.window_max_latency, latency)
        if now - self.window_start < self.interval:
            return None
        line = self.window_line(now)
        self.window_start = now
        self.window_count = self.window_bytes = 0
        self.window_latency = self.window_max_latency = 0
        return line

    def window_line(self, now: float) -> str:
        elapsed = max(now - self.window_start, 1e-9)
        return (f"{self.window_count} records sent, {self.window_count / elapsed:.1f} "
                f"records/sec ({self.window_bytes / MB / elapsed:.2f} MB/sec), "
                f"{self.window_latency / max(self.window_count, 1):.1f} ms avg latency, "
                f"{float(self.window_max_latency):.1f} ms max latency.")

    def total_line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        p50, p95, p99, p999 = percentiles(self.latencies, PERCENTILES)
        return (f"{self.count} records sent, {self.count / elapsed:.1f} records/sec "
                f"({self.total_bytes / MB / elapsed:.2f} MB/sec), "
                f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, "
                f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                f"{p99} ms 99th, {p999} ms 99.9th.")


def run_produce(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException, Producer

    stats = ProducerStats(args.num_records, args.reporting_interval / 1000, time.monotonic())
    failures = 0
    first_error: Any = None

    def on_delivery(error: Any, message: Any) -> None:
        nonlocal failures, first_error
        if error is not None:
            failures += 1
            first_error = first_error or error
            return
        line = stats.record(int(message.latency() * 1000), len(message.value()),
                            time.monotonic())
        if line is not None:
            print(line, flush=True)

    config = _config(args, {"linger.ms": 5, "batch.size": 1_000_000,
                            "queue.buffering.max.messages": 1_000_000}, args.producer_props)
    if "delivery.timeout.ms" not in config:
        config.setdefault("message.timeout.ms", int(args.timeout * 1000))
    try:
        producer = Producer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise ToolError(f"invalid producer configuration: {describe_kafka_error(error)}"
                        ) from None
    payload = os.urandom(args.record_size)
    started = time.monotonic()
    for sent in range(args.num_records):
        while True:
            try:
                producer.produce(args.topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if args.throughput > 0:
            ahead = sent / args.throughput - (time.monotonic() - started)
            if ahead > 0:
                producer.poll(ahead)
        if sent % 1000 == 0:
            producer.poll(0)
    producer.flush()
    print(stats.total_line(time.monotonic()))
    if failures:
        print(f"odradek perf: {failures} records failed: {describe_kafka_error(first_error)}",
              file=sys.stderr)
    return 1 if failures or stats.count != args.num_records else 0


# --- consumer --------------------------------------------------------------------------------


def detailed_stats_line(at: datetime, total_bytes: int, window_bytes: int, total_count: int,
                        window_count: int, window_seconds: float) -> str:
    """kafka-consumer-perf-test's --show-detailed-stats line for one reporting window (one
    thread, and no rebalance time: the partitions are assigned, not subscribed)."""
    elapsed_ms = max(window_seconds * 1000, 1e-6)
    window_mb_per_sec = 1000 * window_bytes / MB / elapsed_ms
    window_per_sec = 1000 * window_count / elapsed_ms
    return (f"{at.strftime('%Y-%m-%d %H:%M:%S')}:{at.microsecond // 1000:03d}, 0, "
            f"{total_bytes / MB:.4f}, {window_mb_per_sec:.4f}, {total_count}, "
            f"{window_per_sec:.4f}, 0, {int(elapsed_ms)}, {window_mb_per_sec:.4f}, "
            f"{window_per_sec:.4f}")


def run_consume(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config = _config(args, {"group.id": "odradek-perf", "enable.auto.commit": False,
                            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS},
                     args.consumer_props)
    try:
        consumer = Consumer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise ToolError(f"invalid consumer configuration: {describe_kafka_error(error)}"
                        ) from None
    try:
        metadata = consumer.list_topics(args.topic, timeout=args.timeout)
        topic = metadata.topics.get(args.topic)
        if topic is None or topic.error is not None:
            raise ToolError(f"topic {args.topic!r} does not exist")
        consumer.assign([TopicPartition(args.topic, p, 0) for p in topic.partitions])
        if args.show_detailed_stats:
            print(DETAILED_HEADER, flush=True)
        interval = args.reporting_interval / 1000
        received = size = 0
        last_received = last_size = 0
        started = time.monotonic()
        last_report = last_progress = started
        while received < args.messages:
            batch = consumer.consume(min(10_000, args.messages - received), timeout=0.5)
            now = time.monotonic()
            if not batch and now - last_progress > args.timeout:
                print(f"WARNING: Exiting before consuming the expected number of messages: "
                      f"timeout ({args.timeout * 1000:.0f} ms) exceeded.", file=sys.stderr)
                break
            if not batch:
                continue
            last_progress = now
            for message in batch:
                if message.error() is None:
                    received += 1
                    size += len(message.key() or b"") + len(message.value() or b"")
            if now - last_report >= interval:
                if args.show_detailed_stats:
                    print(detailed_stats_line(datetime.now(), size, size - last_size, received,
                                              received - last_received, now - last_report),
                          flush=True)
                last_report, last_received, last_size = now, received, size
        elapsed = time.monotonic() - started
    finally:
        consumer.close()
    print(f"{received} records consumed, {received / elapsed:.1f} records/sec, "
          f"{size / MB / elapsed:.2f} MB/sec, {elapsed:.2f} s")
    return 0 if received >= args.messages else 1
