"""Mirror throughput and latency between two local `odradek dev` clusters, side by side in
one run with the loop a user would otherwise write: confluent-kafka consume-then-produce in
Python (transactional with sendOffsetsToTransaction for exactly-once, plain acks=all for
at-least-once). Also measured in the same run: the target cluster's own produce rate
(confluent-kafka, acks=all), to which each copy rate is compared.

For each record size a source topic is filled first; each copy then runs on its own pair
of aliases (so its target topic and progress are fresh) and is timed from the first record
arriving on the target to the last. Latency: records produced at 1,000/s while the mirror
runs; a consumer on the target takes (arrival - CreateTime) of each.

Usage: `.venv/bin/python bench/mirror.py [--records-mb 200] [--partitions 4]`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.cli.cluster.layout import free_port

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def start_broker(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, "-m", "odradek.cli", "dev", "--port", str(port), "--data-dir", str(data),
         "--override", f"metrics.port={free_port()}"],
        stdout=open(data.with_suffix(".log"), "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
        start_new_session=True)
    bootstrap = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=1)
            return process, bootstrap
        except Exception:  # noqa: BLE001 - not serving yet
            time.sleep(0.2)
    raise RuntimeError(f"{data}: the broker did not start")


def create(bootstrap: str, *names: str, partitions: int) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result(30)


def fill(bootstrap: str, topic: str, count: int, size: int) -> float:
    """Produce `count` records with acks=all; MB/s."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(size)
    started = time.monotonic()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, b"%d" % i)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush()
    return count * size / (time.monotonic() - started) / 1e6


def records_on(consumer: Consumer, topic: str, partitions: int) -> int:
    total = 0
    for partition in range(partitions):
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        total += high
    return total


def timed_copy(bootstrap: str, topic: str, partitions: int, count: int, size: int,
               command: list[str]) -> float:
    """Run `command` until `topic` on the target holds `count` offsets; MB/s while the copy
    went from 10% to 90% of them (startup and the tail left out; offsets include transaction
    markers, a slight overestimate)."""
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe"})
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - the child writes it
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors,
                               start_new_session=True)
    marks: dict[float, float] = {}
    try:
        while True:
            copied = records_on(probe, topic, partitions)
            now = time.monotonic()
            for mark in (0.1, 0.9):
                if copied >= mark * count:
                    marks.setdefault(mark, now)
            if copied >= count:
                break
            if process.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"{command} exited with {process.returncode}: "
                                   f"{errors.read().decode()[-2000:]}")
            time.sleep(0.01)
        errors.seek(0)
        for line in errors.read().decode(errors="replace").splitlines():
            if "retrying" in line or "Error" in line:
                print("  mirror:", line[-300:], flush=True)
        elapsed = marks[0.9] - marks[0.1]
        return 0.8 * count * size / elapsed / 1e6 if elapsed > 0 else float("nan")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(60)
        probe.close()


def mirror_config(path: Path, source_alias: str, target_alias: str, east: str, west: str,
                  exactly_once: bool) -> Path:
    path.write_text("\n".join([
        f"clusters = {source_alias}, {target_alias}",
        f"{source_alias}.bootstrap.servers = {east}",
        f"{target_alias}.bootstrap.servers = {west}",
        f"{source_alias}->{target_alias}.enabled = true",
        "offset.storage.replication.factor = 1",
        "emit.offset-syncs.enabled = false",
        f"exactly.once.support = {'enabled' if exactly_once else 'disabled'}",
    ]) + "\n")
    return path


def run_mirror(config: str, topics: list[str]) -> None:
    """The mirror's data path alone (`FlowReplicator`), until SIGTERM."""
    from prometheus_client import CollectorRegistry

    from odradek.mirror.config import parse_mirror_config
    from odradek.mirror.replicator import FlowReplicator

    async def main() -> None:
        lines = Path(config).read_text().splitlines()
        parsed = parse_mirror_config(dict(
            (k.strip(), v.strip()) for k, _, v in (line.partition("=") for line in lines)))
        replicators = [FlowReplicator(f, parsed, CollectorRegistry()) for f in parsed.flows]
        for replicator in replicators:
            await replicator.start()
            replicator.set_topics({t: int(n) for t, n in (item.split("=") for item in topics)})
        stopping = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
        await stopping.wait()
        for replicator in replicators:
            await replicator.stop()

    asyncio.run(main())


