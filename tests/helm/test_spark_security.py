"""The Spark jobs of a release with TLS and SCRAM (either runner): the driver's init
container writes the release's client properties (its script run here, over stand-ins of the
Secret volumes), which the jobs take as the command config of this release's brokers, and
which become the `odradek-kafka` source's `kafka.*` options; the executors mount the CA
only, never the password. A job that could not log in is refused at render time."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from odradek.spark import audit, compaction
from odradek.tools.common import librdkafka_config, read_properties
from tests.helm.chart import MATRIX, env_of, find, one, render

pytestmark = pytest.mark.helm

PASSWORD = "spark's secret"


def spark_pods(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any],
                                                        list[dict[str, Any]]]:
    """The driver's and the executor's pod spec parts (initContainers, volumeMounts of the
    main container) and the volumes, from the pod templates (spark-submit) or the first
    ScheduledSparkApplication (operator)."""
    maps = find(objects, "ConfigMap", "east-odradek-spark-pod-templates")
    if maps:
        driver, executor = (yaml.safe_load(maps[0]["data"][f"{role}.yaml"])["spec"]
                            for role in ("driver", "executor"))
        volumes = driver["volumes"]
        assert executor["volumes"] == [v for v in volumes if v["name"] != "user"]
        return ({**driver, "volumeMounts": driver["containers"][0]["volumeMounts"]},
                {**executor, "volumeMounts": executor["containers"][0]["volumeMounts"]},
                volumes)
    template = find(objects, "ScheduledSparkApplication")[0]["spec"]["template"]
    return template["driver"], template["executor"], template["volumes"]


def job_arguments(objects: list[dict[str, Any]]) -> dict[str, argparse.Namespace]:
    """Each job's arguments, parsed by its own parser."""
    parsed = {}
    for job, module in (("audit", audit), ("compaction", compaction)):
        cron = find(objects, "CronJob", f"east-odradek-{job}")
        if cron:
            args = cron[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"][
                "containers"][0]["args"]
            args = args[next(i for i, a in enumerate(args) if a.startswith("local://")) + 1:]
        else:
            args = one(objects, "ScheduledSparkApplication", f"east-odradek-{job}")[
                "spec"]["template"]["arguments"]
        parser = argparse.ArgumentParser(exit_on_error=False)
        module.add_arguments(parser)
        parsed[job] = parser.parse_args(args)
    return parsed


def run_init_container(container: dict[str, Any], root: Path) -> None:
    """The init container's script under `root`, with stand-ins of its Secret volumes: the
    brokers' ca.crt and the user's password file."""
    (root / "etc/odradek/tls").mkdir(parents=True)
    (root / "etc/odradek/tls/ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (root / "etc/odradek/user").mkdir(parents=True)
    (root / "etc/odradek/user/password").write_text(PASSWORD)
    (root / "tmp").mkdir()
    assert {m["mountPath"] for m in container["volumeMounts"]} == {
        "/tmp", "/etc/odradek/tls", "/etc/odradek/user"}
    script = re.sub(r"(?<![\w/.-])/(etc/odradek|tmp)/", f"{root}/\\1/", container["command"][2])
    environment = {name: e["value"] for name, e in env_of(container).items()}
    subprocess.run(["sh", "-c", script], env=environment, check=True, timeout=30)


@pytest.mark.parametrize("runner", ["spark-submit", "spark-operator"])
def test_the_jobs_log_in_to_the_release_with_its_tls_and_scram(runner: str,
                                                              tmp_path: Path) -> None:
    objects = render(MATRIX[f"{runner}-tls-scram"])
    driver, executor, volumes = spark_pods(objects)
    (init,) = driver["initContainers"]
    assert init["securityContext"]["readOnlyRootFilesystem"] is True
    run_init_container(init, tmp_path)

    jobs = job_arguments(objects)
    written = init["command"][2].split("config=", 1)[1].split("\n", 1)[0]
    assert jobs["audit"].target_command_config == Path(written)
    assert jobs["compaction"].command_config == Path(written)
    assert jobs["audit"].source_command_config is None  # another cluster, its own settings
    options = librdkafka_config(read_properties(tmp_path / written.removeprefix("/")))
    assert options == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                       "ssl.ca.location": f"{tmp_path}/etc/odradek/tls/ca.crt",
                       "sasl.username": "admin", "sasl.password": PASSWORD}

    secrets = {v["name"]: v["secret"] for v in volumes if "secret" in v}
    assert secrets == {
        "tls": {"secretName": "east-tls", "defaultMode": 0o440,
                "items": [{"key": "ca.crt", "path": "ca.crt"}]},
        "user": {"secretName": "east-users", "defaultMode": 0o440,
                 "items": [{"key": "admin", "path": "password"}]}}
    for pod in (driver, executor):
        mounts = {m["name"]: m["mountPath"] for m in pod["volumeMounts"]}
        assert mounts["tls"] == "/etc/odradek/tls" and "user" not in mounts
    assert "initContainers" not in executor


def test_the_jobs_own_bootstrap_values_take_no_release_settings() -> None:
    spark = MATRIX["spark-submit"]["spark"]
    objects = render({**MATRIX["spark-submit-tls-scram"], "spark": {
        **spark, "audit": {**spark["audit"], "targetBootstrap": "west:9092"},
        "compaction": {**spark["compaction"], "bootstrap": "west:9092"}}})
    jobs = job_arguments(objects)
    assert jobs["audit"].target_command_config is None
    assert jobs["compaction"].command_config is None


def test_without_security_values_the_jobs_take_no_command_config() -> None:
    objects = render(MATRIX["spark-submit"])
    jobs = job_arguments(objects)
    assert jobs["audit"].target_command_config is None
    assert jobs["compaction"].command_config is None
    driver, executor, volumes = spark_pods(objects)
    assert "initContainers" not in driver
    assert [v["name"] for v in volumes] == ["tmp"]


def test_jobs_without_a_client_certificate_are_refused_under_mtls_alone() -> None:
    with pytest.raises(helm.HelmError, match="the Spark jobs hold no client certificate"):
        render({**MATRIX["tls-cert-manager-mtls"], **MATRIX["spark-submit"]})
