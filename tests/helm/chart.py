"""deploy/helm/odradek rendered and linted through helm-python-sdk (Helm v4's Go SDK in a
shared library inside the wheel: no helm binary, no network), and the values matrix the
tests render it with."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "odradek"
NAMESPACE = "data"

MATRIX: dict[str, dict[str, Any]] = {
    "default": {},
    "dev": {"mode": "combined", "brokers": {"replicas": 1, "rack": {"enabled": False},
                                             "topologySpread": {"enabled": False}}},
    "external-nodeport": {"brokers": {"external": {"enabled": True}}},
    "external-loadbalancer": {"brokers": {"external": {
        "enabled": True, "type": "LoadBalancer",
        "advertisedHosts": ["b0.kafka.example.com", "b1.kafka.example.com",
                            "b2.kafka.example.com"]}}},
    "mirror": {"clusterAlias": "west", "mirror": {
        "enabled": True, "replicas": 2,
        "clusters": {"east": {"bootstrapServers": "east-odradek-bootstrap.data:9092"},
                     "west": {}},
        "flows": [{"source": "east", "target": "west", "topics": "orders.*"}],
        "properties": {"replication.factor": 3}}},
    "spark-submit": {"spark": {
        "audit": {"enabled": True, "sourceAlias": "east",
                  "sourceBootstrap": "east-odradek-bootstrap.data:9092", "window": "1h",
                  "schedule": "15 * * * *"},
        "compaction": {"enabled": True, "topics": "customers", "verify": True},
        "outputClaim": "odradek-spark-output"}},
    "spark-operator": {"spark": {
        "runner": "operator",
        "audit": {"enabled": True, "sourceAlias": "east",
                  "sourceBootstrap": "east-odradek-bootstrap.data:9092"},
        "compaction": {"enabled": True, "topics": "customers"},
        "outputClaim": "odradek-spark-output"}},
    "monitoring": {"monitoring": {"podMonitor": {"enabled": True},
                                  "serviceMonitor": {"enabled": True},
                                  "prometheusRule": {"enabled": True},
                                  "dashboards": {"enabled": True}},
                   "networkPolicy": {"enabled": True}},
    "tls-scram-acls": {
        "tls": {"enabled": True, "existingSecret": "east-tls"},
        "sasl": {"scram": {"enabled": True}, "users": {"existingSecret": "east-users"}},
        "authorization": {"enabled": True, "superUsers": ["User:admin"]},
        "brokers": {"external": {"enabled": True}}, "networkPolicy": {"enabled": True}},
    "tls-cert-manager-mtls": {
        "tls": {"enabled": True, "clientAuth": "required",
                "certManager": {"enabled": True, "issuerRef": {"name": "odradek-ca"}}},
        "authorization": {"enabled": True, "superUsers": ["User:admin"]},
        "brokers": {"external": {"enabled": True, "type": "LoadBalancer", "advertisedHosts": [
            "b0.kafka.example.com", "b1.kafka.example.com", "b2.kafka.example.com"]}}},
    "scram-dev": {
        "mode": "combined", "brokers": {"replicas": 1, "rack": {"enabled": False},
                                        "topologySpread": {"enabled": False}},
        "tls": {"enabled": True, "certManager": {
            "enabled": True, "issuerRef": {"name": "odradek-ca", "kind": "ClusterIssuer"}}},
        "sasl": {"scram": {"enabled": True}, "users": {"existingSecret": "dev-users"}}},
}
MATRIX["spark-submit-secured"] = {**MATRIX["spark-submit"], **MATRIX["tls-scram-acls"]}
MATRIX["spark-operator-secured"] = {**MATRIX["spark-operator"], **MATRIX["tls-scram-acls"]}
"""The issue's matrix: default; a single dev node; external access on (both kinds); the
mirror on; the Spark jobs (spark-submit and the Spark operator, each also on a release with
TLS, SCRAM and ACLs); monitoring on; and the security variants: TLS from a Secret with SCRAM
and ACLs, cert-manager with mTLS and ACLs, a dev node with cert-manager and SCRAM."""


@contextlib.contextmanager
def quiet_native() -> Iterator[None]:
    """Helm's Go logger writes an INFO line per symbolic link it follows to fd 2."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def render_files(values: dict[str, Any], release: str = "east", namespace: str = NAMESPACE,
                 config: helm.Config | None = None, **options: Any) -> dict[str, str]:
    """Template path -> rendered text (offline, or through `config` for `lookup`)."""
    with quiet_native(), helm.Chart.load(CHART) as chart:
        if config is None:
            return chart.render(values, name=release, namespace=namespace, **options)
        return config.render(chart, values, name=release, namespace=namespace, **options)


def render(values: dict[str, Any], release: str = "east",
           namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """Every object the chart renders (NOTES.txt left out)."""
    objects: list[dict[str, Any]] = []
    for path, text in sorted(render_files(values, release, namespace).items()):
        if path.endswith(".txt"):
            continue
        objects.extend(o for o in yaml.safe_load_all(io.StringIO(text)) if o)
    return objects


def lint(values: dict[str, Any], kube_version: str) -> dict[str, Any]:
    with quiet_native():
        report: dict[str, Any] = helm.lint(CHART, values, strict=True, namespace=NAMESPACE,
                                           kube_version=f"v{kube_version}")
    return report


def notes(values: dict[str, Any], release: str = "east") -> str:
    files = render_files(values, release)
    return next(text for path, text in files.items() if path.endswith("NOTES.txt"))


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None
         ) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind
            and (name is None or o["metadata"]["name"] == name)]


def one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = find(objects, kind, name)
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def container(workload: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workload["spec"]["template"]["spec"]["containers"]
    return containers[0]


def job_arguments(objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each Spark job's application file -> its arguments, from the CronJobs' spark-submit
    command lines or the ScheduledSparkApplications."""
    jobs = {}
    for cron in find(objects, "CronJob"):
        args = container(cron["spec"]["jobTemplate"])["args"]
        at = next(i for i, a in enumerate(args) if a.startswith("local://"))
        jobs[Path(args[at]).name] = args[at + 1:]
    for app in find(objects, "ScheduledSparkApplication"):
        template = app["spec"]["template"]
        jobs[Path(template["mainApplicationFile"]).name] = template["arguments"]
    return jobs
