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

"$venv/python" - "$port" <<'PY' || fail "produce and consume failed"
import sys
from confluent_kafka import Consumer, Producer

bootstrap = f"127.0.0.1:{sys.argv[1]}"
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
failures = []
producer.produce("smoke", key=b"k", value=b"hello",
                 on_delivery=lambda error, _message: failures.append(error))
assert producer.flush(60) == 0 and failures == [None], f"delivery: {failures}"
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "smoke",
                     "auto.offset.reset": "earliest"})
consumer.subscribe(["smoke"])
for _ in range(120):
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        assert (message.key(), message.value()) == (b"k", b"hello"), message
        break
else:
    raise SystemExit("no record consumed within 60 s")
consumer.close()
print("smoke: produced and consumed one record", file=sys.stderr)
PY

kill -TERM "$pid"
for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
kill -0 "$pid" 2>/dev/null && fail "odradek dev did not stop within 30 s of SIGTERM"
wait "$pid" || fail "odradek dev exited with status $? after SIGTERM"
pid=""
echo "smoke: the first README command works without the dev extra" >&2
