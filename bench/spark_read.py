"""The Spark layer's throughput, side by side in one run on two local `odradek dev` clusters:

1. reading a topic with the `odradek-kafka` data source in `local[*]` (count and value bytes
   aggregated in Spark) against one confluent-kafka consumer reading the same records in one
   process (counting records and value bytes in Python);
2. the mirroring audit's wall time for N records per side (the same records produced to
   `orders` on east and `east.orders` on west, as a mirror leaves them).

Usage: `.venv/bin/python bench/spark_read.py [--records 1000000] [--size 100]
[--partitions 2]`. Prints one JSON object.
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
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.cli.cluster.layout import free_port
from odradek.net.librdkafka import FETCH_QUEUE_BACKOFF_MS

ODRADEK = [sys.executable, "-m", "odradek.cli"]


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
    """Seconds, records and value bytes for one consumer reading every partition to its end
    (fetching again as soon as its queue has room, as `odradek-kafka`'s tasks do)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_uncommitted",
                         "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
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


def spark_read(spark: object, bootstrap: str, topic: str) -> tuple[float, int, int]:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    frame = (spark.read.format("odradek-kafka")  # type: ignore[attr-defined]
             .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load())
    row = frame.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("b")).first()
    return time.perf_counter() - started, row["n"], row["b"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from odradek.spark import audit
    from odradek.spark.session import spark_session

    root = Path(tempfile.mkdtemp(prefix="spark-bench-"))
    east, east_bootstrap = start(root / "east")
    west, west_bootstrap = start(root / "west")
    try:
        start_ms = (int(time.time() * 1000) - 7_200_000) // 600_000 * 600_000
        produce(east_bootstrap, "orders", args, start_ms)
        produce(west_bootstrap, "east.orders", args, start_ms)
        spark = spark_session("odradek-bench", conf={"spark.ui.enabled": "false",
                                                      "spark.ui.showConsoleProgress": "false"})
        consumer = consumer_read(east_bootstrap, "orders", args.partitions)
        spark_runs = [spark_read(spark, east_bootstrap, "orders") for _ in range(2)]
        assert all(run[1] == consumer[1] == args.records for run in spark_runs)
        audit_args = argparse.ArgumentParser()
        audit.add_arguments(audit_args)
        started = time.perf_counter()
        code = audit.run(audit_args.parse_args([
            "--source-bootstrap", east_bootstrap, "--target-bootstrap", west_bootstrap,
            "--source-alias", "east", "--topics", "orders", "--from", str(start_ms),
            "--to", str(start_ms + 3_600_000 + args.records), "--output", str(root / "audit"),
            "--audit-topic", ""]), spark)
        audit_s = time.perf_counter() - started
        mb = args.records * args.size / 1e6
        print(json.dumps({
            "records": args.records, "value_bytes": args.size, "partitions": args.partitions,
            "cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0],
            "consumer_s": round(consumer[0], 2),
            "consumer_records_per_s": round(args.records / consumer[0]),
            "consumer_mb_per_s": round(mb / consumer[0], 1),
            "spark_first_s": round(spark_runs[0][0], 2),
            "spark_warm_s": round(spark_runs[1][0], 2),
            "spark_records_per_s": round(args.records / spark_runs[1][0]),
            "spark_mb_per_s": round(mb / spark_runs[1][0], 1),
            "spark_to_consumer_ratio": round(consumer[0] / spark_runs[1][0], 2),
            "audit_s": round(audit_s, 1), "audit_exit": code}, indent=2))
    finally:
        for process in (east, west):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
