"""Broker and controller configs from environment variables, named as the official Kafka
image names them with our prefix: `.` becomes `_`, `_` becomes `__`, `-` becomes `___`, upper
case, `ODRADEK_` in front (`node.id` is ODRADEK_NODE_ID, `controller.quorum.voters` is
ODRADEK_CONTROLLER_QUORUM_VOTERS). The names are checked against
`odradek/config/kafka_configs.py`."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from odradek.config.kafka_configs import ALL_BROKER_CONFIGS, InvalidConfigError, broker_config_def

PREFIX = "ODRADEK_"


def variable_name(config: str, prefix: str = PREFIX) -> str:
    """The environment variable that sets `config`."""
    return prefix + config.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def config_name(variable: str, prefix: str = PREFIX) -> str:
    """The config an environment variable (with `prefix`) sets."""
    body = variable.removeprefix(prefix).lower()
    parts = body.split("___")
    return "-".join(
        "_".join(piece.replace("_", ".") for piece in part.split("__")) for part in parts
    )


def configs_from_env(environ: Mapping[str, str], known: Collection[str] = ALL_BROKER_CONFIGS,
                     prefix: str = PREFIX) -> dict[str, str]:
    """Every `prefix`ed variable as a config; one that names no config in `known` is refused,
    so that a misspelt variable is not silently ignored."""
    configs: dict[str, str] = {}
    for variable, value in environ.items():
        if not variable.startswith(prefix):
            continue
        name = config_name(variable, prefix)
        broker_listener_config = known is ALL_BROKER_CONFIGS and broker_config_def(name)
        if name not in known and not broker_listener_config:
            raise InvalidConfigError(f"{variable} would set {name}, which is not a config")
        configs[name] = value
    return configs
