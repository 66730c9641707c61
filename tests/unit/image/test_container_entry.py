"""The images' entrypoint (`python -m odradek.image.entrypoint`): process.roles picks the process,
ODRADEK_* variables override the default file, the health check reads /health."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from odradek.config.kafka_configs import InvalidConfigError
from odradek.image.entrypoint import healthcheck, main, node_argv
from odradek.runtime.service import start_metrics

SERVICES = Path(__file__).resolve().parents[3] / "services"


def env_for(service: str, **variables: str) -> dict[str, str]:
    return {"ODRADEK_CONFIG_FILE": str(SERVICES / service / "server.properties"),
            "ODRADEK_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk", **variables}


@pytest.mark.parametrize(("service", "roles", "command"), [
    ("broker", None, "broker"),
    ("controller", None, "controller"),
    ("broker", "broker,controller", "dev"),
    ("controller", "controller,broker", "dev"),
])
def test_process_roles_pick_the_process(service: str, roles: str | None, command: str) -> None:
    env = env_for(service, **({"ODRADEK_PROCESS_ROLES": roles} if roles else {}))
    assert node_argv(env)[0] == command


def test_variables_become_overrides_after_the_default_file() -> None:
    env = env_for("broker", ODRADEK_NODE_ID="2", ODRADEK_CONTROLLER_QUORUM_VOTERS="1@c1:9093")
    argv = node_argv(env, ["--log-level", "DEBUG"])
    assert argv == ["broker", "--config", str(SERVICES / "broker" / "server.properties"),
                    "--override=cluster.id=MkU3OEVBNTcwNTJENDM2Qk",
                    "--override=controller.quorum.voters=1@c1:9093",
                    "--override=node.id=2", "--log-level", "DEBUG"]


def test_cluster_id_is_required() -> None:
    env = env_for("broker")
    del env["ODRADEK_CLUSTER_ID"]
    with pytest.raises(InvalidConfigError, match="ODRADEK_CLUSTER_ID is required"):
        node_argv(env)


def test_bad_values_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"], env_for("broker", ODRADEK_NODE_ID="one")) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "odradek: invalid configuration: Invalid value one for configuration node.id: "
        "Not a number of type INT"]
    assert main(["run"], env_for("broker", ODRADEK_PROCESS_ROLES="broker,broker")) == 2
    assert "process.roles must be" in capsys.readouterr().err


def test_healthcheck_follows_health(capsys: pytest.CaptureFixture[str]) -> None:
    reason: list[str | None] = ["fenced by the controller"]
    port = start_metrics(CollectorRegistry(), "127.0.0.1", 0, lambda: reason[0])
    assert port is not None
    env = env_for("broker", ODRADEK_METRICS_PORT=str(port))
    assert healthcheck(env) == 1
    assert capsys.readouterr().out.strip() == "fenced by the controller"
    reason[0] = None
    assert healthcheck(env) == 0
    assert main(["healthcheck"], env) == 0


def test_healthcheck_without_a_process_fails(capsys: pytest.CaptureFixture[str]) -> None:
    port = start_metrics(CollectorRegistry(), "127.0.0.1", 0, lambda: None)
    env = env_for("controller", ODRADEK_METRICS_PORT=str(port))
    assert healthcheck(env) == 0
    unused = env_for("controller", ODRADEK_METRICS_PORT="1")
    assert healthcheck(unused) == 1
    assert "no answer on port 1" in capsys.readouterr().out
