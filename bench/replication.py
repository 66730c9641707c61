"""The cost of replication, side by side in one run: acks=all produce throughput to a
replication-factor-3 topic (min.insync.replicas=2) against a replication-factor-1 topic on the
same 3-broker `odradek cluster`, and the time from a leader's kill -9 to the first acks=all
write acknowledged again.

Throughput is the side-by-side harness's workload (`bench/sidebyside/workload.py`: linger
5 ms, 1 MB batches, every record read back and checked) into pre-created topics, alternating
RF 1 and RF 3 within each rep. Usage:
`.venv/bin/python bench/replication.py [--reps 3] [--messages 1000000] [--size 100]`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the harness's workload is a sibling package

from bench.sidebyside.workload import filler_of, produce_all, read_back  # noqa: E402

ODRADEK = [str(ROOT / ".venv" / "bin" / "odradek")]
SESSION_TIMEOUT_MS = 3000


def cluster(data: Path, *args: str) -> str:
    out = subprocess.run([*ODRADEK, "cluster", *args, "--data-dir", str(data)],
                         capture_output=True, text=True, check=True)
    return out.stdout


def create(admin: AdminClient, replication: int, partitions: int) -> str:
    topic = f"rf{replication}-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, partitions, replication,
                                  config={"min.insync.replicas": str(min(replication, 2))})]
                        )[topic].result(30)
    return topic


def throughput(bootstrap: str, topic: str, args: argparse.Namespace) -> float:
    """acks=all produce msg/s; every record is then read back and checked."""
    filler = filler_of(args.size)
    sent, seconds = produce_all(bootstrap, topic, "all", args.messages, filler)
    read_back(bootstrap, topic, args.partitions, sent, args.size, filler)
    return sent / seconds


def failover(admin: AdminClient, bootstrap: str, data: Path) -> float:
    """Seconds from kill -9 of a partition's leader to the next acks=all acknowledgement."""
    topic = create(admin, 3, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce(topic, b"warm")
    producer.flush(30)
    leader = admin.list_topics(topic).topics[topic].partitions[0].leader
    killed = time.monotonic()
    cluster(data, "stop", f"broker-{leader}", "--kill")
    acked: list[float] = []
    producer.produce(topic, b"after", on_delivery=lambda e, _: acked.append(time.monotonic())
                     if e is None else None)
    producer.flush(60)
    cluster(data, "start", f"broker-{leader}")
    if not acked:
        raise RuntimeError("no acknowledgement after the leader kill")
    return acked[0] - killed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="odradek-replication-bench-"))
    rates: dict[int, list[float]] = {1: [], 3: []}
    kills: list[float] = []
    try:
        cluster(data, "up", "--controllers", "1", "--brokers", "3", "--base-port", "0",
                "--override", f"broker.session.timeout.ms={SESSION_TIMEOUT_MS}",
                "--override", "broker.heartbeat.interval.ms=500",
                "--override", "metrics.port=-1")
        bootstrap = json.loads((data / "cluster.json").read_text())["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for rep in range(args.reps):
            for replication in (1, 3):
                topic = create(admin, replication, args.partitions)
                rates[replication].append(throughput(bootstrap, topic, args))
            kills.append(failover(admin, bootstrap, data))
            print(f"rep {rep + 1}: RF1 {rates[1][-1]:,.0f} msg/s, RF3 {rates[3][-1]:,.0f} msg/s "
                  f"(ratio {rates[3][-1] / rates[1][-1]:.2f}); leader kill -> first acks=all "
                  f"{kills[-1]:.2f} s", flush=True)
    finally:
        cluster(data, "down")
        shutil.rmtree(data, ignore_errors=True)
    ratios = [three / one for one, three in zip(rates[1], rates[3], strict=True)]
    print(f"median acks=all produce: RF1 {statistics.median(rates[1]):,.0f} msg/s, RF3 "
          f"{statistics.median(rates[3]):,.0f} msg/s; "
          f"RF3/RF1 ratio {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); leader kill -> first acks=all "
          f"median {statistics.median(kills):.2f} s with broker.session.timeout.ms="
          f"{SESSION_TIMEOUT_MS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
