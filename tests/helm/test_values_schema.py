"""values.schema.json and values.yaml describe the same values: every value the chart has is in
the schema, every property of the schema has its default in values.yaml (Helm's own `global`
aside), and the defaults validate."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import yaml

from tests.helm.chart import CHART

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
HELM_OWN = {"global"}


def drift(values: Any, schema: dict[str, Any], path: str) -> list[str]:
    """What one side has and the other lacks, below `path`."""
    while "$ref" in schema:
        target = SCHEMA
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    if not isinstance(values, dict) or "properties" not in schema:
        return []
    properties = schema["properties"]
    found = [f"{path}{key}: not in values.schema.json" for key in values
             if key not in properties]
    found += [f"{path}{key}: no default in values.yaml" for key in properties
              if key not in values and f"{path}{key}" not in HELM_OWN]
    for key in values.keys() & properties.keys():
        found += drift(values[key], properties[key], f"{path}{key}.")
    return found


def test_the_schema_and_the_values_name_the_same_keys() -> None:
    assert drift(VALUES, SCHEMA, "") == []


def test_the_defaults_validate() -> None:
    jsonschema.validate(VALUES, SCHEMA)


def test_a_key_missing_from_the_schema_is_found() -> None:
    assert drift({**VALUES, "brokers": {**VALUES["brokers"], "replicaz": 3}}, SCHEMA, "") == [
        "brokers.replicaz: not in values.schema.json"]
