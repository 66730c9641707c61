"""The Helm chart (deploy/helm/odradek) rendered, linted and validated for the values matrix
of tests/helm/chart.py, and what it computes checked against what it must mean: voters and
DNS names, advertised addresses, disruption budgets, the PrometheusRules against
observability/, non-root pods, the cluster.id kept across upgrades (a `lookup` answered by a
stand-in API server), and the Spark jobs' arguments against the jobs' own parsers."""

from __future__ import annotations

import argparse
import json
import re
import tarfile
from base64 import b64decode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

from odradek.image.pod import pod_variables
from odradek.mirror.config import parse_mirror_config
from odradek.spark import audit, compaction
from tests.helm.chart import (
    CHART,
    MATRIX,
    NAMESPACE,
    ROOT,
    container,
    env_of,
    find,
    job_arguments,
    lint,
    notes,
    one,
    quiet_native,
    render,
    render_files,
)
from tests.helm.fake_api import FakeApiServer

pytestmark = pytest.mark.helm

KUBERNETES = kubernetes_validate.latest_version()
"""The newest Kubernetes whose schemas kubernetes-validate carries."""
CUSTOM_GROUPS = ("monitoring.coreos.com/", "sparkoperator.k8s.io/", "cert-manager.io/")
CRD_SCHEMAS = yaml.safe_load((Path(__file__).parent / "crd_schemas.yaml").read_text())
RULES = ROOT / "observability" / "prometheus" / "rules"
DASHBOARDS = ROOT / "observability" / "grafana" / "dashboards"


