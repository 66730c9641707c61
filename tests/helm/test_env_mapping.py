"""One mapping between Kafka's config names and the images' ODRADEK_* variables:
odradek/config/env.py. The chart writes its variables with `odradek.configVariable`
(_helpers.tpl) and the compose files write theirs by hand; these tests tie both to it, so
that neither can drift from what the image reads (`odradek.image.entrypoint`)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from odradek.config.env import config_name, variable_name
from odradek.config.kafka_configs import ALL_BROKER_CONFIGS
from odradek.image.entrypoint import node_configs
from tests.helm.chart import MATRIX, ROOT, env_of, render

pytestmark = pytest.mark.helm

COMPOSE = ROOT / "deploy" / "compose"
ESCAPED = {"listener.name.repl_1.ssl.client.auth": "required",
           "listener.name.repl-1.ssl.client.auth": "requested"}
"""Names with `_` and `-` (listener names may hold both), which the mapping escapes."""


def node_envs(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """`workload/container` -> its literal ODRADEK_* variables, for every container that has
    any (the nodes')."""
    envs = {}
    for workload in objects:
        if workload["kind"] != "StatefulSet":
            continue
        for container in workload["spec"]["template"]["spec"]["containers"]:
            env = {name: e["value"] for name, e in env_of(container).items()
                   if name.startswith("ODRADEK_") and "value" in e}
            if env:
                envs[f"{workload['metadata']['name']}/{container['name']}"] = env
    return envs


def test_the_chart_names_every_config_as_the_image_reads_it() -> None:
    """Every config name the image accepts, set through `brokers.config`, reaches the broker
    as the variable `config/env.py` names, and the image reads it back as that config."""
    chart_own = {config_name(v) for v in node_envs(render({}))["east-odradek-broker/odradek"]}
    names = sorted((set(ALL_BROKER_CONFIGS) - chart_own) | set(ESCAPED))
    values = {name: f"value-{i}" for i, name in enumerate(names)}
    env = node_envs(render({"brokers": {"config": values}}))["east-odradek-broker/odradek"]
    by_value = {value: variable for variable, value in env.items()}
    assert {name: by_value.get(value) for name, value in values.items()} == {
        name: variable_name(name) for name in values}
    _, configs = node_configs(env)
    assert {name: configs.get(name) for name in values} == values


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_every_chart_variable_is_one_the_image_reads(case: str) -> None:
    envs = node_envs(render(MATRIX[case]))
    assert envs
    for where, env in envs.items():
        try:
            node_configs(env)
        except ValueError as error:
            pytest.fail(f"{case}, {where}: {error}")
        assert [v for v in env if variable_name(config_name(v)) != v] == [], where


class ComposeLoader(yaml.SafeLoader):
    """YAML with Compose's own tags (`!override`, `!reset`) read as their plain values."""


for tag in ("!override", "!reset"):
    ComposeLoader.add_constructor(tag, lambda loader, node: (
        loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode)
        else loader.construct_mapping(node) if isinstance(node, yaml.MappingNode)
        else loader.construct_scalar(node)))


def compose_environments(*files: str) -> dict[str, dict[str, str]]:
    """service -> its environment, the later files' entries merged over the earlier ones' as
    Compose merges them."""
    merged: dict[str, dict[str, str]] = {}
    for file in files:
        document = yaml.load((COMPOSE / file).read_text(), ComposeLoader)  # noqa: S506
        for service, spec in document["services"].items():
            merged.setdefault(service, {}).update(
                {str(k): str(v) for k, v in (spec.get("environment") or {}).items()})
    return merged


@pytest.mark.parametrize("files", [("compose.yaml",), ("compose.yaml", "compose.secure.yaml")])
def test_every_compose_variable_is_one_the_image_reads(files: tuple[str, ...]) -> None:
    nodes = {service: env for service, env in compose_environments(*files).items()
             if any(name.startswith("ODRADEK_") for name in env)}
    assert {"controller-1", "broker-1", "west"} <= set(nodes)
    for service, env in nodes.items():
        try:
            _, configs = node_configs(env)
        except ValueError as error:
            pytest.fail(f"{' + '.join(files)}, {service}: {error}")
        assert configs["node.id"] == env["ODRADEK_NODE_ID"]
        assert [v for v in env if variable_name(config_name(v)) != v] == [], service

