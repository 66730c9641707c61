"""The `spark` scenario: a topic produced as in `produce_consume`, then read to its end in
Spark (`local[2]`, a session started outside the timing) with `odradek-kafka` and with
Spark's own Kafka connector (`format("kafka")`, from the JVM toolchain's jars). Each read
is the better of two and is checked: as many records as sent, numbered 0..N-1 (their
sum too), every value's length."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from bench.sidebyside.scenarios import Scenario
from bench.sidebyside.workload import Failed, Figures, create_topic, filler_of, produce_all

MASTER = "local[2]"
READERS = {"odradek_kafka_msgs": "odradek-kafka", "spark_kafka_msgs": "kafka"}
"""Each figure's Spark format."""

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def read_in_spark(bootstrap: str, scenario: Scenario, messages: int) -> tuple[int, Figures]:
    from odradek.spark.session import spark_session
    from tests.jvm_toolchain import spark_kafka_conf

    connector = spark_kafka_conf()
    if not connector:
        raise Failed("Spark's Kafka connector is not built: run `bash scripts/bootstrap.sh "
                     "--dev`")
    size, partitions = scenario.param("size"), scenario.param("partitions")
    topic = create_topic(bootstrap, partitions)
    sent, _ = produce_all(bootstrap, topic, "1", messages, filler_of(size))
    spark = spark_session("bench-spark-read", MASTER, {
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", **connector})
    try:
        spark.range(0, 1000, 1, 4).count()  # the JVM and Python workers up
        figures = {}
        for figure, fmt in READERS.items():
            best = min(_timed_read(spark, fmt, bootstrap, topic, sent, size) for _ in range(2))
            figures[figure] = sent / best
    finally:
        _stop(spark)
    return sent, figures


def _stop(spark: SparkSession) -> None:
    """Stop the session and wait for its JVM to exit (it does when its stdin closes), so that
    the harness counts the JVM's CPU as the client's (it reads its children's rusage), not
    as other work on the machine."""
    jvm = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
    spark.stop()
    jvm.stdin.close()
    jvm.wait(60)


def _timed_read(spark: SparkSession, fmt: str, bootstrap: str, topic: str, sent: int,
                size: int) -> float:
    """Seconds to read the topic from its start to its end, aggregated in Spark."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    row = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load()
           .select(F.conv(F.hex(F.substring("value", 1, 8)), 16, 10).cast("long")
                   .alias("sequence"), F.length("value").alias("size"))
           .agg(F.count("*"), F.sum("sequence"), F.min("sequence"), F.max("sequence"),
                F.min("size"), F.max("size"))
           .first())
    seconds = time.perf_counter() - started
    if row is None or tuple(row) != (sent, sent * (sent - 1) // 2, 0, sent - 1, size, size):
        raise Failed(f"{fmt} read {row}, not {sent} records of {size} B numbered 0..{sent - 1}")
    return seconds