@pytest.fixture(scope="module", params=sorted(MATRIX))
def case(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(MATRIX[request.param])


def test_lint_is_clean(case: tuple[str, list[dict[str, Any]]]) -> None:
    name, _ = case
    report = lint(MATRIX[name], KUBERNETES)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["total_charts_linted"] == 1
    assert not problems and not report["errors"], problems or report["errors"]


def test_every_standard_object_validates_strictly(
        case: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = case
    standard = [o for o in objects if not o["apiVersion"].startswith(CUSTOM_GROUPS)]
    assert standard
    for obj in standard:
        try:
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {error.message} at "
                        f"{'/'.join(map(str, error.path))}")


def test_custom_resources_match_their_crd_schemas(
        case: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = case
    for obj in objects:
        if not obj["apiVersion"].startswith(CUSTOM_GROUPS):
            continue
        schema = {**CRD_SCHEMAS["kinds"][f"{obj['apiVersion']}/{obj['kind']}"],
                  "definitions": CRD_SCHEMAS["definitions"]}
        jsonschema.validate(obj, schema)


def test_the_matrix_renders_what_each_case_turns_on() -> None:
    kinds = {name: {o["kind"] for o in render(values)} for name, values in MATRIX.items()}
    assert {"StatefulSet", "Service", "PodDisruptionBudget", "Secret"} <= kinds["default"]
    assert {"PodMonitor", "ServiceMonitor", "PrometheusRule", "NetworkPolicy",
            "ConfigMap"} <= kinds["monitoring"]
    assert "Deployment" in kinds["mirror"]
    assert {"CronJob", "Role", "RoleBinding"} <= kinds["spark-submit"]
    assert "ScheduledSparkApplication" in kinds["spark-operator"]
    assert "CronJob" not in kinds["spark-operator"]
    assert all(kinds[name].isdisjoint({"CronJob", "Deployment", "PodMonitor"})
               for name in ("default", "dev"))


def pods_of(objects: list[dict[str, Any]], kind: str = "StatefulSet"
            ) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in find(objects, kind)}


def pod_dns_name(statefulset: dict[str, Any], index: int) -> str:
    """<statefulset>-<i>.<headless service>.<namespace>.svc.cluster.local."""
    return (f"{statefulset['metadata']['name']}-{index}.{statefulset['spec']['serviceName']}"
            f".{NAMESPACE}.svc.cluster.local")


@pytest.mark.parametrize(("mode", "replicas"), [("split", 1), ("split", 3), ("split", 5),
                                                 ("split", 7), ("combined", 1),
                                                 ("combined", 3)])
def test_quorum_voters_are_the_controller_pods_dns_names(mode: str, replicas: int) -> None:
    pool = "controllers" if mode == "split" else "brokers"
    objects = render({"mode": mode, pool: {"replicas": replicas}})
    voter_pool = one(objects, "StatefulSet",
                     f"east-odradek-{'controller' if mode == 'split' else 'combined'}")
    headless = one(objects, "Service", voter_pool["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    base = int(env_of(container(voter_pool))["NODE_ID_BASE"]["value"])
    expected = ",".join(f"{base + i}@{pod_dns_name(voter_pool, i)}:9093"
                        for i in range(replicas))
    for statefulset in find(objects, "StatefulSet"):
        env = env_of(container(statefulset))
        assert env["ODRADEK_CONTROLLER_QUORUM_VOTERS"]["value"] == expected
    assert voter_pool["spec"]["replicas"] == replicas


def pod_start(workload: dict[str, Any], index: int, tmp_path: Path,
              node_address: str = "203.0.113.7") -> dict[str, str]:
    """The ODRADEK_* configs pod `index` starts the node with: the container's rendered
    variables and the downward API's values, as the image's entrypoint (its command) reads
    them, with the init container's files where the chart mounts them."""
    spec = container(workload)
    assert spec["command"] == ["python3", "-m", "odradek.image.entrypoint", "run"]
    node_info = tmp_path / "node-info"
    node_info.mkdir(exist_ok=True)
    (node_info / "rack").write_text("zone-b\n")
    (node_info / "node-address").write_text(node_address)
    env = {"POD_NAME": f"{workload['metadata']['name']}-{index}", "POD_NAMESPACE": NAMESPACE}
    env.update({name: e["value"] for name, e in env_of(spec).items() if "value" in e})
    configs = {**env, **pod_variables(env, node_info)}
    return {name: value for name, value in configs.items() if name.startswith("ODRADEK_")}


def advertised(configs: dict[str, str]) -> dict[str, str]:
    return dict(listener.split("://", 1) for listener in
                configs["ODRADEK_ADVERTISED_LISTENERS"].split(","))


def test_each_broker_advertises_its_own_address(tmp_path: Path) -> None:
    objects = render(MATRIX["external-nodeport"])
    brokers = one(objects, "StatefulSet", "east-odradek-broker")
    external = {s["spec"]["selector"]["statefulset.kubernetes.io/pod-name"]:
                s["spec"]["ports"][0]["nodePort"]
                for s in find(objects, "Service") if s["spec"].get("type") == "NodePort"}
    seen = set()
    for i in range(3):
        configs = pod_start(brokers, i, tmp_path)
        listeners = advertised(configs)
        assert listeners["INTERNAL"] == f"{pod_dns_name(brokers, i)}:9092"
        assert listeners["EXTERNAL"] == f"203.0.113.7:{external[f'east-odradek-broker-{i}']}"
        assert configs["ODRADEK_NODE_ID"] == str(i)
        assert configs["ODRADEK_BROKER_RACK"] == "zone-b"
        seen.add(configs["ODRADEK_ADVERTISED_LISTENERS"])
    assert len(seen) == 3


def test_behind_load_balancers_each_broker_advertises_its_host(tmp_path: Path) -> None:
    values = MATRIX["external-loadbalancer"]
    objects = render(values)
    brokers = one(objects, "StatefulSet", "east-odradek-broker")
    hosts = values["brokers"]["external"]["advertisedHosts"]
    for i in range(3):
        assert advertised(pod_start(brokers, i, tmp_path))["EXTERNAL"] == \
            f"{hosts[i]}:9094"
    assert {s["spec"].get("type") for s in find(objects, "Service")
            if s["metadata"]["name"].endswith("-external")} == {"LoadBalancer"}
    with pytest.raises(helm.HelmError, match="advertisedHosts names 2 hosts for 3 brokers"):
        render({"brokers": {"external": {"enabled": True, "type": "LoadBalancer",
                                         "advertisedHosts": hosts[:2]}}})


def test_controllers_get_ids_from_their_ordinals(tmp_path: Path) -> None:
    controllers = one(render({}), "StatefulSet", "east-odradek-controller")
    ids = [pod_start(controllers, i, tmp_path)["ODRADEK_NODE_ID"] for i in range(3)]
    assert ids == ["1000", "1001", "1002"]


def test_disruption_budgets_allow_exactly_one(case: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = case
    budgets = find(objects, "PodDisruptionBudget")
    workloads = [o for o in objects if o["kind"] in ("StatefulSet", "Deployment")]
    covered = []
    for budget in budgets:
        assert budget["spec"] == {"maxUnavailable": 1, "selector": budget["spec"]["selector"]}
        selector = budget["spec"]["selector"]["matchLabels"]
        matching = [w for w in workloads if selector.items()
                    <= w["spec"]["template"]["metadata"]["labels"].items()]
        assert len(matching) == 1, budget["metadata"]["name"]
        covered.append(matching[0]["metadata"]["name"])
    assert set(covered) >= {w["metadata"]["name"] for w in workloads
                            if w["spec"]["replicas"] > 1}


def test_rolling_updates_move_one_pod_at_a_time() -> None:
    for statefulset in find(render({}), "StatefulSet"):
        strategy = statefulset["spec"]["updateStrategy"]
        assert strategy["type"] == "RollingUpdate"
        assert strategy.get("rollingUpdate", {}).get("maxUnavailable", 1) == 1
        probes = container(statefulset)
        assert probes["readinessProbe"]["httpGet"]["path"] == "/health"
        assert probes["livenessProbe"] != probes["readinessProbe"]
    brokers = one(render({}), "StatefulSet", "east-odradek-broker")
    assert brokers["spec"]["podManagementPolicy"] == "OrderedReady"
    assert brokers["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 120


def test_prometheus_rules_are_the_observability_files() -> None:
    rules = {r["metadata"]["name"]: r["spec"]["groups"]
             for r in find(render(MATRIX["monitoring"]), "PrometheusRule")}
    files = {f"east-odradek-{path.stem}": yaml.safe_load(path.read_text())["groups"]
             for path in sorted(RULES.glob("*.yml"))}
    assert files and rules == files


def test_the_chart_reads_observability_through_links_not_copies() -> None:
    for name, target in [("rules", RULES), ("dashboards", DASHBOARDS),
                         ("podmonitor.yaml", ROOT / "observability" / "prometheus" /
                          "kubernetes" / "podmonitor.yaml")]:
        link = CHART / "files" / name
        assert link.is_symlink() and link.resolve() == target.resolve(), link


def test_dashboards_are_configmaps_for_the_grafana_sidecar() -> None:
    maps = [m for m in find(render(MATRIX["monitoring"]), "ConfigMap")
            if "-dashboard-" in m["metadata"]["name"]]
    assert {name for m in maps for name in m["data"]} == \
        {p.name for p in DASHBOARDS.glob("*.json")}
    for dashboard in maps:
        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        (name, text), = dashboard["data"].items()
        assert json.loads(text) == json.loads((DASHBOARDS / name).read_text())


def pod_specs(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every pod spec the chart renders or makes Spark create: workloads, CronJobs, test
    Pods, the Spark pod templates and the Spark operator's driver and executor."""
    for obj in objects:
        name = f"{obj['kind']} {obj['metadata']['name']}"
        if obj["kind"] in ("StatefulSet", "Deployment"):
            yield name, obj["spec"]["template"]["spec"]
        elif obj["kind"] == "CronJob":
            yield name, obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif obj["kind"] == "Pod":
            yield name, obj["spec"]
        elif obj["kind"] == "ConfigMap" and obj["metadata"]["name"].endswith("pod-templates"):
            for key, text in obj["data"].items():
                yield f"{name} {key}", yaml.safe_load(text)["spec"]
        elif obj["kind"] == "ScheduledSparkApplication":
            for role in ("driver", "executor"):
                pod = obj["spec"]["template"][role]
                yield f"{name} {role}", {"securityContext": pod["podSecurityContext"],
                                         "containers": [pod]}


def test_no_container_runs_as_root(case: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = case
    specs = list(pod_specs(objects))
    assert specs
    for name, spec in specs:
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, name
        assert pod["seccompProfile"]["type"] == "RuntimeDefault", name
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            context = c["securityContext"]
            assert context.get("runAsNonRoot", True) is True, name
            assert context.get("runAsUser", 1) != 0, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert context["readOnlyRootFilesystem"] is True, name


def test_every_chart_container_has_requests_and_limits(
        case: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = case
    for name, spec in pod_specs(objects):
        if " " in name.split(" ", 1)[1]:
            continue  # Spark's own pods: sized by spark.driver.* and spark.executor.*
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            assert {"cpu", "memory"} <= c["resources"]["requests"].keys(), name
            assert {"cpu", "memory"} <= c["resources"]["limits"].keys(), name


@pytest.mark.parametrize(("values", "message"), [
    ({"brokers": {"replicas": "three"}}, "/brokers/replicas"),
    ({"brokers": {"replica": 3}}, "replica"),
    ({"mode": "cluster"}, "/mode"),
    ({"clusterId": "not-a-cluster-id"}, "/clusterId"),
    ({"brokers": {"external": {"type": "Ingress"}}}, "/brokers/external/type"),
    ({"spark": {"audit": {"schedule": "hourly"}}}, "/spark/audit/schedule"),
    ({"brokers": {"config": {"Log Retention": 1}}}, "'Log Retention' does not match"),
])
def test_a_wrong_value_fails_at_install_time(values: dict[str, Any], message: str) -> None:
    with (quiet_native(), pytest.raises(helm.HelmError, match=re.escape(message)),
          helm.Chart.load(CHART) as chart):
        chart.validate_schema(values)


def cluster_id(files: dict[str, str]) -> str:
    secret = yaml.safe_load(files["odradek/templates/cluster-id-secret.yaml"])
    return b64decode(secret["data"]["cluster.id"]).decode()


def test_cluster_id_is_generated_once_and_kept_across_upgrades() -> None:
    """Install renders a new random id; an upgrade reads the Secret back through `lookup`
    (here from a stand-in API server) and keeps it; a value that differs is refused."""
    with FakeApiServer() as api, helm.Config(kube_apiserver=api.url,
                                             namespace=NAMESPACE) as config:
        installed = render_files({}, config=config, is_install=True)
        first = cluster_id(installed)
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", first), first
        assert cluster_id(render_files({}, config=config, is_install=True)) != first
        api.store(yaml.safe_load(installed["odradek/templates/cluster-id-secret.yaml"]))
        for _ in range(2):
            assert cluster_id(render_files({}, config=config, is_upgrade=True)) == first
        assert cluster_id(render_files({"clusterId": first}, config=config)) == first
        with pytest.raises(helm.HelmError, match="differs from the cluster's"):
            render_files({"clusterId": "lGdz6y2MQvC1iTNfuREvAQ"}, config=config)
    assert cluster_id(render_files({"clusterId": "lGdz6y2MQvC1iTNfuREvAQ"})) == \
        "lGdz6y2MQvC1iTNfuREvAQ"


@pytest.mark.parametrize("runner", ["spark-submit", "spark-operator"])
def test_spark_jobs_arguments_parse_with_the_jobs_own_parsers(runner: str) -> None:
    jobs = job_arguments(render(MATRIX[runner]))
    assert set(jobs) == {"mirror_audit.py", "compact.py"}
    for file, module in (("mirror_audit.py", audit), ("compact.py", compaction)):
        parser = argparse.ArgumentParser(exit_on_error=False)
        module.add_arguments(parser)
        args = parser.parse_args(jobs[file])
        assert args.output.startswith("/data/")
    audit_args = argparse.ArgumentParser()
    audit.add_arguments(audit_args)
    parsed = audit_args.parse_args(jobs["mirror_audit.py"])
    assert parsed.source_alias == "east"
    assert parsed.target_bootstrap == "east-odradek-bootstrap.data.svc.cluster.local:9092"


def test_spark_submit_runs_in_cluster_mode_with_least_privilege() -> None:
    objects = render(MATRIX["spark-submit"])
    for cron in find(objects, "CronJob"):
        args = container(cron["spec"]["jobTemplate"])["args"]
        assert args[:3] == ["spark-submit", "--master=k8s://https://kubernetes.default.svc",
                            "--deploy-mode=cluster"]
        assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert {c["spec"]["schedule"] for c in find(objects, "CronJob")} == \
        {"15 * * * *", "0 3 * * *"}
    driver = one(objects, "Role", "east-odradek-spark-driver")
    assert {(tuple(r["apiGroups"]), tuple(r["resources"])) for r in driver["rules"]} == \
        {(("",), ("pods",)), (("",), ("configmaps",))}
    assert not any("*" in r["verbs"] for r in find(objects, "Role")[0]["rules"])
    executor = one(objects, "ServiceAccount", "east-odradek-spark-executor")
    assert executor["automountServiceAccountToken"] is False


def test_the_rack_init_container_may_only_get_nodes() -> None:
    objects = render({})
    (role,) = find(objects, "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert all(o["kind"] != "ClusterRole" for o in render(MATRIX["dev"]))


def test_mirror_properties_are_mm2s() -> None:
    objects = render(MATRIX["mirror"], release="west")
    properties = one(objects, "ConfigMap", "west-odradek-mirror")["data"]["mm2.properties"]
    assert properties.splitlines() == [
        "clusters=east,west",
        "east.bootstrap.servers=east-odradek-bootstrap.data:9092",
        "west.bootstrap.servers=west-odradek-bootstrap.data.svc.cluster.local:9092",
        "east->west.enabled=true",
        "east->west.topics=orders.*",
        "replication.factor=3",
        "metrics.port=9404",
    ]
    config = parse_mirror_config(dict(line.split("=", 1) for line in properties.splitlines()))
    assert not config.warnings, config.warnings
    assert [(f.source, f.target) for f in config.flows] == [("east", "west")]
    mirror = one(objects, "Deployment", "west-odradek-mirror")
    assert mirror["spec"]["replicas"] == 2
    assert mirror["spec"]["template"]["metadata"]["labels"]["odradek.io/cluster"] == "west"


def test_notes_name_the_bootstrap_address_and_the_dashboards() -> None:
    text = notes(MATRIX["monitoring"])
    assert "east-odradek-bootstrap.data.svc.cluster.local:9092" in text
    assert "helm test east" in text
    assert "grafana_dashboard=1" in text


def test_the_packaged_chart_carries_the_linked_files(tmp_path: Path) -> None:
    """`helm package` follows the links: the archive holds the rule files and dashboards
    themselves, so an installed chart needs no checkout of observability/."""
    with quiet_native():
        archive = helm.package(CHART, destination=tmp_path)
    with tarfile.open(archive) as packed:
        members = {m.name: m for m in packed.getmembers()}
        for path in [*RULES.glob("*.yml"), *DASHBOARDS.glob("*.json")]:
            folder = "rules" if path.suffix == ".yml" else "dashboards"
            member = members[f"odradek/files/{folder}/{path.name}"]
            assert member.isfile(), member.name
            extracted = packed.extractfile(member)
            assert extracted is not None and extracted.read() == path.read_bytes()
