#!/usr/bin/env bash
# Odradek against Tansu, side by side in one run, with ../shared/bench (see its README).
# Odradek runs as `odradek dev`: disk storage, Kafka's default flush policy (page cache;
# fsync by flush.messages/flush.ms and at shutdown). Extra arguments go to compare.py,
# e.g. `bash bench/compare.sh --suite full --reps 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec ../shared/bench/compare.py \
  --a "$PWD/.venv/bin/odradek dev --port {port} --data-dir {data} --override metrics.port=-1" \
  --a-name odradek "$@"
