"""Kafka's config providers (KIP-297, KIP-632, KIP-887) in a client properties file: values
may hold variables `${NAME:[PATH:]KEY}`, where NAME is declared in `config.providers` and
`config.providers.NAME.class` is one of Kafka's three providers:

- FileConfigProvider: `${file:/etc/app/secrets.properties:password}`, the key `password` of
  that properties file;
- DirectoryConfigProvider: `${dir:/etc/odradek/user:password}`, the content of the file
  `password` in that directory (a mounted Kubernetes Secret);
- EnvVarConfigProvider: `${env:KAFKA_PASSWORD}`, an environment variable.

`config.providers.NAME.param.allowed.paths` (KIP-993) limits the file and directory
providers to the listed paths. The `config.providers*` entries themselves are dropped: they
configure the reading, not the client. Kafka leaves a variable it cannot resolve as it is,
which then fails as a wrong password would; here it raises InvalidConfigError naming it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from odradek.config.kafka_configs import InvalidConfigError, load_properties

PROVIDERS = "config.providers"
VARIABLE = re.compile(r"\$\{([^}:]+):(?:([^}]*):)?([^}:]*)\}")
"""Kafka's ConfigTransformer pattern: ${provider:[path:]key}."""
_PACKAGE = "org.apache.kafka.common.config.provider."


def resolve_variables(properties: Mapping[str, str],
                      environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """`properties` with every `${provider:[path:]key}` replaced by what the declared
    provider gives, and without the `config.providers*` entries; unchanged when no provider
    is declared. Raises InvalidConfigError (one line) on an unknown provider class, a
    variable naming an undeclared provider, or a path, file or key that gives nothing."""
    names = [n.strip() for n in properties.get(PROVIDERS, "").split(",") if n.strip()]
    result = {k: v for k, v in properties.items()
              if k != PROVIDERS and not k.startswith(PROVIDERS + ".")}
    if not names:
        return result
    lookups = {name: _provider(name, properties, os.environ if environment is None
                               else environment) for name in names}

    def replace(match: re.Match[str]) -> str:
        name, path, key = match.group(1), match.group(2) or "", match.group(3)
        if name not in lookups:
            raise InvalidConfigError(f"{match.group(0)}: no config provider {name!r} "
                                     f"(config.providers={properties[PROVIDERS]})")
        return lookups[name](path, key, match.group(0))

    return {key: VARIABLE.sub(replace, value) for key, value in result.items()}


Lookup = Callable[[str, str, str], str]


def _provider(name: str, properties: Mapping[str, str],
              environment: Mapping[str, str]) -> Lookup:
    prefix = f"{PROVIDERS}.{name}"
    kind = properties.get(f"{prefix}.class", "").strip().removeprefix(_PACKAGE)
    allowed = [Path(p.strip()).resolve() for p in
               properties.get(f"{prefix}.param.allowed.paths", "").split(",") if p.strip()]

    def permitted(path: str, variable: str) -> Path:
        where = Path(path).resolve()
        if allowed and not any(where == a or a in where.parents for a in allowed):
            raise InvalidConfigError(f"{variable}: {path} is outside "
                                     f"{prefix}.param.allowed.paths")
        return where

    def from_file(path: str, key: str, variable: str) -> str:
        try:
            values = load_properties(permitted(path, variable))
        except OSError as error:
            raise InvalidConfigError(f"{variable}: cannot read {path}: "
                                     f"{error.strerror or error}") from None
        if key not in values:
            raise InvalidConfigError(f"{variable}: {path} has no key {key!r}")
        return values[key]

    def from_directory(path: str, key: str, variable: str) -> str:
        file = permitted(path, variable) / key
        if "/" in key or not file.is_file():
            raise InvalidConfigError(f"{variable}: no file {key!r} in {path}")
        try:
            return file.read_text()
        except OSError as error:
            raise InvalidConfigError(f"{variable}: cannot read {file}: "
                                     f"{error.strerror or error}") from None

    def from_environment(path: str, key: str, variable: str) -> str:
        if key not in environment:
            raise InvalidConfigError(f"{variable}: the environment has no {key}")
        return environment[key]

    kinds: dict[str, Lookup] = {"FileConfigProvider": from_file,
                                "DirectoryConfigProvider": from_directory,
                                "EnvVarConfigProvider": from_environment}
    if kind not in kinds:
        given = properties.get(f"{prefix}.class", "")
        raise InvalidConfigError(f"{prefix}.class={given}: not one of Kafka's "
                                 f"{', '.join(_PACKAGE + k for k in kinds)}")
    return kinds[kind]
