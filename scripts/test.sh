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
# The JVM layer (Kafka's own software) runs beside the rest: its cost is the JVMs' CPU, the
# rest's mostly waiting on clients, clusters and timeouts (about 0.75 of a core), so the rest
# runs in two workers, a module in one (tests/conftest.py's groups). Its report follows the
# rest's.
work=$(mktemp -d)
"${pytest[@]}" -m jvm --basetemp="$work/jvm" >"$work/jvm.log" 2>&1 &
jvm=$!
status=0
"${pytest[@]}" -n 2 --dist loadgroup --no-loadscope-reorder \
  -m "not jvm and not campaign and not spark_cluster" --basetemp="$work/rest" || status=$?
wait "$jvm" || status=$?
echo "=== the jvm layer (pytest -m jvm) ==="
cat "$work/jvm.log"
# Spark clusters of containers (three to five JVMs each) run alone: beside the other layers
# on two cores they took four times as long and starved the Spark tests beside them.
echo "=== Spark clusters of containers (pytest -m spark_cluster) ==="
"${pytest[@]}" -m spark_cluster --basetemp="$work/spark-cluster" || status=$?
# The short fault campaign (8 nodes in network namespaces, faults every few seconds) runs
# alone too: its checker judges what clients saw, and starved clients see only timeouts.
echo "=== the short fault campaign (pytest -m campaign) ==="
"${pytest[@]}" -m campaign --basetemp="$work/campaign" || status=$?
rm -rf "$work"
exit "$status"