def run_baseline(east: str, west: str, source: str, target: str, exactly_once: bool) -> None:
    """The consume-then-produce loop a user would write with confluent-kafka. Across two
    clusters, exactly-once needs the source offsets stored on the target in the
    transaction: partitions are assigned (no group on the source) and the offsets go to a
    group of the same name on the target with sendOffsetsToTransaction."""
    consumer = Consumer({"bootstrap.servers": east, "group.id": f"baseline-{target}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    config = {"bootstrap.servers": west, "linger.ms": 5, "acks": "all",
              "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000}
    if exactly_once:
        config["transactional.id"] = f"baseline-{target}"
    producer = Producer(config)
    partitions = consumer.list_topics(source, timeout=10).topics[source].partitions
    consumer.assign([TopicPartition(source, p, -2) for p in partitions])
    if exactly_once:
        producer.init_transactions()
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    while running[0]:
        messages = consumer.consume(10_000, 0.5)
        if not messages:
            continue
        if exactly_once:
            producer.begin_transaction()
        for message in messages:
            while True:
                try:
                    producer.produce(target, message.value(), message.key(),
                                     partition=message.partition(),
                                     timestamp=message.timestamp()[1],
                                     headers=message.headers())
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if exactly_once:
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata())
            producer.commit_transaction()
        else:
            producer.flush()
            consumer.commit(asynchronous=False)


def latency(east: str, west: str, topic: str, target: str, partitions: int,
            seconds: float) -> tuple[float, float]:
    """Produce at 1,000 records/s for `seconds`; p50 and p99 of arrival - CreateTime (ms)."""
    consumer = Consumer({"bootstrap.servers": west, "group.id": f"latency-{target}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "fetch.wait.max.ms": 10})
    consumer.subscribe([target])
    producer = Producer({"bootstrap.servers": east, "linger.ms": 1})
    total = int(seconds * 1000)

    def pace() -> None:
        started = time.monotonic()
        for i in range(total):
            delay = started + i / 1000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            producer.produce(topic, b"x" * 100, b"%d" % i, partition=i % partitions)
            producer.poll(0)
        producer.flush()

    thread = threading.Thread(target=pace)
    thread.start()
    samples: list[float] = []
    deadline = time.monotonic() + seconds + 60
    while len(samples) < total and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            samples.append(time.time() * 1000 - message.timestamp()[1])
    thread.join()
    consumer.close()
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-mb", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--latency-seconds", type=float, default=15)
    parser.add_argument("--run-mirror", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--run-baseline", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_mirror:
        run_mirror(args.run_mirror[0], args.run_mirror[1:])
        return
    if args.run_baseline:
        east, west, source, target, mode = args.run_baseline
        run_baseline(east, west, source, target, mode == "eos")
        return
    data = Path(tempfile.mkdtemp(prefix="odradek-mirror-bench-"))
    brokers = [start_broker(data / "east"), start_broker(data / "west")]
    (_, east), (_, west) = brokers
    parts = args.partitions
    rows = []
    try:
        for size in (100, 1000):
            count = args.records_mb * 1_000_000 // size
            source = f"src{size}"
            create(east, source, partitions=parts)
            fill(east, source, count, size)
            create(west, f"own{size}", partitions=parts)
            own = fill(west, f"own{size}", count, size)
            for exactly_once in (True, False):
                mode = "eos" if exactly_once else "alo"
                alias = f"e{size}{mode}"
                create(west, f"{alias}.{source}", f"base-{alias}", partitions=parts)
                config = mirror_config(data / f"{alias}.properties", alias, "w", east, west,
                                       exactly_once)
                mirror = timed_copy(west, f"{alias}.{source}", parts, count, size, [
                    PYTHON, __file__, "--run-mirror", str(config), f"{source}={parts}"])
                baseline = timed_copy(west, f"base-{alias}", parts, count, size, [
                    PYTHON, __file__, "--run-baseline", east, west, source, f"base-{alias}",
                    mode])
                rows.append((size, mode, mirror, baseline, own))
                print(f"{size} B {mode}: mirror {mirror:.1f} MB/s, baseline {baseline:.1f} "
                      f"MB/s, target's own produce {own:.1f} MB/s", flush=True)
        create(east, "lat", partitions=parts)
        create(west, "elat.lat", partitions=parts)
        config = mirror_config(data / "lat.properties", "elat", "w", east, west, True)
        mirror_process = subprocess.Popen(
            [PYTHON, __file__, "--run-mirror", str(config), f"lat={parts}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(5)  # the mirror joins its group before the paced traffic starts
        p50, p99 = latency(east, west, "lat", "elat.lat", parts, args.latency_seconds)
        os.killpg(mirror_process.pid, signal.SIGTERM)
        mirror_process.wait(60)
    finally:
        for process, _ in brokers:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(60)
        shutil.rmtree(data, ignore_errors=True)
    print("\n| record | mode | mirror MB/s | baseline MB/s | mirror/baseline | target produce "
          "MB/s | mirror/target |")
    print("|---|---|---|---|---|---|---|")
    for size, mode, mirror, baseline, own in rows:
        print(f"| {size} B | {'exactly-once' if mode == 'eos' else 'at-least-once'} | "
              f"{mirror:.1f} | {baseline:.1f} | {mirror / baseline:.2f}x | {own:.1f} | "
              f"{mirror / own:.2f} |")
    print(f"\nreplication latency at 1,000 records/s (exactly-once): p50 {p50:.0f} ms, "
          f"p99 {p99:.0f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
