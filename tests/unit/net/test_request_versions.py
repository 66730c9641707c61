"""The client request versions (odradek/net/kafka_client/request_versions.py) against the
broker's own API table: each names the API of its key and is a version the broker serves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from kio.schema.index import api_key_map

from odradek.broker.apis import API_TABLE
from odradek.net.kafka_client import request_versions
from odradek.net.kafka_client.request_versions import ApiVersion
from odradek.protocol.codec import api_name

SERVED = {api.key: (api.min_version, api.max_version) for api in API_TABLE}
ENTRIES = {name: value for name, value in vars(request_versions).items()
           if name.isupper() and isinstance(value, tuple)}


def test_no_other_module_names_its_own_request_version() -> None:
    """A module-level constant named after a Kafka API, holding (key, version), belongs in
    the table."""
    api_names = set(api_key_map.values())
    table = Path(request_versions.__file__)
    own = []
    for path in sorted(table.parents[1].rglob("*.py")):
        if path == table:
            continue
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            value = getattr(node, "value", None)
            if (any(isinstance(t, ast.Name) and t.id.lower() in api_names for t in targets)
                    and isinstance(value, ast.Tuple) and len(value.elts) == 2):
                own.append(f"{path}:{node.lineno}")
    assert own == []


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_entry_is_a_version_the_broker_serves(name: str) -> None:
    key, version = ENTRIES[name]
    assert key in SERVED, f"{name}: the broker serves no API {key}"
    low, high = SERVED[key]
    assert low <= version <= high, f"{name} v{version}: the broker serves v{low}-v{high}"


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_entry_is_named_after_its_api(name: str) -> None:
    entry: ApiVersion = ENTRIES[name]
    kafka_name = api_name(entry[0])
    assert name.lower() == kafka_name or name.lower().startswith(kafka_name + "_")
