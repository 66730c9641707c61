from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import groups, mirror_process
from tests.integration.broker_process import BrokerProcess
from tests.integration.cluster import Cluster
from tests.integration.log_digest import digest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report carries the tails of its Odradek processes' logs, where a
    stuck event loop, a crash or a refused config says what the client could not."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    for name, value in funcargs.items():
        cluster = value if isinstance(value, Cluster) else getattr(value, "cluster", None)
        if isinstance(cluster, Cluster):
            report.sections.append((f"odradek logs ({name})", cluster.logs()))
        elif isinstance(value, BrokerProcess):
            report.sections.append((f"odradek log ({name})", digest(name, value.logs())))
    fixtures = [value for value in funcargs.values()
                if isinstance(value, mirror_process.MirrorProcess)]
    for mirror in dict.fromkeys([*fixtures, *mirror_process.STARTED]):
        report.sections.append((f"mirror log ({mirror.log_path})",
                                digest(mirror.log_path.name, mirror.logs())))


@pytest.fixture(autouse=True)
def close_group_consumers() -> Iterator[None]:
    """Consumers a failed test left open would keep polling (and heartbeating) into the
    next tests; the mirrors a test started are no longer its to report."""
    yield
    mirror_process.STARTED.clear()
    while groups.OPEN:
        driver = groups.OPEN.pop()
        with contextlib.suppress(Exception):
            driver.close_all()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory,
           request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
    """One broker shared by a test module (tests use their own topics), with the configs of
    the module's BROKER_OVERRIDES, if any."""
    root = tmp_path_factory.mktemp("broker")
    process = BrokerProcess(root / "data", root / "broker.log",
                            overrides=getattr(request.module, "BROKER_OVERRIDES", None))
    process.start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for restarts, kills and config overrides."""
    process = BrokerProcess(tmp_path / "data", tmp_path / "broker.log")
    yield process
    if process.alive():
        process.kill()
