#!/usr/bin/env bash
# Creates ./.venv and installs Odradek into it (Debian's python3-venv first, when the
# Python lacks venv or ensurepip). `--dev` adds everything the tests need: Debian's kcat,
# nftables, iproute2, prometheus (promtool), docker.io, debootstrap, a JDK and Maven when
# they are missing, kafkajs from npm, Kafka's own jars from Maven Central, built into the
# JVM test programs of tests/jvm, and librdkafka's test-runner (from npm's copy of its
# source). Idempotent and quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
apt_install() {
  echo "bootstrap: installing $* from Debian" >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed")'
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
  "$PY" -m venv .venv
fi
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
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)  # Kafka's jars
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  # librdkafka's test suite, built from source: zstd and lz4 as in librdkafka's CI builds
  dpkg -s libzstd-dev liblz4-dev libssl-dev >/dev/null 2>&1 \
    || missing+=(libzstd-dev liblz4-dev libssl-dev)
  if (( ${#missing[@]} )); then apt_install "${missing[@]}"; fi
  kafkajs=tests/integration/kafkajs # installed lock copied into node_modules marks it current
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: node/npm not found; the kafkajs integration tests will skip" \
      "(install Node.js >= 14 with npm to run them)" >&2
  elif ! cmp -s "$kafkajs/package-lock.json" "$kafkajs/node_modules/.bootstrap-package-lock.json"; then
    echo "bootstrap: installing kafkajs for the integration tests (npm ci)" >&2
    npm ci --prefix "$kafkajs" --no-audit --no-fund >&2
    cp "$kafkajs/package-lock.json" "$kafkajs/node_modules/.bootstrap-package-lock.json"
  fi
  # Kafka 4.x (clients, tools, Streams, MM2, the broker) and Spark's Kafka connector, pinned
  # in tests/jvm/pom.xml, into the local Maven cache; the test programs into their jar.
  mvn -q -B -Dstyle.color=never -f tests/jvm/pom.xml package >&2
  # librdkafka's own regression tests (npm's copy of its source), built once into a cache.
  bash scripts/librdkafka_suite.sh build >/dev/null
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v "^WARNING: Location" >&2 || true
.venv/bin/python -c 'import odradek' # fail loudly if the install did not work
