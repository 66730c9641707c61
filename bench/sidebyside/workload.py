"""The client side of one run, in its own process (`python -m bench.sidebyside.workload
SCENARIO BOOTSTRAP [--messages N]`): it drives one scenario against a serving broker with
confluent-kafka, checks what came back, and prints one JSON line: {"ok", "error",
"messages", "figures"}. Any lost, duplicated, corrupted or unacknowledged record fails it."""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from bench.sidebyside.scenarios import SCENARIOS, Scenario

MB = 1e6
PRODUCE_CAP_S = 60.0
"""A slow broker stops producing here; its rates stay comparable."""
TIMEOUT_S = 120.0
Figures = dict[str, float]


class Failed(Exception):
    """A check failed: the run does not count."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def create_topic(bootstrap: str, partitions: int, replication: int = 1) -> str:
    """A new topic, once every partition has a leader in Metadata. A cluster refusing the
    replication factor is asked again until TIMEOUT_S: it listed all its brokers when it
    started, and on a loaded machine may count fewer for a moment (a broker fenced after a
    late heartbeat)."""
    topic = f"bench-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(
                TIMEOUT_S)
            break
        except KafkaException as error:
            if (error.args[0].code() != KafkaError.INVALID_REPLICATION_FACTOR
                    or time.monotonic() > deadline):
                raise
            time.sleep(0.5)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        described = admin.list_topics(topic, timeout=10).topics.get(topic)
        if described is not None and described.error is None and \
                len(described.partitions) == partitions and \
                all(p.leader >= 0 for p in described.partitions.values()):
            return topic
        time.sleep(0.05)
    raise Failed(f"topic {topic} has no leaders after {TIMEOUT_S:.0f} s")


def producer(bootstrap: str, acks: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                     "batch.size": 1_000_000, "message.max.bytes": 1_100_000,
                     "queue.buffering.max.kbytes": 262_144, "log_level": 0, **extra})


def consumer(bootstrap: str, **extra: Any) -> Consumer:
    # librdkafka's defaults make the fetcher sleep 1 s whenever Python falls 100,000
    # messages behind: that would measure the client, not the broker
    return Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 20,
                     "queued.max.messages.kbytes": 262_144, "log_level": 0, **extra})


class Acks:
    """Delivery reports: how many were acknowledged, the first error, and ack latencies."""

    def __init__(self) -> None:
        self.acked = 0
        self.error: KafkaError | None = None
        self.latencies: list[float] = []

    def __call__(self, error: KafkaError | None, message: Any) -> None:
        if error is not None:
            self.error = self.error or error
            return
        self.acked += 1
        latency = message.latency()
        if latency is not None:
            self.latencies.append(latency)

    def check(self, sent: int) -> None:
        if self.error is not None or self.acked != sent:
            raise Failed(f"{self.acked}/{sent} acknowledged, first error {self.error}")


def value(sequence: int, filler: bytes) -> bytes:
    return sequence.to_bytes(8, "big") + filler


def produce_consume(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """Produce `messages` records as fast as the broker takes them, then read them all back
    from the start and check each one arrived once, unchanged."""
    size, partitions = scenario.param("size"), scenario.param("partitions")
    topic = create_topic(bootstrap, partitions, scenario.param("replication", 1))
    filler = filler_of(size)
    sent, produce_s = produce_all(bootstrap, topic, scenario.param("acks"), messages, filler)
    consume_s = read_back(bootstrap, topic, partitions, sent, size, filler)
    return sent, {"produce_msgs": sent / produce_s, "produce_MBps": sent * size / produce_s / MB,
                  "consume_msgs": sent / consume_s, "consume_MBps": sent * size / consume_s / MB}


def filler_of(size: int) -> bytes:
    """What follows the sequence number in every value of `size` bytes."""
    return random.Random(size).randbytes(size - 8)


def produce_all(bootstrap: str, topic: str, acks: str, messages: int, filler: bytes
                ) -> tuple[int, float]:
    """Records sent (all acknowledged, fewer past PRODUCE_CAP_S) and the seconds it took."""
    tally = Acks()
    client = producer(bootstrap, acks)
    client.list_topics(topic, timeout=30)  # connections and metadata outside the timing
    started = time.perf_counter()
    sent = 0
    while sent < messages:
        try:
            client.produce(topic, value(sent, filler), on_delivery=tally)
        except BufferError:
            client.poll(0.01)
            continue
        sent += 1
        if sent % 1024 == 0:
            client.poll(0)
            if time.perf_counter() - started > PRODUCE_CAP_S:
                break
    client.flush(TIMEOUT_S)
    seconds = time.perf_counter() - started
    tally.check(sent)
    return sent, seconds


def read_back(bootstrap: str, topic: str, partitions: int, expected: int, size: int,
              filler: bytes) -> float:
    """Seconds to read `expected` records from the start; every sequence number once and
    every value as written."""
    reader = consumer(bootstrap)
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = bytearray(expected)
    received = 0
    started = last = time.perf_counter()
    while received < expected:
        batch = reader.consume(min(10_000, expected - received), timeout=0.5)
        now = time.perf_counter()
        if not batch and now - last > TIMEOUT_S:
            raise Failed(f"consume stalled at {received}/{expected}")
        for message in batch:
            if message.error() is not None:
                raise Failed(f"consume: {message.error()}")
            data = message.value() or b""
            sequence = int.from_bytes(data[:8], "big")
            if len(data) != size or data[8:] != filler or sequence >= expected \
                    or seen[sequence]:
                raise Failed(f"record {sequence} duplicated, corrupted or unexpected")
            seen[sequence] = 1
            received += 1
            last = now
    elapsed = time.perf_counter() - started
    if reader.consume(1, timeout=0.5):  # untimed: nothing beyond what was acknowledged
        raise Failed("more records than were acknowledged")
    reader.close()
    return elapsed


STAMP = struct.Struct(">Qq")  # sequence, send time (ns)


def end_to_end(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """Produce at a fixed rate, each record stamped with its send time; a consumer (already
    polling) records when each arrives. The first second is a warm-up, not measured."""
    rate = scenario.param("rate")
    topic = create_topic(bootstrap, 1)
    warmup = rate
    total = warmup + messages
    latencies: list[float] = []
    arrived = threading.Event()
    errors: list[str] = []
    reader = consumer(bootstrap, **{"fetch.wait.max.ms": 10})
    reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    reader.consume(1, timeout=1.0)

    def read() -> None:
        seen = 0
        deadline = time.monotonic() + total / rate + TIMEOUT_S
        while seen < total and time.monotonic() < deadline:
            message = reader.poll(0.1)
            if message is None:
                continue
            if message.error() is not None:
                errors.append(str(message.error()))
                break
            sequence, sent_ns = STAMP.unpack_from(message.value() or bytes(STAMP.size))
            if sequence != seen:
                errors.append(f"record {sequence} arrived when {seen} was due")
                break
            seen += 1
            if sequence >= warmup:
                latencies.append((time.time_ns() - sent_ns) / 1e6)
        arrived.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    acks = Acks()
    client = producer(bootstrap, scenario.param("acks"))
    filler = b"x" * (scenario.param("size") - STAMP.size)
    started = time.perf_counter()
    for sequence in range(total):
        pause = started + sequence / rate - time.perf_counter()
        if pause > 0:
            client.poll(pause)
        client.produce(topic, STAMP.pack(sequence, time.time_ns()) + filler, on_delivery=acks)
        client.poll(0)
    client.flush(TIMEOUT_S)
    acks.check(total)
    arrived.wait(TIMEOUT_S)
    thread.join(1.0)
    reader.close()
    if errors or len(latencies) != messages:
        raise Failed(f"{len(latencies)}/{messages} measured records arrived; {errors[:1]}")
    return messages, {"e2e_p50": percentile(latencies, 0.5),
                      "e2e_p99": percentile(latencies, 0.99),
                      "e2e_p999": percentile(latencies, 0.999)}


def round_trips(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """One record at a time: produce, wait for its acknowledgement, again."""
    topic = create_topic(bootstrap, 1)
    acks = Acks()
    client = producer(bootstrap, "1", **{"linger.ms": 0})
    record = b"r" * scenario.param("size")
    times = []
    for sequence in range(messages + 100):  # the first 100 warm up
        started = time.perf_counter()
        client.produce(topic, record, on_delivery=acks)
        client.flush(TIMEOUT_S)
        if sequence >= 100:
            times.append((time.perf_counter() - started) * 1e3)
    acks.check(messages + 100)
    return messages, {"rtt_p50": percentile(times, 0.5), "rtt_p99": percentile(times, 0.99),
                      "rtt_per_s": 1e3 * len(times) / sum(times)}


API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"  # key, version, id, client


def api_versions(sock: socket.socket) -> None:
    """One ApiVersions v0 request and its response."""
    sock.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
    _read(sock, struct.unpack(">i", _read(sock, 4))[0])


def idle_connection(host: str, port: int) -> socket.socket:
    """A connection that made one request (a client session) and then idles."""
    sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
    api_versions(sock)
    return sock


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise Failed("the broker closed an idle connection")
        data += chunk
    return data


def many_connections(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """`idle` connections stay open while `producers` producers each send at a fixed rate:
    what open connections cost the active ones."""
    host, port = bootstrap.rsplit(":", 1)
    idle = [idle_connection(host, int(port)) for _ in range(scenario.param("idle"))]
    topic = create_topic(bootstrap, scenario.param("partitions"))
    clients = [producer(bootstrap, "1") for _ in range(scenario.param("producers"))]
    for client in clients:
        client.list_topics(topic, timeout=60)
    acks = Acks()
    rate = scenario.param("rate")
    record = b"c" * scenario.param("size")
    started = time.perf_counter()
    for sequence in range(messages):
        pause = started + sequence / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        client = clients[sequence % len(clients)]
        client.produce(topic, record, on_delivery=acks)
        client.poll(0)
    for client in clients:
        client.flush(TIMEOUT_S)
    elapsed = time.perf_counter() - started
    acks.check(messages)
    for sock in idle:  # every idle connection is still open and answers
        api_versions(sock)
        sock.close()
    latencies = [latency * 1e3 for latency in acks.latencies]
    return messages, {"ack_p50": percentile(latencies, 0.5),
                      "ack_p99": percentile(latencies, 0.99), "acked_per_s": messages / elapsed}


def group_rebalance(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """`members` consumers join one group on a topic of as many partitions (seconds until
    every partition is assigned), then one leaves (seconds until the rest own them all)."""
    members, partitions = scenario.param("members"), scenario.param("partitions")
    topic = create_topic(bootstrap, partitions)
    group = uuid.uuid4().hex
    owned: list[set[int]] = [set() for _ in range(members)]
    consumers = []
    for index in range(members):
        def assigned(_: Consumer, parts: list[TopicPartition], index: int = index) -> None:
            owned[index] = {p.partition for p in parts}

        def revoked(_: Consumer, parts: list[TopicPartition], index: int = index) -> None:
            owned[index] = set()

        member = consumer(bootstrap, **{"group.id": group})
        member.subscribe([topic], on_assign=assigned, on_revoke=revoked)
        consumers.append(member)
    started = time.perf_counter()

    def covered(active: list[int]) -> bool:
        owners = [owned[i] for i in active]
        return sum(map(len, owners)) == partitions and set().union(*owners) == \
            set(range(partitions))

    def poll_until(active: list[int], what: str) -> float:
        deadline = time.perf_counter() + TIMEOUT_S
        while not covered(active):
            if time.perf_counter() > deadline:
                raise Failed(f"{what}: assignments {owned}")
            for i in active:
                consumers[i].poll(0.005)
        return time.perf_counter()

    everyone = list(range(members))
    join_s = poll_until(everyone, "join") - started
    consumers[-1].close()
    owned[-1] = set()
    left = time.perf_counter()
    rebalance_s = poll_until(everyone[:-1], "rebalance") - left
    for member in consumers[:-1]:
        member.close()
    return members, {"join_s": join_s, "rebalance_s": rebalance_s}


def start_stop(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """A little data for the stop to flush; the figures are the harness's start and stop."""
    topic = create_topic(bootstrap, 1)
    acks = Acks()
    client = producer(bootstrap, "all")
    for sequence in range(messages):
        client.produce(topic, value(sequence, b"s" * 92), on_delivery=acks)
        client.poll(0)
    client.flush(TIMEOUT_S)
    acks.check(messages)
    return messages, {}


