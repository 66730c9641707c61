"""Configs from environment variables, named as the official Kafka image names them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.config.env import config_name, configs_from_env, variable_name
from odradek.config.kafka_configs import BROKER_CONFIGS, InvalidConfigError


@pytest.mark.parametrize(("config", "variable"), [
    ("node.id", "ODRADEK_NODE_ID"),
    ("controller.quorum.voters", "ODRADEK_CONTROLLER_QUORUM_VOTERS"),
    ("abc_def", "ODRADEK_ABC__DEF"),   # Kafka's examples: KAFKA_ABC__DEF
    ("abc-def", "ODRADEK_ABC___DEF"),  # KAFKA_ABC___DEF
])
def test_names_follow_the_kafka_image(config: str, variable: str) -> None:
    assert variable_name(config) == variable
    assert config_name(variable) == config


def test_every_config_round_trips() -> None:
    for name in BROKER_CONFIGS:
        assert config_name(variable_name(name)) == name


@given(st.lists(st.text("abcxyz019", min_size=1, max_size=4), min_size=1, max_size=4),
       st.lists(st.sampled_from(".-_"), min_size=3, max_size=3))
def test_names_with_dots_dashes_and_underscores_round_trip(words: list[str],
                                                          separators: list[str]) -> None:
    name = "".join(w + s for w, s in zip(words, separators, strict=False)) + words[-1]
    assert config_name(variable_name(name)) == name


def test_only_prefixed_variables_count() -> None:
    env = {"PATH": "/usr/bin", "ODRADEK_NODE_ID": "3", "HOME": "/",
           "ODRADEK_LISTENERS": "PLAINTEXT://:9092"}
    assert configs_from_env(env) == {"node.id": "3", "listeners": "PLAINTEXT://:9092"}


def test_a_variable_naming_no_config_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="ODRADEK_NODE_IDD would set node.idd"):
        configs_from_env({"ODRADEK_NODE_IDD": "3"})


def test_listener_security_configs_are_set_per_listener_and_mechanism() -> None:
    env = {"ODRADEK_LISTENER_NAME_SASL__SSL_SCRAM___SHA___512_SASL_JAAS_CONFIG": "x",
           "ODRADEK_LISTENER_NAME_EXTERNAL_SSL_CLIENT_AUTH": "required"}
    assert configs_from_env(env) == {
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "x",
        "listener.name.external.ssl.client.auth": "required"}
    with pytest.raises(InvalidConfigError, match="listener.name.external.log.dir"):
        configs_from_env({"ODRADEK_LISTENER_NAME_EXTERNAL_LOG_DIR": "/x"})
