"""The Spark layer's throughput, side by side in one run on two local `odradek dev` clusters
holding the same N records of --size bytes (`orders` on east, `east.orders` on west, as a
mirror leaves them):

1. one confluent-kafka consumer reading `orders` in one process (counting records and value
   bytes in Python), the baseline;
2. for each master (`local[2]`, and `standalone`: a standalone master and two one-core
   workers started here from PySpark's own jars, as compose's `spark` profile runs them):
   reading both topics (count and value bytes aggregated in Spark) with the `odradek-kafka`
   data source and with Spark's own Kafka connector (`kafka`, when the JVM toolchain is
   built: tests/jvm_toolchain.py), the warm read of two; and the mirroring audit of both
   topics, in records per second per core (2 cores either way: the audit reads 2N records).

Usage: `.venv/bin/python bench/spark_read.py [--records 1000000] [--size 100]
[--partitions 4] [--masters local[2],standalone]`. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ODRADEK = [sys.executable, "-m", "odradek.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    port, metrics = free_port(), free_port()
    log = open(data.with_suffix(".log"), "wb")  # noqa: SIM115 - owned by the child
    process = subprocess.Popen([*ODRADEK, "dev", "--port", str(port), "--data-dir", str(data),
                                "--override", f"metrics.port={metrics}"],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return process, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("broker did not start")


def produce(bootstrap: str, topic: str, args: argparse.Namespace, start_ms: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.size": 1_000_000, "compression.type": "lz4"})
    value = b"x" * args.size
    step = max(1, 3_600_000 // args.records)
    for i in range(args.records):
        while True:
            try:
                producer.produce(topic, key=b"%d" % i, value=value, timestamp=start_ms + i * step,
                                 partition=i % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def consumer_read(bootstrap: str, topic: str, partitions: int) -> tuple[float, int, int]:
    """Seconds, records and value bytes for one consumer reading every partition to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_uncommitted"})
    started = time.perf_counter()
    consumer.assign([CTopicPartition(topic, p, 0) for p in range(partitions)])
    records = size = eofs = 0
    while eofs < partitions:
        for message in consumer.consume(10_000, 1.0):
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                eofs += 1
                continue
            records += 1
            size += len(message.value() or b"")
    took = time.perf_counter() - started
    consumer.close()
    return took, records, size


CORES = 2
"""Cores each master runs tasks on: local[2], or two workers of one core each."""


def spark_read(spark: Any, source: str, clusters: list[tuple[str, str]]
               ) -> tuple[float, int, int]:
    """Seconds, records and value bytes of reading every (bootstrap, topic) with the data
    source `source` (odradek-kafka or kafka), aggregated in Spark."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    records = size = 0
    for bootstrap, topic in clusters:
        frame = (spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", topic).load())
        row = frame.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("b")
                        ).first()
        records, size = records + row["n"], size + row["b"]
    return time.perf_counter() - started, records, size


def wait_for_workers(ui_port: int, count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
                workers = json.loads(r.read())["workers"]
            if sum(w["state"] == "ALIVE" for w in workers) >= count:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{count} workers did not register")


@contextmanager
def standalone_cluster(root: Path) -> Iterator[str]:
    """A standalone master and CORES workers of one core each, from PySpark's jars; their
    master URL."""
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m"}
    port, ui = free_port(), free_port()
    log = open(root / "standalone.log", "wb")  # noqa: SIM115 - owned by the children
    processes = [subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        for i in range(CORES):
            processes.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                 "--work-dir", str(root / f"worker-{i}"), f"spark://127.0.0.1:{port}"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        wait_for_workers(ui, CORES)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


@contextmanager
def session(master: str, root: Path) -> Iterator[Any]:
    """A SparkSession on `master` (`standalone`: a cluster started for it), with Spark's
    Kafka connector on its classpath when the JVM toolchain is built."""
    from odradek.spark.session import spark_session

    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            **connector_conf()}
    with ExitStack() as stack:
        if master == "standalone":
            master = stack.enter_context(standalone_cluster(root))
            conf |= {"spark.cores.max": str(CORES), "spark.executor.memory": "512m",
                     "spark.scheduler.minRegisteredResourcesRatio": "1"}
        spark = spark_session("odradek-bench", master, conf)
        try:
            yield spark
        finally:
            spark.stop()


@cache
def connector_conf() -> dict[str, str]:
    """spark.jars of Spark's Kafka connector, or none when the toolchain is not built."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.jvm_toolchain import spark_kafka_conf

    return spark_kafka_conf()


