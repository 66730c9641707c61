#!/usr/bin/env bash
# Odradek against Tansu, side by side in one run, with the team's shared harness, kept
# outside this repository in ../shared/bench (see its README there).
# Odradek runs as `odradek dev`: disk storage, Kafka's default flush policy (page cache;
# fsync by flush.messages/flush.ms and at shutdown). Extra arguments go to compare.py,
# e.g. `bash bench/compare.sh --suite full --reps 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=../shared/bench/compare.py
[[ -x $harness ]] || { echo "bench/compare.sh: the shared harness $harness is not here" >&2; exit 2; }
bash scripts/bootstrap.sh
exec "$harness" \
  --a "$PWD/.venv/bin/odradek dev --port {port} --data-dir {data} --override metrics.port=-1" \
  --a-name odradek "$@"
