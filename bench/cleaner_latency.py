"""Produce latency while the log cleaner works, side by side in one run.

One `odradek dev` broker. A background producer keeps updating 20,000 keys of the topic
`churn` (1 MB segments) while a probe produces one 100 B record at a time (acks=1) to
`probe` and times each round trip. Phase `idle`: `churn` has cleanup.policy=delete, so the
cleaner has nothing to do. Phase `cleaning`: the same load with `churn` switched to compact
(min.cleanable.dirty.ratio 0.01), so the cleaner rewrites it again and again. The phases
alternate `--reps` times; the report gives each phase's p50/p99 and the cleanings done.

Usage: `.venv/bin/python bench/cleaner_latency.py [--reps 3] [--probes 3000]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from odradek.cli.cluster.layout import free_port

ROOT = Path(__file__).resolve().parent.parent
ODRADEK = str(ROOT / ".venv" / "bin" / "odradek")
KEYS = 20_000


def cleanings(metrics_port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith("kafka_log_logcleaner_cleanings_total "):
            return float(line.split()[1])
    return 0.0


def set_policy(admin: AdminClient, topic: str, policy: str) -> None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", policy, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)


def churn(bootstrap: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.size": 65536, "compression.type": "lz4"})
    i = 0
    while not stop.is_set():
        for _ in range(200):
            producer.produce("churn", key=f"key-{i % KEYS}".encode(), value=b"v" * 100)
            i += 1
        producer.poll(0)
        time.sleep(0.01)
    producer.flush(30)


def probe(bootstrap: str, count: int) -> list[float]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        producer.produce("probe", value=b"p" * 100)
        producer.flush(30)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--probes", type=int, default=3000)
    args = parser.parse_args()
    port, metrics_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data:
        broker = subprocess.Popen(
            [ODRADEK, "dev", "--port", str(port), "--data-dir", data,
             "--override", f"metrics.port={metrics_port}",
             "--override", "log.cleaner.backoff.ms=100"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            bootstrap = f"127.0.0.1:{port}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            deadline = time.monotonic() + 30
            while True:
                try:
                    admin.list_topics(timeout=1)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
            for future in admin.create_topics([
                NewTopic("churn", 1, 1, config={"segment.bytes": "1048576",
                                                "min.cleanable.dirty.ratio": "0.01"}),
                NewTopic("probe", 1, 1),
            ]).values():
                future.result(30)
            results: dict[str, list[list[float]]] = {"idle": [], "cleaning": []}
            cleaned: dict[str, float] = {"idle": 0.0, "cleaning": 0.0}
            stop = threading.Event()
            loader = threading.Thread(target=churn, args=(bootstrap, stop), daemon=True)
            loader.start()
            time.sleep(3)
            for _ in range(args.reps):
                for phase, policy in (("idle", "delete"), ("cleaning", "compact")):
                    set_policy(admin, "churn", policy)
                    time.sleep(1)
                    before = cleanings(metrics_port)
                    results[phase].append(probe(bootstrap, args.probes))
                    cleaned[phase] += cleanings(metrics_port) - before
            stop.set()
            loader.join()
        finally:
            broker.terminate()
            broker.wait(30)
    for phase, runs in results.items():
        everything = [value for run in runs for value in run]
        print(f"{phase:9s} p50 {statistics.median(everything):6.2f} ms  "
              f"p99 {p99(everything):6.2f} ms  (per rep p99: "
              f"{', '.join(f'{p99(run):.2f}' for run in runs)})  cleanings {cleaned[phase]:.0f}")
    ratio = p99([v for r in results["cleaning"] for v in r]) / p99(
        [v for r in results["idle"] for v in r])
    print(f"p99 cleaning / idle: {ratio:.2f}")


if __name__ == "__main__":
    main()
