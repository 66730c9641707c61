"""`odradek perf produce|consume`: the counterparts of kafka-producer-perf-test and
kafka-consumer-perf-test, on confluent-kafka (librdkafka), with the same summary lines."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any


def add_perf_parser(commands: Any) -> None:
    perf = commands.add_parser("perf", help="producer/consumer performance tests")
    tools = perf.add_subparsers(dest="tool", required=True)

    produce = tools.add_parser("produce", help="like kafka-producer-perf-test")
    produce.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    produce.add_argument("--topic", required=True)
    produce.add_argument("--num-records", type=int, required=True)
    produce.add_argument("--record-size", type=int, default=100)
    produce.add_argument("--throughput", type=int, default=-1,
                         help="messages/s cap (-1: unthrottled)")
    produce.add_argument("--producer-props", nargs="*", default=[], metavar="KEY=VALUE",
                         help="librdkafka producer properties, e.g. acks=all linger.ms=5")
    produce.set_defaults(run=run_produce)

    consume = tools.add_parser("consume", help="like kafka-consumer-perf-test")
    consume.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    consume.add_argument("--topic", required=True)
    consume.add_argument("--messages", type=int, required=True)
    consume.add_argument("--timeout", type=float, default=30.0,
                         help="seconds without a message before giving up")
    consume.add_argument("--consumer-props", nargs="*", default=[], metavar="KEY=VALUE")
    consume.set_defaults(run=run_consume)


def _props(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, _, value = item.partition("=")
        props[key] = value
    return props


def run_produce(args: argparse.Namespace) -> int:
    from confluent_kafka import Producer

    failures = 0
    acked = 0

    def on_delivery(error: Any, _message: Any) -> None:
        nonlocal failures, acked
        if error is not None:
            failures += 1
        else:
            acked += 1

    producer = Producer({
        "bootstrap.servers": args.bootstrap_server,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        **_props(args.producer_props),
    })
    payload = os.urandom(args.record_size)
    started = time.perf_counter()
    for sent in range(args.num_records):
        while True:
            try:
                producer.produce(args.topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if args.throughput > 0:
            ahead = sent / args.throughput - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
        if sent % 10_000 == 0:
            producer.poll(0)
    producer.flush()
    elapsed = time.perf_counter() - started
    megabytes = acked * args.record_size / 1e6
    print(
        f"{acked} records sent, {acked / elapsed:.1f} records/sec "
        f"({megabytes / elapsed:.2f} MB/sec), {failures} failed, {elapsed:.2f} s"
    )
    return 1 if failures or acked != args.num_records else 0


def run_consume(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap_server,
        "group.id": "odradek-perf",
        "enable.auto.commit": False,
        "fetch.queue.backoff.ms": 10,
        **_props(args.consumer_props),
    })
    metadata = consumer.list_topics(args.topic, timeout=10)
    partitions = metadata.topics[args.topic].partitions
    consumer.assign([TopicPartition(args.topic, p, 0) for p in partitions])
    received = size = 0
    started = time.perf_counter()
    last_progress = started
    while received < args.messages:
        batch = consumer.consume(min(10_000, args.messages - received), timeout=0.5)
        now = time.perf_counter()
        if not batch and now - last_progress > args.timeout:
            break
        for message in batch:
            if message.error() is None:
                received += 1
                size += len(message.value() or b"")
        if batch:
            last_progress = now
    elapsed = time.perf_counter() - started
    consumer.close()
    print(
        f"{received} records consumed, {received / elapsed:.1f} records/sec, "
        f"{size / 1e6 / elapsed:.2f} MB/sec, {elapsed:.2f} s"
    )
    return 0 if received >= args.messages else 1
