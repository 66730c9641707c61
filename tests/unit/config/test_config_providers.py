"""Kafka's config providers in client properties: file, directory and environment variables
resolved, the provider entries dropped, and each way of getting nothing one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.config.config_providers import resolve_variables
from odradek.config.kafka_configs import InvalidConfigError

DIR = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="spark" password="{}";')


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "password").write_text("s3cret")  # as a Secret volume: no newline
    (tmp_path / "app.properties").write_text("password=from-file\nother=x\n")
    return tmp_path


def test_each_provider_replaces_its_variables_and_the_declarations_go(secrets: Path) -> None:
    properties = {
        "config.providers": "dir, file,env",
        "config.providers.dir.class": DIR,
        "config.providers.file.class": FILE,
        "config.providers.env.class": ENV,
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": JAAS.format(f"${{dir:{secrets}/user:password}}"),
        "ssl.key.password": f"${{file:{secrets}/app.properties:password}}",
        "client.id": "audit-${env:POD_NAME}-${env:POD_NAME}",
    }
    assert resolve_variables(properties, {"POD_NAME": "driver"}) == {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": JAAS.format("s3cret"),
        "ssl.key.password": "from-file",
        "client.id": "audit-driver-driver",
    }


def test_without_providers_values_stay_as_written() -> None:
    properties = {"sasl.password": "${dir:/x:y}", "client.id": "a"}
    assert resolve_variables(properties, {}) == properties


def test_the_simple_class_name_and_the_allowed_paths(secrets: Path) -> None:
    properties = {"config.providers": "d", "config.providers.d.class": "DirectoryConfigProvider",
                  "config.providers.d.param.allowed.paths": str(secrets),
                  "sasl.password": f"${{d:{secrets}/user:password}}"}
    assert resolve_variables(properties, {}) == {"sasl.password": "s3cret"}
    elsewhere = {**properties, "config.providers.d.param.allowed.paths": str(secrets / "x")}
    with pytest.raises(InvalidConfigError, match="is outside config.providers.d.param"):
        resolve_variables(elsewhere, {})


@pytest.mark.parametrize(("value", "message"), [
    ("${vault:/a:b}", "no config provider 'vault'"),
    ("${dir:{secrets}/user:missing}", "no file 'missing' in"),
    ("${dir:{secrets}/user:../app.properties}", "no file '../app.properties' in"),
    ("${file:{secrets}/app.properties:missing}", "has no key 'missing'"),
    ("${file:{secrets}/nothing.properties:k}", "cannot read"),
    ("${env:UNSET}", "the environment has no UNSET"),
])
def test_a_variable_that_gives_nothing_is_one_line_naming_it(
        secrets: Path, value: str, message: str) -> None:
    variable = value.replace("{secrets}", str(secrets))
    properties = {"config.providers": "dir,file,env", "config.providers.dir.class": DIR,
                  "config.providers.file.class": FILE, "config.providers.env.class": ENV,
                  "sasl.password": variable}
    with pytest.raises(InvalidConfigError, match=message) as raised:
        resolve_variables(properties, {})
    assert "\n" not in str(raised.value)
    assert variable in str(raised.value)


def test_an_unknown_provider_class_is_named() -> None:
    with pytest.raises(InvalidConfigError,
                       match=r"config.providers.v.class=com.example.Vault: not one of"):
        resolve_variables({"config.providers": "v",
                           "config.providers.v.class": "com.example.Vault"}, {})
