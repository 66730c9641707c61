"""librdkafka's own regression tests against a 3-broker Odradek cluster with librdkafka's
harness's broker config (tests/librdkafka): the bounded subset of tests/librdkafka/selection.py,
each of which must pass. The whole suite, in both configurations, is
`scripts/librdkafka_suite.sh run` (docs/testing.md has its counts)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jvm_toolchain import ROOT
from tests.librdkafka.harness import (
    PLAINTEXT,
    Environment,
    broker_tests,
    by_number,
    odradek_for_librdkafka,
    run_tests,
)
from tests.librdkafka.selection import CI_SUBSET, EXCLUDED_FAMILIES, TIMEOUT


@pytest.fixture(scope="module")
def librdkafka() -> Path:
    """librdkafka's source with its test-runner built (cached outside the repo)."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "librdkafka_suite.sh"), "build"],
                           capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    with odradek_for_librdkafka(tmp_path_factory.mktemp("librdkafka"), PLAINTEXT) as env:
        yield env


def test_the_selection_names_tests_of_this_librdkafka(librdkafka: Path) -> None:
    names = broker_tests(librdkafka)
    assert set(CI_SUBSET) <= set(names), set(CI_SUBSET) - set(names)
    alone = by_number(names)
    assert [n for n in CI_SUBSET if alone[n[:4]] != [n]] == []
    assert all(any(n.startswith(f) for n in names) for f in EXCLUDED_FAMILIES)


@pytest.mark.parametrize("name", CI_SUBSET)
def test_librdkafka_test_passes(librdkafka: Path, harness: Environment, name: str) -> None:
    [outcome] = run_tests(librdkafka, [name], harness, TIMEOUT)
    assert outcome.state == "PASSED", f"{outcome.state}: {outcome.reason}\n{outcome.output[-6000:]}"
