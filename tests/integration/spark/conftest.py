"""The Spark layer: one SparkSession (local[2]) for the whole test session, since a JVM costs
seconds; every test here carries the `spark` marker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from odradek.spark.session import spark_session
from tests import jvm_toolchain
from tests.integration.broker_process import BrokerProcess
from tests.integration.spark.mirroring import Mirror, ServiceMirror, dev_cluster

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
    # with Spark's Kafka connector when built: a later module's session (tests/integration/jvm)
    # can only have it if the JVM started with it
    session = spark_session("odradek-tests", master="local[2]",
                            conf={**TEST_CONF, **jvm_toolchain.spark_kafka_conf()})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_cluster(tmp_path_factory, "east")


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_cluster(tmp_path_factory, "west")


@pytest.fixture(scope="module")
def mirror(east: BrokerProcess, west: BrokerProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """East mirrored to west by `odradek mirror`."""
    service = ServiceMirror(tmp_path_factory.mktemp("mirror"), east.bootstrap,
                            west.bootstrap).start()
    yield service
    service.stop()
