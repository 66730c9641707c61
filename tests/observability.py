"""The files of observability/ as tests read them: rule files and their promtool tests, the
scrape configs, the dashboards' panel queries, and the dashboard generator."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent / "observability"
PROMETHEUS = ROOT / "prometheus"
RULES = sorted((PROMETHEUS / "rules").glob("*.yml"))
RULE_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
LOCAL_CONFIG = PROMETHEUS / "prometheus-local.yml"
COMPOSE_CONFIG = PROMETHEUS / "prometheus-compose.yml"
PODMONITOR = PROMETHEUS / "kubernetes" / "podmonitor.yaml"
GRAFANA = ROOT / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
GENERATOR = GRAFANA / "generate.py"


def binary(name: str) -> str:
    """The path of a Prometheus binary; a failure (not a skip) when it is missing, since
    `scripts/bootstrap.sh --dev` installs it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: install Debian's prometheus package "
                    "(scripts/bootstrap.sh --dev does)")
    return path


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def alerts(rule_file: Path) -> list[dict[str, Any]]:
    return [rule for group in load_yaml(rule_file)["groups"] for rule in group["rules"]
            if "alert" in rule]


def without_for(rule_file: Path) -> str:
    """The rule file with every alert's `for` removed, so that an alert fires as soon as its
    expression holds (the promtool tests cover the `for` durations)."""
    data = load_yaml(rule_file)
    for group in data["groups"]:
        for rule in group["rules"]:
            rule.pop("for", None)
    return str(yaml.safe_dump(data, sort_keys=False))


def static_configs(nodes: Iterable[dict[str, Any]], cluster: str,
                   host: str = "127.0.0.1") -> list[dict[str, Any]]:
    """Scrape targets of an `odradek cluster`'s nodes (cluster.json's `nodes`), labelled as
    prometheus-local.yml labels them."""
    return [{"targets": [f"{host}:{node['metrics_port']}"],
             "labels": {"cluster": cluster, "instance": node["name"], "role": node["role"]}}
            for node in nodes]


@dataclass(frozen=True, slots=True)
class PanelQuery:
    dashboard: str
    panel: str
    expr: str

    @property
    def id(self) -> str:
        return f"{self.dashboard}/{self.panel}"


def dashboard(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def panel_queries() -> list[PanelQuery]:
    """Every query of every panel of the committed dashboards."""
    queries = []
    for path in DASHBOARDS:
        data = dashboard(path)
        for panel in data["panels"]:
            for target in panel.get("targets", []):
                queries.append(PanelQuery(data["uid"], panel["title"], target["expr"]))
    return queries


VARIABLE = re.compile(r"\$(\w+)")


def substitute(expr: str, cluster: str, rate_interval: str = "30s") -> str:
    """What Grafana sends for a panel with `cluster` set and every other variable at All:
    the dashboards' variables all match with =~ and offer All as `.*`."""
    values = {"cluster": cluster, "__rate_interval": rate_interval}
    return VARIABLE.sub(lambda m: values.get(m.group(1), ".*"), expr)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("observability_grafana_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module
