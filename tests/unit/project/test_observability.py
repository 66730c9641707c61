"""observability/ checked without a cluster: the rule files pass `promtool check rules`,
every alert has promtool unit tests that pass and cover it firing and not firing, the scrape
configs are valid and label every target as the rules and dashboards expect, and the
committed dashboards are the generator's output with every query selecting on the
`cluster` and `instance` variables."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from odradek.cli.cluster.layout import plan
from tests import observability as obs

DEFAULT_BASE_PORT = 9092
"""`odradek cluster up`'s default --base-port, which prometheus-local.yml's targets assume."""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60)


def test_every_rule_file_passes_promtool_check_rules() -> None:
    assert obs.RULES
    result = run(obs.binary("promtool"), "check", "rules", *map(str, obs.RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_not_firing_promtool_test() -> None:
    names = {rule["alert"] for path in obs.RULES for rule in obs.alerts(path)}
    firing: set[str] = set()
    silent: set[str] = set()
    for path in obs.RULE_TESTS:
        for test in obs.load_yaml(path)["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    assert names - firing == set(), "alerts without a firing test"
    assert names - silent == set(), "alerts without a not-firing test"
    assert (firing | silent) - names == set(), "tests of alerts that do not exist"


def test_promtool_unit_tests_pass() -> None:
    result = run(obs.binary("promtool"), "test", "rules", *map(str, obs.RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("config", [obs.LOCAL_CONFIG, obs.COMPOSE_CONFIG], ids=lambda p: p.name)
def test_scrape_config_passes_promtool_and_labels_every_target(config: Path) -> None:
    result = run(obs.binary("promtool"), "check", "config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    data = obs.load_yaml(config)
    assert data["rule_files"] == ["rules/*.yml"]
    for job in data["scrape_configs"]:
        for group in job["static_configs"]:
            assert {"cluster", "role"} <= set(group["labels"]), group
            assert group["labels"]["role"] in {"broker", "controller", "combined", "mirror"}


def test_local_config_targets_are_the_default_cluster_layout() -> None:
    layout = plan(Path("/data"), controllers=3, brokers=3, base_port=DEFAULT_BASE_PORT,
                  cluster_id="id").to_json()
    (job,) = obs.load_yaml(obs.LOCAL_CONFIG)["scrape_configs"]
    assert job["static_configs"] == obs.static_configs(layout["nodes"], "local")


def test_podmonitor_sets_the_labels_rules_and_dashboards_use() -> None:
    monitor = obs.load_yaml(obs.PODMONITOR)
    assert monitor["kind"] == "PodMonitor"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert {r["targetLabel"] for r in endpoint["relabelings"]} >= {"cluster", "role",
                                                                   "instance"}


def test_committed_dashboards_are_the_generators_output() -> None:
    rendered = obs.generator().render()
    committed = {path.name: path.read_text() for path in obs.DASHBOARDS}
    assert committed.keys() == rendered.keys()
    for name, text in rendered.items():
        assert committed[name] == text, f"{name} is stale: run observability/grafana/generate.py"


NAME = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?")
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless"}


def metric_selectors(expr: str) -> list[tuple[str, str]]:
    """(metric, matchers) of each selector in a PromQL expression."""
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    return [(name, matchers or "") for name, matchers, call in NAME.findall(expr)
            if not call and name not in KEYWORDS]


@pytest.mark.parametrize("query", obs.panel_queries(), ids=lambda q: q.id)
def test_every_panel_query_selects_on_cluster_and_instance(query: obs.PanelQuery) -> None:
    """Each metric in a query carries both variables' matchers (a bare metric would show
    every cluster's series)."""
    selectors = metric_selectors(query.expr)
    assert selectors, query.expr
    for name, matchers in selectors:
        assert 'cluster=~"$cluster"' in matchers and 'instance=~"$instance"' in matchers, \
            (name, query.expr)


def test_every_dashboard_has_the_cluster_and_instance_variables() -> None:
    for path in obs.DASHBOARDS:
        names = [v["name"] for v in obs.dashboard(path)["templating"]["list"]]
        assert {"cluster", "instance"} <= set(names), path.name
