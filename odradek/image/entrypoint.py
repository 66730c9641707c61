"""The entrypoint and health check of the broker and controller images (services/):

    python -m odradek.image.entrypoint run [ARG ...]     # PID 1: the node process
    python -m odradek.image.entrypoint healthcheck       # 0 once /health answers 200

The node's config is the image's default file (ODRADEK_CONFIG_FILE names another) overlaid
with the SSL configs of ODRADEK_TLS_DIR's certificates, then with the ODRADEK_* variables
(`odradek/config/env.py`). `process.roles` picks the process, as in Kafka: `broker` runs
`odradek broker`, `controller` runs `odradek controller`, both run the combined `odradek dev`.
ODRADEK_CLUSTER_ID is required. In a pod of the Helm chart, the node's id, advertised
listeners and rack come from the pod (`odradek/image/pod.py`). A controller given
ODRADEK_SCRAM_USERS_DIR formats its storage with those users first
(`odradek/image/secrets.py`)."""

from __future__ import annotations

import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from os import environ
from pathlib import Path

from odradek.config.env import PREFIX, configs_from_env, variable_name
from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError, load_properties
from odradek.image import secrets
from odradek.image.pod import pod_variables
from odradek.runtime.service import HEALTH_PATH

CONFIG_FILE_VARIABLE = "ODRADEK_CONFIG_FILE"
DEFAULT_CONFIG_FILE = "/etc/odradek/server.properties"
HEALTHCHECK_TIMEOUT_S = 3.0
COMMANDS = {("broker",): "broker", ("controller",): "controller",
            ("broker", "controller"): "dev"}
"""process.roles -> the odradek command that runs them."""


def node_configs(env: Mapping[str, str]) -> tuple[Path, dict[str, str]]:
    """The config file and the configs the environment sets over it."""
    path = Path(env.get(CONFIG_FILE_VARIABLE, DEFAULT_CONFIG_FILE))
    own = {CONFIG_FILE_VARIABLE, *secrets.VARIABLES}
    overrides = configs_from_env({k: v for k, v in env.items() if k not in own})
    return path, overrides


def node_argv(env: Mapping[str, str], extra: Sequence[str] = (),
              defaults: Mapping[str, str] | None = None) -> list[str]:
    """The `odradek` command line of the node this environment describes; `defaults` are
    configs the file sets unless a variable sets them."""
    path, overrides = node_configs(env)
    overrides = {**(defaults or {}), **overrides}
    if not overrides.get("cluster.id"):
        raise InvalidConfigError(
            f"{variable_name('cluster.id')} is required: the same cluster id on every node "
            "of a cluster (22 characters of URL-safe base64, as kafka-storage random-uuid "
            "prints)")
    config = BrokerConfig({**load_properties(path), **overrides})
    roles = tuple(sorted(config["process.roles"] or ()))  # type: ignore[arg-type]
    if roles not in COMMANDS:
        raise InvalidConfigError(f"process.roles must be broker, controller or both, "
                                 f"not {config.text('process.roles')!r}")
    return [COMMANDS[roles], "--config", str(path),
            *(f"--override={name}={value}" for name, value in sorted(overrides.items())),
            *extra]


def commands(env: Mapping[str, str], private_dir: Path, extra: Sequence[str] = ()
             ) -> list[list[str]]:
    """The `odradek` commands to run in turn: on a node with the controller role given
    ODRADEK_SCRAM_USERS_DIR, `storage format` with its users (its config written to
    `private_dir`); then the node itself, with ODRADEK_TLS_DIR's SSL configs (its key store
    written to `private_dir`)."""
    defaults: dict[str, str] = {}
    if tls_dir := env.get(secrets.TLS_DIR_VARIABLE):
        defaults = secrets.tls_configs(Path(tls_dir), private_dir)
    node = node_argv(env, extra, defaults)
    users_dir = env.get(secrets.SCRAM_USERS_VARIABLE)
    if not users_dir or node[0] == "broker":
        return [node]
    path, overrides = node_configs(env)
    configs = {**load_properties(path), **defaults, **overrides}
    config_file = private_dir / "format.properties"
    secrets.write_properties(configs, config_file)
    users = secrets.scram_users(Path(users_dir))
    return [secrets.format_argv(config_file, configs["cluster.id"], users), node]


def run(env: Mapping[str, str], extra: Sequence[str] = ()) -> int:
    """Runs `commands` in this process (no password shows in a process listing) and keeps
    the key store in step with ODRADEK_TLS_DIR; the first failing status, or the node's."""
    from odradek.cli.main import main as odradek

    private = Path(tempfile.mkdtemp(prefix="odradek-"))
    steps = commands(env, private, extra)
    if tls_dir := env.get(secrets.TLS_DIR_VARIABLE):
        secrets.follow_key_store(Path(tls_dir), private / secrets.KEY_STORE)
    for step in steps:
        status = odradek(step)
        if status != 0:
            return status
    return 0


def healthcheck(env: Mapping[str, str]) -> int:
    """0 when the process's /health answers 200; else 1 with the reason on stdout."""
    path, overrides = node_configs(env)
    port = BrokerConfig({**load_properties(path), **overrides}).integer("metrics.port")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{HEALTH_PATH}",
                                    timeout=HEALTHCHECK_TIMEOUT_S) as response:
            print(response.read().decode().strip())
            return 0
    except urllib.error.HTTPError as error:
        print(error.read().decode().strip() or error.reason)
    except OSError as error:
        print(f"no answer on port {port}: {error}")
    return 1


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] = environ) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    verb, rest = (args[0], args[1:]) if args else ("", [])
    try:
        env = {**env, **pod_variables(env)}
        if verb == "healthcheck":
            return healthcheck(env)
        if verb == "run":
            return run(env, rest)
    except (InvalidConfigError, OSError) as error:
        print(f"odradek: invalid configuration: {error}", file=sys.stderr)
        return 2
    print(f"usage: python -m odradek.image.entrypoint run|healthcheck (configs as {PREFIX}* "
          "variables)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
