"""A node's identity in the Helm chart's StatefulSets (deploy/helm/odradek), from what its pod
knows: the downward API's POD_NAME, the chart's variables below, and the files the brokers'
init container wrote (`kubernetes_node.py`). Without IO but for reading those files.

- `node.id` is NODE_ID_BASE plus the pod's ordinal (the suffix of its name).
- A broker advertises its stable name under the headless service,
  `POD_NAME.HEADLESS_SERVICE.POD_NAMESPACE.svc.CLUSTER_DOMAIN`, on INTERNAL_PORT and, when
  set, REPLICATION_PORT; with EXTERNAL_PORT set, also an EXTERNAL address: the pod's own of
  EXTERNAL_HOSTS (space-separated, by ordinal) or else its node's address, on port
  EXTERNAL_PORT + ordinal * EXTERNAL_PORT_STEP (a NodePort per broker, or one
  load-balancer port).
- `broker.rack` is the zone the init container found, when it found one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from odradek.config.env import variable_name
from odradek.config.kafka_configs import InvalidConfigError

NODE_ID_BASE = "NODE_ID_BASE"
"""Set by the chart on every node it runs; its absence means the node is not in a chart."""
NODE_INFO_DIR = Path("/var/run/odradek")
"""Where the init container writes `rack` and `node-address`."""


def ordinal(pod_name: str) -> int:
    """A StatefulSet pod's ordinal: `east-odradek-broker-2` is 2."""
    suffix = pod_name.rpartition("-")[2]
    if not suffix.isdigit():
        raise InvalidConfigError(f"POD_NAME {pod_name!r} does not end in a pod ordinal")
    return int(suffix)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _required(env: Mapping[str, str], name: str) -> str:
    if not env.get(name):
        raise InvalidConfigError(f"{name} is required in a pod of the chart")
    return env[name]


def external_host(env: Mapping[str, str], index: int, node_info: Path) -> str:
    if hosts := env.get("EXTERNAL_HOSTS", "").split():
        if index >= len(hosts):
            raise InvalidConfigError(f"no external host for broker {index}: EXTERNAL_HOSTS "
                                     f"names {len(hosts)}")
        return hosts[index]
    if address := _read(node_info / "node-address"):
        return address
    raise InvalidConfigError(f"no external host for broker {index}: neither EXTERNAL_HOSTS "
                             f"nor {node_info / 'node-address'}")


def advertised_listeners(env: Mapping[str, str], index: int, node_info: Path) -> str:
    host = ".".join((_required(env, "POD_NAME"), _required(env, "HEADLESS_SERVICE"),
                     _required(env, "POD_NAMESPACE"), "svc", _required(env, "CLUSTER_DOMAIN")))
    listeners = [f"INTERNAL://{host}:{int(_required(env, 'INTERNAL_PORT'))}"]
    if port := env.get("REPLICATION_PORT"):
        listeners.append(f"REPLICATION://{host}:{int(port)}")
    if port := env.get("EXTERNAL_PORT"):
        step = int(env.get("EXTERNAL_PORT_STEP", "0"))
        external = external_host(env, index, node_info)
        listeners.append(f"EXTERNAL://{external}:{int(port) + index * step}")
    return ",".join(listeners)


def pod_variables(env: Mapping[str, str], node_info: Path = NODE_INFO_DIR) -> dict[str, str]:
    """The ODRADEK_* variables a chart's pod adds to its environment: its node id and, on a
    broker, its advertised listeners and rack. Empty outside the chart."""
    if NODE_ID_BASE not in env:
        return {}
    index = ordinal(_required(env, "POD_NAME"))
    variables = {variable_name("node.id"): str(int(env[NODE_ID_BASE]) + index)}
    roles = env.get(variable_name("process.roles"), "").split(",")
    if "broker" in roles:
        variables[variable_name("advertised.listeners")] = advertised_listeners(
            env, index, node_info)
        if rack := _read(node_info / "rack"):
            variables[variable_name("broker.rack")] = rack
    return variables
