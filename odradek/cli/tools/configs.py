"""`odradek configs describe|alter`, the counterpart of kafka-configs.sh for topics, brokers
(each broker, and the cluster-wide default), groups, the client quotas of users and client
ids (quota_entities.py) and the SCRAM credentials of users (scram_users.py).

DescribeConfigs and IncrementalAlterConfigs are sent over the wire: confluent-kafka keys a
config's synonyms by name, which drops the layers of a broker config (they share its name),
and it refuses the cluster-default broker resource (the empty name)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.tools import scram_users
from odradek.cli.tools.common import (
    ToolError,
    add_client_options,
    print_json,
    read_properties,
    runs,
)
from odradek.cli.tools.config_entities import (
    ENTITY_TYPES,
    Entity,
    check_config_keys,
    completed,
    entity_from_args,
    entry_json,
    entry_line,
    header,
    parse_add_config,
    parse_delete_config,
)
from odradek.cli.tools.quota_entities import (
    QuotaEntity,
    alter_quotas,
    check_config_names,
    describe_lines,
    describe_quotas,
    quota_changes,
)
from odradek.cli.tools.quota_entities import completed_line as quota_completed
from odradek.cli.tools.wire import WireClient, alter_configs, check, send_about
from odradek.metadata.records import ConfigResourceType
from odradek.net.kafka_client.request_versions import (
    API_VERSIONS,
    DESCRIBE_CONFIGS,
    LIST_CONFIG_RESOURCES,
    LIST_GROUPS,
)

CLIENT_ID = "odradek-configs"


def add_configs_parser(commands: Any) -> None:
    """Adds `configs` and its two tools to the `odradek` subcommands."""
    tool = commands.add_parser("configs", help="describe and alter topic, broker and group "
                                               "configs, client quotas and users' SCRAM "
                                               "credentials")
    tools = tool.add_subparsers(dest="tool", required=True)
    describe = tools.add_parser("describe", help="an entity's dynamic configs (--all: every "
                                                 "config)")
    add_client_options(describe)
    _add_entity_options(describe)
    describe.add_argument("--all", action="store_true",
                          help="every config, not only those set on the entity itself")
    describe.set_defaults(run=_runs(describe_configs))

    alter = tools.add_parser("alter", help="set and delete an entity's configs")
    add_client_options(alter, tabular=False)
    _add_entity_options(alter)
    adding = alter.add_mutually_exclusive_group()
    adding.add_argument("--add-config", metavar="K1=V1,K2=[A,B]",
                        help="configs to set; brackets group a value containing commas")
    adding.add_argument("--add-config-file", type=Path, metavar="FILE",
                        help="a properties file of configs to set")
    alter.add_argument("--delete-config", action="append", default=[], metavar="K1,K2",
                       help="configs to remove (back to their inherited value)")
    alter.set_defaults(run=_runs(alter_entity))


def _add_entity_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--entity-type", choices=ENTITY_TYPES, action="append",
                        dest="entity_types", help="users and clients may be given together")
    parser.add_argument("--entity-name", action="append", dest="entity_names",
                        help="topic name, broker id, group id, user or client id (the n-th "
                             "belongs to the n-th --entity-type)")
    parser.add_argument("--entity-default", action="append_const", const="",
                        dest="entity_names",
                        help="the default entity (brokers: the cluster-wide default)")
    parser.add_argument("--topic", help="same as --entity-type topics --entity-name TOPIC")
    parser.add_argument("--broker", metavar="ID",
                        help="same as --entity-type brokers --entity-name ID")
    parser.add_argument("--broker-defaults", action="store_true",
                        help="same as --entity-type brokers --entity-default")
    parser.add_argument("--group", help="same as --entity-type groups --entity-name GROUP")
    parser.add_argument("--user", help="same as --entity-type users --entity-name USER")
    parser.add_argument("--user-defaults", action="store_true",
                        help="same as --entity-type users --entity-default")
    parser.add_argument("--client", help="same as --entity-type clients --entity-name CLIENT")
    parser.add_argument("--client-defaults", action="store_true",
                        help="same as --entity-type clients --entity-default")


def _runs(command: Callable[[WireClient, argparse.Namespace], Awaitable[None]]
          ) -> Callable[[argparse.Namespace], int]:
    async def call(args: argparse.Namespace) -> None:
        async with WireClient(args, CLIENT_ID) as client:
            await command(client, args)

    def run(args: argparse.Namespace) -> None:
        asyncio.run(call(args))

    return runs("configs", run)


async def entity_configs(client: WireClient, entity: Entity, describe_all: bool) -> list[Any]:
    """The entity's configs with their synonyms, sorted by name: all of them, or only those
    set on the entity itself (kafka-configs' default)."""
    response = await send_about(client, entity.resource_type, entity.name, DESCRIBE_CONFIGS, {
        "resources": [{"resource_type": entity.resource_type, "resource_name": entity.name,
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False})
    (result,) = response.results
    check(result.error_code, str(entity), result.error_message)
    return sorted((c for c in result.configs
                   if describe_all or c.config_source == entity.dynamic_source),
                  key=lambda c: c.name)


async def _every(client: WireClient, kind: str) -> list[Entity]:
    """Every entity of a type, as kafka-configs describes them without --entity-name."""
    if kind == "topics":
        metadata = await client.metadata()
        return [Entity(kind, t.name) for t in sorted(metadata.topics, key=lambda t: t.name)]
    brokers = sorted(await client.brokers())
    if kind == "brokers":
        return [*(Entity(kind, str(b)) for b in brokers), Entity(kind, "")]
    groups: set[str] = set()
    for broker in brokers:
        listed = await client.send_to_broker(broker, LIST_GROUPS, {"states_filter": []})
        check(listed.error_code, f"listing the groups of broker {broker}")
        groups.update(g.group_id for g in listed.groups)
    if brokers:
        groups.update(await _groups_with_configs(client, brokers[0]))
    return [Entity(kind, g) for g in sorted(groups)]


async def _groups_with_configs(client: WireClient, broker: int) -> set[str]:
    """The groups that have configs, members or not (ListConfigResources v1, KIP-1142); none
    from a broker that does not serve it or refuses it, as kafka-configs treats them."""
    versions = await client.send_to_broker(broker, API_VERSIONS, {})
    key = LIST_CONFIG_RESOURCES[0]
    if not any(a.api_key == key and a.max_version >= 1 for a in versions.api_keys):
        return set()
    listed = await client.send_to_broker(broker, LIST_CONFIG_RESOURCES,
                                         {"resource_types": [ConfigResourceType.GROUP]})
    if listed.error_code in (ErrorCode.unsupported_version,
                             ErrorCode.cluster_authorization_failed):
        return set()
    check(listed.error_code, "listing the groups with configs")
    return {resource.resource_name for resource in listed.config_resources}


async def describe_configs(client: WireClient, args: argparse.Namespace) -> None:
    entity = entity_from_args(args, altering=False)
    if isinstance(entity, QuotaEntity):
        await describe_users_and_clients(client, entity, args.json)
        return
    entities = [entity] if entity.name is not None else await _every(client, entity.type)
    described = [(e, await entity_configs(client, e, args.all)) for e in entities]
    if args.json:
        print_json([{"entity_type": e.type, "entity_name": e.name,
                     "configs": [entry_json(c) for c in configs]} for e, configs in described])
        return
    for e, configs in described:
        print(header(e, args.all))
        for config in configs:
            print(entry_line(config))


async def describe_users_and_clients(client: WireClient, entity: QuotaEntity,
                                     as_json: bool) -> None:
    """Quotas, then (for users, but not the default user nor a user with a client) SCRAM
    credentials, as kafka-configs describes them."""
    quotas = await describe_quotas(client, entity)
    scram: list[scram_users.Described] = []
    ((first_kind, first_name), *others) = entity.parts
    if first_kind == "users" and not others and first_name != "":
        scram = await scram_users.describe_credentials(client, first_name)
    if as_json:
        print_json([*({"entity": names, "quotas": values} for names, values in quotas),
                    *scram_users.describe_json(scram)])
        return
    for line in [*describe_lines(quotas), *scram_users.describe_lines(scram)]:
        print(line)


async def alter_entity(client: WireClient, args: argparse.Namespace) -> None:
    entity = entity_from_args(args, altering=True)
    if args.add_config is None and args.add_config_file is None and not args.delete_config:
        raise ToolError("At least one of --add-config, --add-config-file, or --delete-config "
                        "must be specified with --alter")
    if args.add_config_file is not None:
        additions = read_properties(args.add_config_file)
        check_config_keys(additions)
    else:
        additions = parse_add_config(args.add_config or "")
    deletions = parse_delete_config(args.delete_config)
    if isinstance(entity, QuotaEntity):
        check_config_names(entity, additions, deletions)
        scram = scram_users.scram_changes(entity, additions, deletions)
        if scram is not None:
            await scram_users.alter_credentials(client, scram)
            print(quota_completed(entity))
            return
        quota_ops = quota_changes(entity, additions, deletions)
        described = await describe_quotas(client, entity)
        set_now = described[0][1] if described else {}
        missing = [name for name in deletions if name not in set_now]
        if missing:
            raise ToolError(f"Invalid config(s): {','.join(missing)}")
        await alter_quotas(client, entity, quota_ops)
        print(quota_completed(entity))
        return
    current = {c.name for c in await entity_configs(client, entity, describe_all=False)}
    unknown = [name for name in deletions if name not in current]
    if unknown:
        raise ToolError(f"Invalid config(s): {','.join(unknown)}")
    changes: dict[str, str | None] = {**additions, **dict.fromkeys(deletions)}
    (result,) = await alter_configs(client, entity.resource_type, {entity.name or "": changes})
    check(result.error_code, str(entity), result.error_message)
    print(completed(entity))
