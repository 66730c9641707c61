#!/usr/bin/env bash
# Builds the two local images the container tests use where no container registry can be
# reached, once per machine (an image that exists is kept; --rebuild builds both again):
#   odradek-test-base:bookworm        debootstrap of Debian bookworm (minbase) with python3,
#                                     python3-venv and ca-certificates, plus this host's CA
#                                     bundle, docker-imported: ODRADEK_BASE_IMAGE for our images
#   odradek-test-prometheus:bookworm  that base with Debian's prometheus package:
#                                     ODRADEK_PROMETHEUS_IMAGE for the compose stack
# Outbound TLS here may be re-signed by an authority only the host's bundle trusts, so the
# bundle goes into the rootfs (Debian's standard file) and pip is pointed at it.
set -euo pipefail

BASE=odradek-test-base:bookworm
PROMETHEUS=odradek-test-prometheus:bookworm
HOST_BUNDLE=/etc/ssl/certs/ca-certificates.crt
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

exists() { docker image inspect "$1" >/dev/null 2>&1; }

if [[ ${1:-} == --rebuild ]]; then
  docker image rm -f "$PROMETHEUS" "$BASE" >/dev/null 2>&1 || true
fi

if ! exists "$BASE"; then
  echo "container_base_images: building $BASE with debootstrap (about a minute)" >&2
  rootfs=$(mktemp -d /tmp/odradek-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; exit 1; }
  rm -f "$rootfs.log"
  if [[ -s $HOST_BUNDLE ]]; then
    cp "$HOST_BUNDLE" "$rootfs/etc/ssl/certs/ca-certificates.crt"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
fi

if ! exists "$PROMETHEUS"; then
  echo "container_base_images: building $PROMETHEUS from Debian's prometheus" >&2
  # the official image's layout: /bin/prometheus as entrypoint, data in /prometheus
  DOCKER_BUILDKIT=0 docker build -q -t "$PROMETHEUS" - >/dev/null <<EOF
FROM $BASE
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
EOF
fi
