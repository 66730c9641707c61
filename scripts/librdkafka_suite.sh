#!/usr/bin/env bash
# Runs librdkafka's own test suite against Odradek, as librdkafka's CI runs it against Kafka:
# its harness's broker config on a 3-broker Odradek cluster, one test at a time, in
# PLAINTEXT and in SASL_SSL with SCRAM-SHA-512, then prints pass/fail/skip per configuration.
#
#   scripts/librdkafka_suite.sh build            download and build librdkafka and its tests
#   scripts/librdkafka_suite.sh run [options]    build if needed, then run (see --help)
#
# The source is librdkafka as vendored, tests/ included, by the npm package
# @confluentinc/kafka-javascript (pinned with its sha256). The build is cached in
# $LIBRDKAFKA_CACHE (default ~/.cache/odradek/librdkafka-<version>), outside the repo.
set -euo pipefail
cd "$(dirname "$0")/.."

NPM_PACKAGE=@confluentinc/kafka-javascript@1.10.1
NPM_SHA256=ada7d703bb1d3237e2292bfabf438d663b6160c9f1ac2a2406b5dc4257c81b66
LIBRDKAFKA_VERSION=2.15.1
CACHE=${LIBRDKAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/odradek/librdkafka-$LIBRDKAFKA_VERSION}
SRC=$CACHE/librdkafka

build() {
  if [[ -x $SRC/tests/test-runner && -f $CACHE/.built ]]; then return; fi
  mkdir -p "$CACHE"
  if [[ ! -f $SRC/configure ]]; then
    local tmp; tmp=$(mktemp -d "$CACHE/download.XXXXXX")
    echo "librdkafka_suite: fetching $NPM_PACKAGE (librdkafka $LIBRDKAFKA_VERSION)" >&2
    (cd "$tmp" && npm pack --silent "$NPM_PACKAGE" >/dev/null)
    local tgz; tgz=$(ls "$tmp"/*.tgz)
    echo "$NPM_SHA256  $tgz" | sha256sum --check --quiet
    tar -xzf "$tgz" -C "$tmp" package/deps/librdkafka
    rm -rf "$SRC" && mv "$tmp/package/deps/librdkafka" "$SRC" && rm -rf "$tmp"
  fi
  echo "librdkafka_suite: building librdkafka and its test-runner in $SRC" >&2
  (
    cd "$SRC"
    [[ -f Makefile.config ]] || ./configure --disable-gssapi --disable-curl --enable-ssl \
      --enable-zstd --enable-lz4-ext >"$CACHE/configure.log" 2>&1 || exit 1
    # librdkafka's top Makefile runs its sub-makes without the job server: -j per directory
    for dir in src src-cpp; do
      make -j2 -C "$dir" >>"$CACHE/make.log" 2>&1 || exit 1
    done
    make -j2 -C tests build >"$CACHE/make-tests.log" 2>&1 || exit 1
  ) || { echo "librdkafka_suite: build failed; see $CACHE/*.log" >&2; exit 1; }
  touch "$CACHE/.built"
}

case ${1:-} in
  build) build; echo "$SRC" ;;
  path) echo "$SRC" ;;
  run) shift; build; exec .venv/bin/python -m tests.librdkafka --source "$SRC" "$@" ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