def rate(records: int, seconds: float) -> dict[str, float]:
    return {"s": round(seconds, 2), "records_per_s_per_core": round(records / seconds / CORES),
            "records_per_min_per_core": round(records / seconds / CORES * 60)}


def measure(spark: Any, clusters: list[tuple[str, str]], audit_flags: list[str],
            records: int) -> dict[str, Any]:
    """Warm reads with each source, then the audit, on one session."""
    from odradek.spark import audit

    result: dict[str, Any] = {}
    sources = ["odradek-kafka", *(["kafka"] if connector_conf() else [])]
    for source in sources:
        runs = [spark_read(spark, source, clusters) for _ in range(2)]
        assert all(run[1] == records for run in runs), runs
        result[f"{source}_read"] = {"first_s": round(runs[0][0], 2), **rate(records, runs[1][0])}
        progress(source, result[f"{source}_read"])
    if "kafka" in sources:
        result["odradek_kafka_to_kafka_speed"] = round(
            result["kafka_read"]["s"] / result["odradek-kafka_read"]["s"], 2)
    parser = argparse.ArgumentParser()
    audit.add_arguments(parser)
    started = time.perf_counter()
    code = audit.run(parser.parse_args(audit_flags), spark)
    result["audit"] = {"exit": code, **rate(records, time.perf_counter() - started)}
    progress("audit", result["audit"])
    return result


def progress(what: str, figures: dict[str, Any]) -> None:
    """Each figure on stderr as it is taken (the JSON on stdout comes at the end)."""
    print(f"bench: {what} {json.dumps(figures)}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--masters", default="local[2],standalone")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    root = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    east, east_bootstrap = start(root / "east")
    west, west_bootstrap = start(root / "west")
    try:
        start_ms = (int(time.time() * 1000) - 7_200_000) // 600_000 * 600_000
        produce(east_bootstrap, "orders", args, start_ms)
        produce(west_bootstrap, "east.orders", args, start_ms)
        consumer = consumer_read(east_bootstrap, "orders", args.partitions)
        assert consumer[1] == args.records
        clusters = [(east_bootstrap, "orders"), (west_bootstrap, "east.orders")]
        audit_flags = [
            "--source-bootstrap", east_bootstrap, "--target-bootstrap", west_bootstrap,
            "--source-alias", "east", "--topics", "orders", "--from", str(start_ms),
            "--to", str(start_ms + 3_600_000 + args.records), "--output", str(root / "audit"),
            "--audit-topic", ""]
        results: dict[str, Any] = {
            "records_per_topic": args.records, "value_bytes": args.size,
            "partitions": args.partitions, "cores": CORES, "cpus": os.cpu_count(),
            "load_avg_1m_at_start": os.getloadavg()[0],
            "consumer_one_process": {"s": round(consumer[0], 2),
                                     "records_per_s": round(args.records / consumer[0])}}
        for master in args.masters.split(","):
            progress("master", {"master": master, "load_avg_1m": os.getloadavg()[0]})
            with session(master, root) as spark:
                results[master] = measure(spark, clusters, audit_flags, 2 * args.records)
        results["load_avg_1m_at_end"] = os.getloadavg()[0]
        print(json.dumps(results, indent=2))
    finally:
        for process in (east, west):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
