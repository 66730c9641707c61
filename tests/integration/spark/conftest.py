"""The Spark layer: one SparkSession (local[2]) for the whole test session, since a JVM costs
seconds; every test here carries the `spark` marker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from odradek.spark.session import spark_session

TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration/spark" in str(item.fspath):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session("odradek-tests", master="local[2]", conf=TEST_CONF)
    yield session
    session.stop()
