#!/usr/bin/env bash
# Proves the README's first command on a fresh copy of this checkout: `bash scripts/dev.sh`
# creates a new virtual environment with the runtime dependencies only (no dev extra) and
# starts `odradek dev` on a free port with a temporary data dir; then one record is produced
# and consumed through it with the console tools, and the broker is stopped with SIGTERM.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
cleanup() {
  [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "smoke: $*" >&2
  [[ -f $work/odradek.log ]] && tail -n 40 "$work/odradek.log" >&2
  exit 1
}

mkdir "$work/repo"
git -C "$root" ls-files -z --cached --others --exclude-standard \
  | tar -C "$root" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$work/repo" -xf -
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "smoke: bash scripts/dev.sh --port $port in a fresh copy" >&2
bash "$work/repo/scripts/dev.sh" --port "$port" --data-dir "$work/data" \
  --override metrics.port=0 >"$work/odradek.log" 2>&1 &
pid=$!

venv="$work/repo/.venv/bin"
for _ in $(seq 600); do
  kill -0 "$pid" 2>/dev/null || fail "odradek dev exited before it listened"
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.5
done
python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null \
  || fail "odradek dev did not listen on $port within 300 s"
"$venv/python" -c 'import pytest' 2>/dev/null && fail "the dev extra leaked into the runtime venv"

bootstrap="127.0.0.1:$port"
"$venv/odradek" produce --bootstrap-server "$bootstrap" --topic smoke \
  --property parse.key=true --property key.separator=: <<<"k:hello" || fail "produce failed"
consumed=$("$venv/odradek" consume --bootstrap-server "$bootstrap" --topic smoke \
  --from-beginning --max-messages 1 --timeout-ms 60000 \
  --property print.key=true --property key.separator=:) || fail "consume failed"
[[ $consumed == "k:hello" ]] || fail "consumed ${consumed@Q}, expected 'k:hello'"
echo "smoke: produced and consumed one record with odradek produce and consume" >&2

kill -TERM "$pid"
for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "odradek dev did not stop within 30 s of SIGTERM"
wait "$pid" || fail "odradek dev exited with status $? after SIGTERM"
pid=""
echo "smoke: the first README command works without the dev extra" >&2
