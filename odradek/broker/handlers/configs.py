"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, brokers and groups.

Topic overrides live in the metadata image. Broker configs come in Kafka's layers (see
BrokerConfig): this broker's own dynamic configs (the broker resource named by its node id) over
cluster-wide dynamic defaults (the broker resource named "") over static server properties over
defaults. Both dynamic resources can be described and altered. A group's configs
(odradek/config/group.py) live in the metadata image too, over the broker's group defaults; a
group need not exist to have them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import AUTHORIZATION_ERRORS, Op
from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.config.group import GROUP_CONFIGS
from odradek.config.kafka_configs import (
    ALL_BROKER_CONFIGS,
    ALL_TOPIC_CONFIGS,
    INT_MAX,
    LISTED_TOPIC_CONFIGS,
    BrokerConfig,
    ConfigDef,
    ConfigSource,
    ConfigType,
    InvalidConfigError,
    Value,
    broker_config_def,
    format_value,
    parse_value,
    validate_dynamic_broker_configs,
)
from odradek.metadata.image import MetadataError, validate_topic_name
from odradek.metadata.records import ConfigResourceType, MetadataRecord
from odradek.security.acls import CLUSTER_NAME, AclOperation, ResourceType

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
GROUP = ConfigResourceType.GROUP
RESOURCE_TYPES = {kind: kind.name for kind in ConfigResourceType}
"""Kafka's ConfigResource types; Odradek serves TOPIC, BROKER and GROUP."""

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

Changes = dict[str, str | None]

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# --- DescribeConfigs ---------------------------------------------------------------------


