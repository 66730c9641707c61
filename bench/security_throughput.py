"""Produce and consume throughput over SSL and SASL_SSL (SCRAM-SHA-512) as a ratio to
PLAINTEXT, in one run against one `odradek dev` broker serving all three listeners.

Each listener gets its own one-partition topic; confluent-kafka produces `--mb` MiB of
1 KiB records (acks=all, uncompressed) and a consumer assigned to the partition reads them
back; the order of the listeners rotates between reps and the best rep counts. Certificates
come from `cryptography` (the test CA).
Usage: `.venv/bin/python bench/security_throughput.py [--mb 64] [--reps 3]`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from odradek.cli.cluster.layout import free_port

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.certificates import Authority  # noqa: E402

RECORD = b"x" * 1024


def start(directory: Path, ports: dict[str, int]) -> subprocess.Popen[bytes]:
    ca = Authority()
    ca.write(directory / "ca.pem")
    ca.issue("broker").write(directory / "broker.pem")
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    overrides = {
        "listeners": listeners, "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(directory / "broker.pem"), "metrics.port": "-1",
    }
    command = [str(ROOT / ".venv/bin/odradek"), "dev", "--data-dir", str(directory / "data")]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    log = open(directory / "broker.log", "wb")  # noqa: SIM115 - the child's
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.list_topics(timeout=2)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
    upsert = UserScramCredentialUpsertion(
        "bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bench-secret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    return process


def client_config(listener: str, port: int, directory: Path) -> dict[str, str]:
    config = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": listener}
    if "SSL" in listener:
        config["ssl.ca.location"] = str(directory / "ca.pem")
    if listener == "SASL_SSL":
        config.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bench",
                       "sasl.password": "bench-secret"})
    return config


def measure(config: dict[str, str], plain: str, records: int) -> tuple[float, float]:
    """(produce MiB/s, consume MiB/s) for one fresh topic."""
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": plain})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({**config, "acks": "all", "linger.ms": 5,
                         "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)
    produce = records / 1024 / (time.perf_counter() - started)
    consumer = Consumer({**config, "group.id": topic, "fetch.max.bytes": 1 << 24})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    received = 0
    started = time.perf_counter()
    while received < records:
        wanted = min(10000, records - received)
        received += sum(1 for m in consumer.consume(wanted, 1.0) if m.error() is None)
    consume = records / 1024 / (time.perf_counter() - started)
    consumer.close()
    return produce, consume


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    listeners = ["PLAINTEXT", "SSL", "SASL_SSL"]
    ports = {name: free_port() for name in listeners}
    with tempfile.TemporaryDirectory(prefix="odradek-secbench-") as name:
        directory = Path(name)
        process = start(directory, ports)
        plain = f"127.0.0.1:{ports['PLAINTEXT']}"
        best: dict[str, tuple[float, float]] = {n: (0.0, 0.0) for n in listeners}
        try:
            for rep in range(args.reps):
                for listener in listeners[rep % 3:] + listeners[:rep % 3]:
                    figures = measure(client_config(listener, ports[listener], directory),
                                      plain, args.mb * 1024)
                    best[listener] = (max(best[listener][0], figures[0]),
                                      max(best[listener][1], figures[1]))
        finally:
            process.terminate()
            process.wait(30)
    base = best["PLAINTEXT"]
    print(f"{args.mb} MiB of 1 KiB records, best of {args.reps}")
    print("| listener   | produce MiB/s | ratio | consume MiB/s | ratio |")
    print("|------------|--------------:|------:|--------------:|------:|")
    for listener in listeners:
        produce, consume = best[listener]
        print(f"| {listener:<10} | {produce:13.1f} | {produce / base[0]:5.2f} | "
              f"{consume:13.1f} | {consume / base[1]:5.2f} |")


if __name__ == "__main__":
    main()
