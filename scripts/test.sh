#!/usr/bin/env bash
# Installs everything the tests need, then runs lint, type checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --dev
bash scripts/docker_engine.sh
.venv/bin/ruff check odradek tests bench
.venv/bin/mypy
.venv/bin/pytest -q -p no:cacheprovider "$@"
