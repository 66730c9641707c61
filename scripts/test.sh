#!/usr/bin/env bash
# Installs everything the tests need, then runs lint, type checks and the whole test suite.
# With arguments, pytest runs with them alone (e.g. `bash scripts/test.sh tests/unit`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --dev
bash scripts/docker_engine.sh
.venv/bin/ruff check odradek tests bench
.venv/bin/mypy
pytest=(.venv/bin/pytest -q -p no:cacheprovider --durations=25)
if (( $# )); then exec "${pytest[@]}" "$@"; fi
# Four workers on two cores: the suite mostly waits on clients, clusters and timeouts.
# tests/conftest.py groups the tests (a module, the container tests, the Spark tests) and
# orders the longest groups first. The fault campaign (`-m campaign`) runs on its own: it
# still finds anomalies in its consume-transform-produce stage (docs/reliability.md).
exec "${pytest[@]}" -n 4 --dist loadgroup --no-loadscope-reorder -m "not campaign"
