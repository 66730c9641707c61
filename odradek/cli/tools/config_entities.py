"""kafka-configs' entities and their text: which resource `--entity-type`/`--entity-name` (or
the `--topic`, `--broker`, `--broker-defaults`, `--group` shortcuts) select, the configs
`--add-config`/`--delete-config` name, and how described configs are printed."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odradek.cli.tools.common import ToolError, parse_key_values
from odradek.cli.tools.quota_entities import QUOTA_TYPES, QuotaEntity, quota_entity
from odradek.metadata.records import ConfigResourceType

SUPPORTED_TYPES = ("topics", "brokers", "groups", "users", "clients")
UNSUPPORTED_TYPES = {
    "ips": "connection quotas",
    "broker-loggers": "broker loggers",
    "client-metrics": "client metrics subscriptions",
}
ENTITY_TYPES = (*SUPPORTED_TYPES, *UNSUPPORTED_TYPES)
RESOURCE_TYPES = {"topics": ConfigResourceType.TOPIC, "brokers": ConfigResourceType.BROKER,
                  "groups": ConfigResourceType.GROUP}
"""The DescribeConfigs/IncrementalAlterConfigs resource type of each entity type."""
SOURCES = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
"""DescribeConfigs' config sources by the names Kafka's tools print (Java's ConfigSource)."""
DYNAMIC_SOURCES = {"topics": 1, "brokers": 2, "groups": 8}
DEFAULT_BROKER_SOURCE = 3
_CONFIG_KEY = re.compile(r"[a-zA-Z0-9._-]*")


@dataclass(frozen=True)
class Entity:
    type: str
    """topics, brokers or groups."""
    name: str | None
    """None: every entity of the type; "": the cluster-wide broker default."""

    @property
    def resource_type(self) -> int:
        return RESOURCE_TYPES[self.type]

    @property
    def is_default(self) -> bool:
        return self.name == ""

    @property
    def dynamic_source(self) -> int:
        """The source of the configs set on this entity itself (kafka-configs' default view)."""
        return DEFAULT_BROKER_SOURCE if self.is_default else DYNAMIC_SOURCES[self.type]

    def __str__(self) -> str:
        if self.is_default:
            return f"default {self.type}"
        return f"{self.type[:-1]} {self.name}"


def entity_from_args(args: argparse.Namespace, altering: bool) -> Entity | QuotaEntity:
    """The one entity the arguments name (a user and a client id together for quotas), with
    kafka-configs' checks."""
    shortcuts = [(t, n) for t, n in (("topics", args.topic), ("brokers", args.broker),
                                     ("groups", args.group), ("users", args.user),
                                     ("clients", args.client)) if n is not None]
    for kind, flag in (("brokers", args.broker_defaults), ("users", args.user_defaults),
                       ("clients", args.client_defaults)):
        if flag:
            shortcuts.append((kind, ""))
    kinds, names = args.entity_types or [], args.entity_names or []
    if (kinds or names) and shortcuts:
        raise ToolError("--entity-{type,name,default} should not be used in conjunction with "
                        "specific entity flags")
    if shortcuts:
        kinds, names = [kind for kind, _ in shortcuts], [name for _, name in shortcuts]
    if not kinds:
        raise ToolError("At least one entity type must be specified")
    if any(kind in QUOTA_TYPES for kind in kinds):
        return quota_entity(kinds, names, altering)
    if len(kinds) > 1 or len(names) > 1:
        raise ToolError("only one entity may be given")
    kind = kinds[0]
    name = names[0] if names else None
    if kind in UNSUPPORTED_TYPES:
        raise ToolError(f"entity type {kind} is not supported yet: odradek configs does not "
                        f"manage {UNSUPPORTED_TYPES[kind]}")
    if name == "" and kind != "brokers":
        raise ToolError(f"--entity-default must not be specified with {kind}")
    if name and kind == "brokers" and not re.fullmatch(r"[+-]?[0-9]+", name):
        raise ToolError("The entity name for brokers must be a valid integer broker id, "
                        f"but it is: {name}")
    if altering and name is None:
        raise ToolError(f"An entity name must be specified with --alter of {kind}"
                        + (" (or --entity-default)" if kind == "brokers" else ""))
    return Entity(kind, name)


def parse_add_config(text: str) -> dict[str, str]:
    """`--add-config k1=v1,k2=[a,b]`, with kafka-configs' check of the keys' characters."""
    configs = parse_key_values(text)
    check_config_keys(configs)
    return configs


def check_config_keys(configs: dict[str, str]) -> None:
    for key in configs:
        if not _CONFIG_KEY.fullmatch(key):
            raise ToolError(f"Invalid character found for config key: {key}")


def parse_delete_config(values: Sequence[str]) -> list[str]:
    """`--delete-config k1,k2` (repeatable)."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def header(entity: Entity, describe_all: bool) -> str:
    if entity.is_default:
        return f"Default configs for {entity.type} in the cluster are:"
    return f"{'All' if describe_all else 'Dynamic'} configs for {entity} are:"


def _text(value: str | None) -> str:
    return "null" if value is None else value


def entry_line(entry: Any) -> str:
    """One described config as kafka-configs prints it (a DescribeConfigs result entry)."""
    synonyms = ", ".join(f"{SOURCES.get(s.source, s.source)}:{s.name}={_text(s.value)}"
                         for s in entry.synonyms)
    return (f"  {entry.name}={_text(entry.value)} sensitive={str(entry.is_sensitive).lower()} "
            f"synonyms={{{synonyms}}}")


def entry_json(entry: Any) -> dict[str, Any]:
    return {
        "name": entry.name, "value": entry.value, "sensitive": entry.is_sensitive,
        "read_only": entry.read_only, "source": SOURCES.get(entry.config_source, "UNKNOWN"),
        "synonyms": [{"name": s.name, "value": s.value, "source": SOURCES.get(s.source, "UNKNOWN")}
                     for s in entry.synonyms],
    }


def completed(entity: Entity) -> str:
    if entity.is_default:
        return f"Completed updating default config for {entity.type} in the cluster."
    return f"Completed updating config for {entity}."
