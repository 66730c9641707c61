#!/usr/bin/env bash
# Creates ./.venv and installs Odradek into it. `--dev` adds everything the tests need,
# including Debian's kcat, nftables, iproute2, prometheus (promtool), docker.io and
# debootstrap when they are missing. Idempotent and quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed")'
[[ -x .venv/bin/python ]] || "$PY" -m venv .venv
extras=""
if [[ ${1:-} == --dev ]]; then
  extras="[dev]"
  missing=()
  command -v kcat >/dev/null 2>&1 || missing+=(kcat)
  command -v nft >/dev/null 2>&1 || missing+=(nftables)  # network-partition tests
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)  # observability tests
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)  # container tests
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)  # their base image
  if (( ${#missing[@]} )); then
    echo "bootstrap: installing ${missing[*]} from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  kafkajs=tests/integration/kafkajs # installed lock copied into node_modules marks it current
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: node/npm not found; the kafkajs integration tests will skip" \
      "(install Node.js >= 14 with npm to run them)" >&2
  elif ! cmp -s "$kafkajs/package-lock.json" "$kafkajs/node_modules/.bootstrap-package-lock.json"; then
    echo "bootstrap: installing kafkajs for the integration tests (npm ci)" >&2
    npm ci --prefix "$kafkajs" --no-audit --no-fund >&2
    cp "$kafkajs/package-lock.json" "$kafkajs/node_modules/.bootstrap-package-lock.json"
  fi
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v "^WARNING: Location" >&2 || true
.venv/bin/python -c 'import odradek' # fail loudly if the install did not work
