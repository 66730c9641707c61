#!/usr/bin/env bash
# Installs Odradek and runs the embedded single-node default on 127.0.0.1:9092, data in ./data.
# Extra arguments go to `odradek dev` (e.g. --port 19092 --data-dir /tmp/odradek).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/odradek dev "$@"
