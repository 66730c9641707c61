"""Spark rows of a Kafka source in the integration tests' record shape, from batch reads and
from streaming queries."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from tests.integration.clients import Rec
from tests.waiting import wait_until

TIMEOUT = 180.0
INITIALIZING = "Initializing sources"


def load(spark: SparkSession, bootstrap: str, source: str = "odradek-kafka",
         **options: Any) -> DataFrame:
    """A batch read with `source` (ours, or Spark's connector: `kafka`); option names as
    Spark's (`startingOffsets=...`)."""
    reader = spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key.replace("__", "."), str(value))
    return reader.load()


def recs(frame: DataFrame) -> dict[str, list[Rec]]:
    """Each topic's rows as records, sorted by (partition, offset)."""
    with_millis = frame.withColumn("millis", F.unix_millis("timestamp"))
    has_headers = "headers" in frame.columns
    found: dict[str, list[Rec]] = {}
    for row in with_millis.collect():
        headers = (tuple((h["key"], _bytes(h["value"])) for h in row["headers"] or ())
                   if has_headers else ())
        found.setdefault(row["topic"], []).append(Rec(
            row["partition"], row["offset"], _bytes(row["key"]), _bytes(row["value"]),
            row["millis"], headers))
    return {topic: sorted(records, key=lambda r: (r.partition, r.offset))
            for topic, records in found.items()}


def _bytes(value: bytearray | bytes | None) -> bytes | None:
    return None if value is None else bytes(value)


def read_stream(spark: SparkSession, bootstrap: str, source: str = "odradek-kafka",
                **options: Any) -> DataFrame:
    """A streaming read with `source`; option names as Spark's."""
    reader = spark.readStream.format(source).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key.replace("__", "."), str(value))
    return reader.load()


@dataclass
class StreamRun:
    """What a query delivered: each non-empty micro-batch's records (sorted by topic,
    partition and offset), and the end offsets its last progress reported."""

    batches: list[list[Rec]] = field(default_factory=list)
    end_offset: dict[str, Any] | None = None

    @property
    def records(self) -> list[Rec]:
        return [r for batch in self.batches for r in batch]

    def collect(self, frame: DataFrame, batch_id: int) -> None:
        found = recs(frame)
        batch = [r for topic in sorted(found) for r in found[topic]]
        if batch:
            self.batches.append(batch)


WORKER_START = "Python worker failed to connect back"
"""Spark gives the driver-side Python worker of a Python stream source a fixed 10 s to start
(PythonWorkerFactory.createSimpleWorker); on a loaded machine it can miss them."""


def start_query(writer: DataStreamWriter, attempts: int = 5) -> StreamingQuery:
    """The query started once its sources are initialised; a query whose Python source's
    worker missed Spark's start-up deadline is started again (it failed before planning
    anything, so its checkpoint is as it was)."""
    for _ in range(attempts - 1):
        query = writer.start()
        wait_until(partial(_initialised, query), TIMEOUT, "the query initialising its sources")
        error = query.exception()
        if error is None or WORKER_START not in str(error):
            return query
    return writer.start()


def _initialised(query: StreamingQuery) -> bool:
    return not query.isActive or query.status["message"] != INITIALIZING


def run_available_now(frame: DataFrame, checkpoint: Path, timeout: float = TIMEOUT
                      ) -> StreamRun:
    """One Trigger.AvailableNow run of `frame` from `checkpoint`, batch by batch; fails with
    the query's error."""
    run = StreamRun()
    query = start_query(frame.writeStream.foreachBatch(run.collect)
                        .option("checkpointLocation", str(checkpoint))
                        .trigger(availableNow=True))
    assert query.awaitTermination(timeout), "the availableNow query did not finish"
    assert query.exception() is None, query.exception()
    progress = query.lastProgress
    if progress and progress["sources"]:
        end = progress["sources"][0]["endOffset"]
        run.end_offset = json.loads(end) if isinstance(end, str) else end
    return run
