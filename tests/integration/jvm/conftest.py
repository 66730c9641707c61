from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import jvm_toolchain
from tests.integration.apache_kafka import ApacheKafka


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration/jvm" in str(item.fspath):
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(autouse=True)
def jvm_toolchain_built() -> None:
    jvm_toolchain.require()


@pytest.fixture(scope="module")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafka]:
    """A real Apache Kafka (one combined KRaft node) shared by a test module."""
    root = tmp_path_factory.mktemp("apache-kafka")
    kafka = ApacheKafka(root / "data", root / "kafka.log")
    kafka.start()
    yield kafka
    if kafka.alive():
        kafka.stop()
