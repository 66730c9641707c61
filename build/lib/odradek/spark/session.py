"""The SparkSession the jobs run in: spark-submit's master when launched by it, else
`--master` (default `local[*]`); Spark's console progress bar on; the `odradek-kafka` source
registered."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from odradek.spark.kafka_source import KafkaDataSource

LOCAL = "local[*]"


def spark_session(app_name: str, master: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """The active session if there is one (a test's, a notebook's), else a new one.
    Executors run this same interpreter unless PYSPARK_PYTHON says otherwise, so the
    `odradek` package they unpickle the source from is the one installed here."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    active = SparkSession.getActiveSession()
    if active is not None:
        active.dataSource.register(KafkaDataSource)
        return active
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress",
                                                            "true")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not launched by spark-submit
        master = master or LOCAL
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.sql.shuffle.partitions", "8")
    elif master:
        builder = builder.master(master)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(KafkaDataSource)
    return spark
