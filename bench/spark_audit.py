"""The mirror audit's throughput in records per second per core, side by side in one run, on
two Spark masters: `local[2]`, and a standalone cluster of two one-core workers (Spark's own
Master and Worker from the PySpark wheel, on loopback). On each, for the same N records per
side (`orders` on east and `east.orders` on west, two local `odradek dev` brokers):

- `audit`: the whole `odradek audit` (cuts, both sides' bucket counts, Parquet, summary);
- `odradek-kafka`: the audit's bucket counts (count, bytes, xxhash64 checksum, newest
  timestamp per partition and bucket) over both sides read with `odradek-kafka`;
- `spark-kafka`: the same counts, computed by the same code, over both sides read with
  Spark's own Kafka connector (`format("kafka")`, spark-sql-kafka-0-10) from the JVM
  toolchain's jars (`scripts/bootstrap.sh --dev`), when they are built.

Each reader runs once untimed (the executors' Python workers, Spark's classes and the
Parquet writer start on first use, which would count against the reader measured first),
then each figure is the better of two runs, and every run checks it counted 2N records. A core is
one of the two Spark cores (local[2]'s threads, the workers' one core each), on a machine
that may have no more than two. Usage: `.venv/bin/python bench/spark_audit.py [--records
1000000] [--size 100] [--partitions 2]`. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.spark_read import produce, start  # noqa: E402
from odradek.cli.cluster.layout import free_port  # noqa: E402
from odradek.spark.audit_reads import Side  # noqa: E402
from tests.jvm_toolchain import spark_kafka_conf  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from pyspark.sql import DataFrame, SparkSession

CORES = 2
BUCKET_MS = 600_000


@contextmanager
def standalone_cluster(work: Path) -> Iterator[str]:
    """A Spark standalone master and two one-core workers on loopback; its master URL."""
    import pyspark

    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(work)}
    logs = [open(work / f"{name}.log", "wb")  # noqa: SIM115 - owned by the children
            for name in ("master", "worker-1", "worker-2")]
    master = f"spark://127.0.0.1:{port}"
    commands = [[spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui)]] + [
        [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
         "--cores", "1", "--memory", "2g", "--webui-port", str(free_port()), master]] * 2
    processes = [subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
                 for command, log in zip(commands, logs, strict=True)]
    try:
        deadline = time.monotonic() + 120
        while alive_workers(ui) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not start (logs in {work})")
            time.sleep(1)
        yield master
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def alive_workers(ui: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as answer:
            return int(json.load(answer)["aliveworkers"])
    except OSError:
        return 0


class ConnectorSide(Side):
    """A side read with Spark's own Kafka connector, to the same cut."""

    def records(self, spark: SparkSession, source_topics: Collection[str] | None = None
                ) -> DataFrame | None:
        starting = {t: {p: -2 for p in offsets} for t, offsets in self.cut.items()}
        return (spark.read.format("kafka")
                .option("kafka.bootstrap.servers", self.bootstrap)
                .option("assign", json.dumps({t: [int(p) for p in offsets]
                                              for t, offsets in self.cut.items()}))
                .option("startingOffsets", json.dumps(starting))
                .option("endingOffsets", json.dumps(self.cut))
                .option("includeHeaders", "true").load())


@dataclass(frozen=True)
class Plan:
    """What a measuring process reads: both brokers, the window, N and where to write."""

    east: str
    west: str
    from_ms: int
    to_ms: int
    records: int
    output: str


