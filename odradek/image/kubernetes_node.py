"""The brokers' init container in the Helm chart (deploy/helm/odradek): what a pod can only
learn about the node it was scheduled on by asking the API server, as Strimzi's kafka-init
does (the downward API exposes the node's name, not its labels or addresses):

    python -m odradek.image.kubernetes_node --output /var/run/odradek [--zone-label LABEL]

reads the node named by $NODE_NAME with the pod's service account and writes two files
there: `rack`, the value of the zone label (broker.rack; empty when the node has none), and
`node-address`, the address a NodePort client reaches the node on (Strimzi's order:
ExternalDNS, ExternalIP, InternalDNS, InternalIP, Hostname)."""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from os import environ
from pathlib import Path
from typing import Any

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
ZONE_LABEL = "topology.kubernetes.io/zone"
ADDRESS_PREFERENCE = ("ExternalDNS", "ExternalIP", "InternalDNS", "InternalIP", "Hostname")
TIMEOUT_S = 10.0


def node_facts(node: Mapping[str, Any], zone_label: str = ZONE_LABEL) -> tuple[str, str]:
    """(rack, address) of a Node object: its zone label's value and its preferred address,
    each empty when the node has none."""
    rack = node.get("metadata", {}).get("labels", {}).get(zone_label, "")
    addresses = {a["type"]: a["address"] for a in node.get("status", {}).get("addresses", [])}
    address = next((addresses[t] for t in ADDRESS_PREFERENCE if addresses.get(t)), "")
    return rack, address


def api_server(env: Mapping[str, str]) -> str:
    """The in-cluster API server's URL, as client-go finds it."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise OSError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: "
                      "not running in a pod")
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def read_node(server: str, name: str, account: Path = SERVICE_ACCOUNT) -> dict[str, Any]:
    """GET /api/v1/nodes/NAME with the service account's token, trusting its CA."""
    request = urllib.request.Request(
        f"{server}/api/v1/nodes/{name}",
        headers={"Authorization": f"Bearer {(account / 'token').read_text().strip()}",
                 "Accept": "application/json"})
    context = ssl.create_default_context(cafile=str(account / "ca.crt"))
    with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context) as response:
        node: dict[str, Any] = json.loads(response.read())
    return node


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] = environ) -> int:
    parser = argparse.ArgumentParser(prog="python -m odradek.image.kubernetes_node",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, type=Path, metavar="DIR")
    parser.add_argument("--zone-label", default=ZONE_LABEL)
    parser.add_argument("--service-account", type=Path, default=SERVICE_ACCOUNT, metavar="DIR",
                        help=f"its token and ca.crt (default {SERVICE_ACCOUNT})")
    args = parser.parse_args(argv)
    name = env.get("NODE_NAME")
    try:
        if not name:
            raise OSError("NODE_NAME is not set (the downward API's spec.nodeName)")
        rack, address = node_facts(read_node(api_server(env), name, args.service_account),
                                   args.zone_label)
        (args.output / "rack").write_text(rack)
        (args.output / "node-address").write_text(address)
    except urllib.error.HTTPError as error:
        print(f"kubernetes_node: GET node {name}: {error.code} {error.reason}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"kubernetes_node: {error}", file=sys.stderr)
        return 1
    print(f"node {name}: rack {rack or '(none)'}, address {address or '(none)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
