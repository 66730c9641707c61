"""The scenarios: what the client does (a workload of `workload.py` with its parameters), how
many records by default, and the figures it reports, each with its better direction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    better: str


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    workload: str
    messages: int
    figures: tuple[Figure, ...]
    params: dict[str, Any] = field(default_factory=dict)
    cluster: bool = False
    """Run on each system's three-broker cluster template instead of one broker."""
    mirror: bool = False
    """Two brokers of the system's template (source and target) and its mirror between
    them; the CPU and RSS figures are the mirror's."""
    spark: bool = False
    """The client is a Spark session with Spark's Kafka connector (the JVM toolchain)."""

    def param(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)


THROUGHPUT = (Figure("produce_msgs", "produce msg/s", HIGHER),
              Figure("produce_MBps", "produce MB/s", HIGHER),
              Figure("consume_msgs", "consume msg/s", HIGHER),
              Figure("consume_MBps", "consume MB/s", HIGHER))


def _produce(size: int, acks: str, partitions: int, messages: int) -> Scenario:
    name = f"produce-{size}-acks{acks}-p{partitions}"
    return Scenario(name, f"produce {messages:,} x {size} B (acks={acks}, {partitions} "
                    "partition(s), linger 5 ms, batch 1 MB), then consume them all",
                    "produce_consume", messages, THROUGHPUT,
                    {"size": size, "acks": acks, "partitions": partitions})


PRODUCE = [_produce(size, acks, partitions, 2_000_000 if size == 100 else 500_000)
           for size in (100, 1000) for acks in ("1", "all") for partitions in (1, 6)]

def _mirror(size: int, exactly_once: bool) -> Scenario:
    mode = "exactly-once" if exactly_once else "at-least-once"
    records = 200_000 if size == 100 else 50_000
    return Scenario(
        f"mirror-{size}-{'eos' if exactly_once else 'alo'}",
        f"mirror {records:,} x {size} B on 4 partitions to a second cluster ({mode}; "
        "odradek: `odradek mirror`, kafka: MirrorMaker 2 in dedicated mode, its defaults), "
        "then replication latency (source produce to a target consumer, by CreateTime) at "
        "1,000 records/s for 10 s after a 1 s warm-up", "mirror", records,
        (Figure("mirror_msgs", "mirror msg/s", HIGHER),
         Figure("mirror_MBps", "mirror MB/s", HIGHER),
         Figure("repl_p50", "replication p50 ms", LOWER),
         Figure("repl_p99", "replication p99 ms", LOWER)),
        {"size": size, "exactly_once": exactly_once, "partitions": 4, "rate": 1000,
         "latency_records": 10_000, "warmup_records": 1000}, mirror=True)


MIRROR = [_mirror(size, exactly_once) for size in (100, 1000) for exactly_once in (True, False)]

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    *PRODUCE,
    Scenario("e2e", "end-to-end latency: 100 B at 1,000 records/s for 10 s (after a 1 s "
             "warm-up), acks=1, linger 5 ms, fetch.wait.max.ms 10", "end_to_end", 10_000,
             (Figure("e2e_p50", "e2e p50 ms", LOWER), Figure("e2e_p99", "e2e p99 ms", LOWER),
              Figure("e2e_p999", "e2e p99.9 ms", LOWER)),
             {"rate": 1000, "size": 100, "acks": "1"}),
    Scenario("rtt", "one request at a time: produce 100 B, wait for the ack (acks=1, "
             "linger 0), 5,000 times", "round_trips", 5_000,
             (Figure("rtt_p50", "round trip p50 ms", LOWER),
              Figure("rtt_p99", "round trip p99 ms", LOWER),
              Figure("rtt_per_s", "round trips/s", HIGHER)), {"size": 100}),
    Scenario("connections", "1,000 idle connections open while 100 producers send 100 B "
             "records, 2,000/s in all, for 10 s (acks=1, 6 partitions)", "many_connections",
             20_000, (Figure("ack_p50", "ack p50 ms", LOWER),
                      Figure("ack_p99", "ack p99 ms", LOWER),
                      Figure("acked_per_s", "acked msg/s", HIGHER)),
             {"idle": 1000, "producers": 100, "rate": 2000, "size": 100, "partitions": 6}),
    Scenario("group", "a consumer group of 10 members joins a 10-partition topic; then one "
             "leaves (classic protocol, default configs)", "group_rebalance", 10,
             (Figure("join_s", "all joined s", LOWER),
              Figure("rebalance_s", "rebalanced s", LOWER)),
             {"members": 10, "partitions": 10}),
    Scenario("lifecycle", "start-up (until Metadata lists the broker) and clean stop "
             "(SIGTERM to exit) with 1,000 records to flush", "start_stop", 1_000, ()),
    Scenario("rf3", "three brokers, replication factor 3: produce 200,000 x 1,000 B with "
             "acks=all to 6 partitions, then consume them all", "produce_consume", 200_000,
             THROUGHPUT, {"size": 1000, "acks": "all", "partitions": 6, "replication": 3},
             cluster=True),
    *MIRROR,
    Scenario("spark", "produce 1,000,000 x 100 B to 2 partitions (acks=1), then read them "
             "all in Spark (local[2]) with odradek-kafka and with Spark's Kafka connector, "
             "the better of two reads each", "spark_read", 1_000_000,
             (Figure("odradek_kafka_msgs", "Spark odradek-kafka read msg/s", HIGHER),
              Figure("spark_kafka_msgs", "Spark kafka connector read msg/s", HIGHER)),
             {"size": 100, "partitions": 2}, spark=True),
]}

GROUPS = {"produce": [s.name for s in PRODUCE], "mirror": [s.name for s in MIRROR],
          "all": [name for name, s in SCENARIOS.items()
                  if not (s.cluster or s.mirror or s.spark)]}


def resolve(names: str) -> list[Scenario]:
    """A comma-separated list of scenario and group names."""
    chosen: list[Scenario] = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        if name not in SCENARIOS and name not in GROUPS:
            raise SystemExit(f"unknown scenario {name!r}: "
                             f"{', '.join([*GROUPS, *SCENARIOS])}")
        chosen += [SCENARIOS[n] for n in GROUPS.get(name, [name]) if SCENARIOS[n] not in chosen]
    return chosen