def measure(master: str, plan: Plan) -> dict[str, Any]:
    """In this process: a session on `master`, then each reader twice (seconds, best)."""
    from odradek.spark import audit
    from odradek.spark.audit_reads import bucket_counts
    from odradek.spark.cut import take_cut
    from odradek.spark.session import spark_session

    connector = spark_kafka_conf()
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.cores.max": str(CORES), "spark.executor.cores": "1",
            "spark.executor.memory": "1g", "spark.sql.shuffle.partitions": "8",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0", **connector}
    spark = spark_session("odradek-audit-bench", master, conf)
    spark.range(0, 1000, 1, CORES * 2).count()  # executors and Python workers up
    window = (plan.from_ms, plan.to_ms, BUCKET_MS)
    sides = [Side(plan.east, take_cut(plan.east, ["orders"]), {}, {"orders": "orders"}),
             Side(plan.west, take_cut(plan.west, ["east.orders"]), {},
                  {"east.orders": "orders"})]

    def counted(read: type[Side]) -> int:
        return sum(c.count for side in sides
                   for c in bucket_counts(spark, read(**vars(side)), window))

    parser = argparse.ArgumentParser()
    audit.add_arguments(parser)
    audit_args = parser.parse_args([
        "--source-bootstrap", plan.east, "--target-bootstrap", plan.west,
        "--source-alias", "east", "--topics", "orders", "--from", str(plan.from_ms),
        "--to", str(plan.to_ms), "--bucket", "10m", "--output", plan.output,
        "--audit-topic", ""])

    def whole_audit() -> int:
        assert audit.run(audit_args, spark) == 0
        summary = json.loads((Path(plan.output) / "summary.json").read_text())
        return int(summary["totals"]["source_records"] + summary["totals"]["target_records"])

    readers = {"audit": whole_audit, "odradek-kafka": lambda: counted(Side)}
    if connector:
        readers["spark-kafka"] = lambda: counted(ConnectorSide)
    for read in readers.values():  # untimed: executors' Python workers, classes, writers
        read()
    seconds = {}
    for name, read in readers.items():
        runs = []
        for _ in range(2):
            started = time.perf_counter()
            assert read() == 2 * plan.records, name
            runs.append(time.perf_counter() - started)
        seconds[name] = min(runs)
    spark.stop()
    return seconds


def in_child(master: str, plan: Plan) -> dict[str, Any]:
    """`measure` in a fresh Python process: the connector's jars reach only the session that
    starts the JVM, and each master needs its own."""
    done = subprocess.run([sys.executable, __file__, "--measure", master,
                           json.dumps(plan.__dict__)],
                          capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"measuring on {master} failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if args.measure:
        master, plan = args.measure
        print(json.dumps(measure(master, Plan(**json.loads(plan)))))
        return 0

    root = Path(tempfile.mkdtemp(prefix="spark-audit-bench-"))
    east, east_bootstrap = start(root / "east")
    west, west_bootstrap = start(root / "west")
    try:
        from_ms = (int(time.time() * 1000) - 7_200_000) // BUCKET_MS * BUCKET_MS
        produce(east_bootstrap, "orders", args, from_ms)
        produce(west_bootstrap, "east.orders", args, from_ms)
        plan = Plan(east_bootstrap, west_bootstrap, from_ms, from_ms + 3_600_000 + args.records,
                    args.records, str(root / "audit"))
        seconds = {"local[2]": in_child("local[2]", plan)}
        (root / "workers").mkdir()
        with standalone_cluster(root / "workers") as master:
            seconds["standalone, 2 workers x 1 core"] = in_child(master, plan)
    finally:
        for process in (east, west):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
    per_core = {master: {reader: round(2 * args.records / s / CORES)
                         for reader, s in readers.items()}
                for master, readers in seconds.items()}
    print(json.dumps({
        "records_per_side": args.records, "value_bytes": args.size,
        "partitions": args.partitions, "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "seconds": {m: {r: round(s, 2) for r, s in readers.items()}
                    for m, readers in seconds.items()},
        "records_per_s_per_core": per_core,
        "odradek_kafka_to_spark_kafka": {
            m: round(r["spark-kafka"] / r["odradek-kafka"], 2)
            for m, r in seconds.items() if "spark-kafka" in r},
        "audit_to_spark_kafka_counts": {
            m: round(r["spark-kafka"] / r["audit"], 2)
            for m, r in seconds.items() if "spark-kafka" in r},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