def handle_describe_configs(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    include_synonyms = bool(request.include_synonyms)
    include_docs = bool(getattr(request, "include_documentation", False))
    unknown = next((r for r in request.resources if r.resource_type not in RESOURCE_TYPES), None)
    if unknown is not None:
        # Kafka rejects the whole request when any resource type is unknown.
        message = (f"Unexpected resource type {unknown.resource_type} "
                   f"for resource {unknown.resource_name}")
        return {"results": [
            _resource_result(r, ErrorCode.invalid_request, message) for r in request.resources
        ]}
    results = []
    for resource in request.resources:
        try:
            _authorize(context, resource, Op.DESCRIBE_CONFIGS)
            configs = _describe(broker, resource, include_synonyms, include_docs)
        except MetadataError as error:
            results.append(_resource_result(resource, error.error_code, error.message))
            continue
        results.append({**_resource_result(resource, ErrorCode.none, None), "configs": configs})
    return {"results": results}


def _resource_result(resource: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "configs": [],
    }


def _describe(
    broker: Broker, resource: Any, include_synonyms: bool, include_docs: bool
) -> list[dict[str, Any]]:
    keys = resource.configuration_keys
    wanted = set(keys) if keys else None  # null or empty: every config, as in Kafka

    def selected(names: Iterable[str]) -> list[str]:
        return sorted(n for n in names if wanted is None or n in wanted)

    if resource.resource_type == TOPIC:
        name = validate_topic_name(resource.resource_name, internal=True)
        overrides = broker.metadata.topic(name).configs
        return topic_entries(broker.config, broker.topic_config(name), overrides,
                             include_synonyms, include_docs, selected)
    if resource.resource_type == BROKER:
        config = broker.config
        if not resource.resource_name:
            # The cluster-wide default resource lists only dynamic defaults.
            defaults = config.dynamic_default_raw
            return [
                _broker_entry(config, n, defaults[n], include_synonyms, include_docs,
                              only=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
                for n in selected(defaults)
            ]
        if _broker_id(resource.resource_name, "Broker id") != broker.node_id:
            raise MetadataError(ErrorCode.invalid_request,
                                f"Unexpected broker id, expected {broker.node_id} or empty string, "
                                f"but received {resource.resource_name}")
        return [
            _broker_entry(config, n, config.described_value(n), include_synonyms, include_docs)
            for n in selected(config.described_names())
        ]
    if resource.resource_type == GROUP:
        if not resource.resource_name:
            raise MetadataError(ErrorCode.invalid_request, "Group name must not be empty")
        overrides = broker.metadata.group_configs.get(resource.resource_name, {})
        return [_group_entry(broker.config, n, overrides, include_synonyms, include_docs)
                for n in selected(GROUP_CONFIGS)]
    raise MetadataError(ErrorCode.invalid_request,
                        f"Unsupported resource type: {RESOURCE_TYPES[resource.resource_type]}")


def _broker_id(name: str, what: str) -> int:
    """A broker resource name as Java's Integer.parseInt reads it (no spaces, no '_', 32 bits)."""
    if not _JAVA_INT.fullmatch(name) or not -INT_MAX - 1 <= int(name) <= INT_MAX:
        raise MetadataError(ErrorCode.invalid_request,
                            f"{what} must be an integer, but it is: {name}")
    return int(name)


def _synonym(name: str, value: str | None, source: ConfigSource) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source}


def _broker_synonyms(config: BrokerConfig, name: str, sensitive: bool) -> list[dict[str, Any]]:
    """Kafka's synonyms of a broker config, highest precedence first (BrokerConfig.synonyms)."""
    return [
        _synonym(synonym, None if sensitive else value, source)
        for synonym, source, value in config.synonyms(name)
    ]


def _entry(
    name: str, config_type: ConfigType, doc: str, value: str | None, read_only: bool,
    synonyms: list[dict[str, Any]], include_synonyms: bool, include_docs: bool,
) -> dict[str, Any]:
    sensitive = _sensitive(config_type)
    return {
        "name": name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "config_source": synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG,
        "is_sensitive": sensitive,
        "synonyms": synonyms if include_synonyms else [],
        "config_type": config_type,
        "documentation": doc if include_docs else None,
    }


def _sensitive(config_type: ConfigType) -> bool:
    """Kafka's maybeSensitive: passwords, and configs of unknown type."""
    return config_type in (ConfigType.PASSWORD, ConfigType.UNKNOWN)


def topic_entries(
    config: BrokerConfig, values: Mapping[str, Value], overrides: Collection[str],
    include_synonyms: bool = False, include_docs: bool = False,
    selected: Callable[[Iterable[str]], list[str]] = sorted,
) -> list[dict[str, Any]]:
    """A topic's configs as Kafka's ConfigHelper describes them, for DescribeConfigs and
    CreateTopics v5+ alike: every listed (non-internal) config and every override, each with
    the source of its first synonym."""
    return [_topic_entry(config, ALL_TOPIC_CONFIGS[n], values[n], n in overrides,
                         include_synonyms, include_docs)
            for n in selected(LISTED_TOPIC_CONFIGS | set(overrides))]


CREATED_CONFIG_FIELDS = ("name", "value", "read_only", "config_source", "is_sensitive")


def created_topic_configs(config: BrokerConfig, values: Mapping[str, Value],
                          overrides: Collection[str]) -> list[dict[str, Any]]:
    """CreateTopics v5+'s configs of a new topic, as Kafka's controller resolves them
    (KafkaConfigSchema.resolveEffectiveTopicConfigs): DescribeConfigs' entries, but the source
    of a config not set on the topic is the first layer that sets its broker synonym under
    any name (STATIC_BROKER_CONFIG for retention.ms from a static log.retention.hours)."""
    created = []
    for entry in topic_entries(config, values, overrides):
        synonym = ALL_TOPIC_CONFIGS[entry["name"]].synonym
        if entry["name"] not in overrides and synonym:
            layers = config.synonyms(synonym, from_own_name=False)
            entry["config_source"] = layers[0][1] if layers else ConfigSource.DEFAULT_CONFIG
        created.append({field: entry[field] for field in CREATED_CONFIG_FIELDS})
    return created


def _topic_entry(
    config: BrokerConfig, definition: ConfigDef, value: Value, overridden: bool,
    include_synonyms: bool, include_docs: bool,
) -> dict[str, Any]:
    sensitive = _sensitive(definition.type)
    text = format_value(value)
    synonyms = _broker_synonyms(config, definition.synonym, sensitive) if definition.synonym else []
    if overridden:
        synonyms.insert(0, _synonym(definition.name, None if sensitive else text,
                                    ConfigSource.TOPIC_CONFIG))
    return _entry(definition.name, definition.type, definition.doc, text, False, synonyms,
                  include_synonyms, include_docs)


def _group_entry(
    config: BrokerConfig, name: str, overrides: Mapping[str, str], include_synonyms: bool,
    include_docs: bool,
) -> dict[str, Any]:
    """A group config as Kafka's ConfigHelper describes it: the group's own value (source
    GROUP_CONFIG) over its broker synonym's layers, or over Kafka's default when it has none."""
    definition = GROUP_CONFIGS[name]
    if definition.synonym is not None:
        synonyms = _broker_synonyms(config, definition.synonym, False)
        value = format_value(config[definition.synonym])
    else:
        value = format_value(definition.default)
        synonyms = [_synonym(name, value, ConfigSource.DEFAULT_CONFIG)]
    if name in overrides:
        value = format_value(parse_value(definition, overrides[name]))
        synonyms.insert(0, _synonym(name, value, ConfigSource.GROUP_CONFIG))
    return _entry(name, definition.type, definition.doc, value, False, synonyms,
                  include_synonyms, include_docs)


def _broker_entry(
    config: BrokerConfig, name: str, value: str | None, include_synonyms: bool,
    include_docs: bool, only: ConfigSource | None = None,
) -> dict[str, Any]:
    """A broker config; one neither Kafka nor Odradek defines is of unknown type, so
    sensitive, and read-only, as Kafka describes it."""
    definition = broker_config_def(name)
    config_type = definition.type if definition is not None else ConfigType.UNKNOWN
    synonyms = [
        s for s in _broker_synonyms(config, name, _sensitive(config_type))
        if only is None or s["source"] == only
    ]
    read_only = name not in ALL_BROKER_CONFIGS or ALL_BROKER_CONFIGS[name].read_only
    return _entry(name, config_type, definition.doc if definition else "", value, read_only,
                  synonyms, include_synonyms, include_docs)


# --- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------


async def handle_alter_configs(context: RequestContext, request: Any) -> Result:
    """Legacy AlterConfigs: the request's configs replace the resource's whole set."""
    return {"responses": await _alter_each(context, request, incremental=False)}


async def handle_incremental_alter_configs(context: RequestContext, request: Any) -> Result:
    return {"responses": await _alter_each(context, request, incremental=True)}


def _authorize(context: RequestContext, resource: Any, operation: AclOperation) -> None:
    """A topic's configs take the operation on the topic, a group's on the group, a broker's
    on the cluster. Raises MetadataError with TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED."""
    if resource.resource_type == TOPIC:
        acl_resource, name = ResourceType.TOPIC, resource.resource_name
    elif resource.resource_type == GROUP:
        acl_resource, name = ResourceType.GROUP, resource.resource_name
    else:
        acl_resource, name = ResourceType.CLUSTER, CLUSTER_NAME
    if not context.allowed(operation, acl_resource, name):
        raise MetadataError(AUTHORIZATION_ERRORS[acl_resource],
                            f"{operation.name} of {RESOURCE_TYPES[resource.resource_type]} "
                            f"{resource.resource_name!r} is not authorized.")


async def _alter_each(context: RequestContext, request: Any,
                      incremental: bool) -> list[dict[str, Any]]:
    broker, writer = context.broker, context.services.writer
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        result = {"resource_type": resource.resource_type,
                  "resource_name": resource.resource_name,
                  "error_code": ErrorCode.none, "error_message": None}
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise MetadataError(ErrorCode.invalid_request,
                                    "Each resource must appear at most once.")
            _authorize(context, resource, Op.ALTER_CONFIGS)
            records = _alter_records(broker, resource, incremental)
            await writer.alter_configs(records, request.validate_only)
        except MetadataError as error:
            result.update(error_code=error.error_code, error_message=error.message)
        responses.append(result)
    return responses


def _alter_records(broker: Broker, resource: Any, incremental: bool) -> list[MetadataRecord]:
    names = [c.name for c in resource.configs]
    if len(set(names)) != len(names):
        raise MetadataError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    nulls = [
        c.name for c in resource.configs
        if c.value is None and not (incremental and c.config_operation == DELETE)
    ]
    if nulls:
        raise MetadataError(ErrorCode.invalid_request,
                            f"Null value not supported for : {', '.join(nulls)}")
    if resource.resource_type == TOPIC:
        name = resource.resource_name
        if not name:
            raise MetadataError(ErrorCode.invalid_request,
                                "Default topic resources are not allowed.")
        current = broker.metadata.topic(validate_topic_name(name)).configs
        changes = _changes(current, resource.configs, ALL_TOPIC_CONFIGS, incremental)
        return broker.metadata.alter_topic_configs(name, changes) if changes else []
    if resource.resource_type == BROKER:
        name = _alterable_broker_resource(broker, resource.resource_name)
        current = broker.metadata.broker_configs.get(name, {})
        changes = _changes(current, resource.configs, ALL_BROKER_CONFIGS, incremental)
        try:
            validate_dynamic_broker_configs(changes, cluster_default=name == "")
        except InvalidConfigError as error:
            # Kafka answers INVALID_REQUEST for broker configs that fail validation (KAFKA-13609).
            raise MetadataError(ErrorCode.invalid_request, str(error)) from None
        return broker.metadata.alter_broker_configs(name, changes) if changes else []
    if resource.resource_type == GROUP:
        split = next((c for c in resource.configs if incremental
                      and c.config_operation in (APPEND, SUBTRACT)), None)
        if split is not None:  # no group config is a LIST (KafkaConfigSchema.isSplittable)
            raise MetadataError(ErrorCode.invalid_config,
                                f"Can't {OPERATIONS[split.config_operation]} to key "
                                f"{split.name} because its type is not LIST.")
        name = resource.resource_name
        current = broker.metadata.group_configs.get(name, {})
        changes = _changes(current, resource.configs, GROUP_CONFIGS, incremental)
        # validated here with this broker's bounds, and again by the controller with its own
        return broker.metadata.alter_group_configs(name, changes, broker.config)
    kind = RESOURCE_TYPES.get(resource.resource_type)
    raise MetadataError(ErrorCode.invalid_request,
                        f"Unsupported resource type {kind}" if kind
                        else f"Unknown resource type {resource.resource_type}")


def _alterable_broker_resource(broker: Broker, name: str) -> str:
    """The resource name the records carry: "" for the cluster default, else this broker's
    node id in canonical form ("01" is written as "1", the name the broker applies)."""
    if not name:
        return ""
    if _broker_id(name, "Node id") != broker.node_id:
        raise MetadataError(ErrorCode.invalid_request,
                            f"Unexpected broker id, expected {broker.node_id}, but received {name}")
    return str(broker.node_id)


def _changes(
    current: Mapping[str, str], configs: Iterable[Any], definitions: Mapping[str, ConfigDef],
    incremental: bool,
) -> Changes:
    """The overrides to write (None removes one), leaving out those that change nothing."""
    if incremental:
        wanted = {c.name: _apply_operation(current, c, definitions) for c in configs}
    else:
        wanted = {c.name: c.value for c in configs}
        wanted.update({name: None for name in current if name not in wanted})
    return {name: value for name, value in wanted.items() if current.get(name) != value}


def _apply_operation(
    current: Mapping[str, str], config: Any, definitions: Mapping[str, ConfigDef]
) -> str | None:
    operation = config.config_operation
    if operation == SET:
        value: str | None = config.value
        return value
    if operation == DELETE:
        return None
    if operation not in (APPEND, SUBTRACT):
        raise MetadataError(ErrorCode.invalid_request, f"Unknown operations type {operation}")
    definition = definitions.get(config.name)
    if definition is None:
        raise MetadataError(ErrorCode.invalid_config, f"Unknown config name: {config.name}")
    if definition.type is not ConfigType.LIST:
        raise MetadataError(ErrorCode.invalid_config,
                            f"Can't {OPERATIONS[operation]} to key {config.name} because "
                            "its type is not LIST.")
    base = current.get(config.name, format_value(definition.default))
    items = [item.strip() for item in (base or "").split(",") if item.strip()]
    for item in (part.strip() for part in config.value.split(",")):
        if operation == APPEND and item not in items:
            items.append(item)
        elif operation == SUBTRACT and item in items:
            items.remove(item)
    return ",".join(items)