def spark_read(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    """A topic read in Spark with `odradek-kafka` and with Spark's Kafka connector."""
    from bench.sidebyside.spark_reads import read_in_spark  # PySpark for this scenario only

    return read_in_spark(bootstrap, scenario, messages)


WORKLOADS: dict[str, Callable[[str, Scenario, int], tuple[int, Figures]]] = {
    "produce_consume": produce_consume, "end_to_end": end_to_end, "round_trips": round_trips,
    "many_connections": many_connections, "group_rebalance": group_rebalance,
    "start_stop": start_stop, "spark_read": spark_read,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("bootstrap")
    parser.add_argument("--messages", type=int, default=None)
    parser.add_argument("--target", help="the mirror scenario's target cluster")
    parser.add_argument("--mirror", help="the mirror's command line, with {config}")
    parser.add_argument("--mirror-log", type=Path, help="the mirror's output")
    parser.add_argument("--mirror-property", action="append", default=[],
                        help="KEY=VALUE added to the mirror's properties")
    args = parser.parse_args(argv)
    scenario = SCENARIOS[args.scenario]
    count = args.messages or scenario.messages
    try:
        usage: dict[str, Any] = {}
        if scenario.mirror:
            from bench.sidebyside.mirroring import mirror  # it imports this module
            settings = dict(s.split("=", 1) for s in args.mirror_property)
            messages, figures, usage = mirror(args.bootstrap, scenario, count, args.target,
                                              args.mirror, args.mirror_log, settings)
        else:
            messages, figures = WORKLOADS[scenario.workload](args.bootstrap, scenario, count)
        result: dict[str, Any] = {"ok": True, "messages": messages, "figures": figures,
                                  **usage}
    except Exception as error:  # any failure fails the run, with its reason
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
