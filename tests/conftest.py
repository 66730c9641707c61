"""Settings for the whole suite.

Hypothesis runs without its per-example deadline and its too-slow health check: both are
timing thresholds, and the machines are shared and noisy.

Groups for running the suite in several processes (`pytest -n N --dist loadgroup
--no-loadscope-reorder`): a module's tests stay in one worker, so its module-scoped clusters
start once; the container tests share one worker, since they build the same images on one
Docker engine; and the tests of tests/integration/spark share one, since they share one
SparkSession (a JVM).
The longest groups come first (xdist hands groups out in collection order), so that none
starts last and holds the run up alone."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "odradek", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("odradek")

LONGEST_FIRST = ("containers", "spark", "tests.integration.test_pipeline_faults",
                 "tests.integration.jvm", "tests.integration")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    groups = {item: _group(item) for item in items}
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _rank(groups[item]))


def _group(item: pytest.Item) -> str:
    if item.get_closest_marker("containers"):
        return "containers"
    if "integration/spark/" in str(item.path):  # one session-scoped SparkSession
        return "spark"
    return item.module.__name__ if item.module else str(item.path)


def _rank(group: str) -> int:
    return next((rank for rank, prefix in enumerate(LONGEST_FIRST) if group.startswith(prefix)),
                len(LONGEST_FIRST))
