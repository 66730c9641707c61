from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.jvm.conformance import tally
from tests.integration.jvm.conformance.pair import running_pair
from tests.integration.jvm.conformance.runner import Target


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Target, Target]]:
    with running_pair(tmp_path_factory.mktemp("conformance")) as targets:
        yield targets


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if tally.requests:
        for line in tally.summary():
            terminalreporter.write_line(line)
