"""`odradek acls add|list|remove`, the counterpart of kafka-acls.sh, with its flags:
resources (`--topic`, `--group`, `--cluster`, `--transactional-id`, `--resource-pattern-type`),
entries (`--allow-principal`, `--deny-principal`, `--allow-host`, `--deny-host`,
`--operation`), the `--producer`, `--consumer` and `--idempotent` conveniences, `--principal`
to list one principal's ACLs and `--force` to remove without asking. It speaks CreateAcls,
DescribeAcls and DeleteAcls through confluent-kafka's AdminClient."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from odradek.cli.tools.admin_client import admin_client
from odradek.cli.tools.common import (
    ToolError,
    add_client_options,
    print_rows,
    runs,
    wait,
)
from odradek.cli.tools.wire import WireClient, check
from odradek.net.kafka_client.request_versions import DESCRIBE_ACLS
from odradek.security.acls import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    enum_named,
)
from odradek.security.principal import KafkaPrincipal

Op = AclOperation
Resource = tuple[ResourceType, str, PatternType]
Entry = tuple[str, str, AclOperation, str]
"""(principal, host, operation, ALLOW or DENY)"""
CLIENT_ID = "odradek-acls"
HEADER = ("RESOURCE_TYPE", "NAME", "PATTERN_TYPE", "PRINCIPAL", "HOST", "OPERATION",
          "PERMISSION")


def add_acls_parser(commands: Any) -> None:
    tool = commands.add_parser("acls", help="add, list and remove ACLs (kafka-acls)")
    verbs = tool.add_subparsers(dest="verb", required=True)
    for verb, summary in (("add", "create ACLs"), ("list", "list ACLs"),
                          ("remove", "delete ACLs")):
        parser = verbs.add_parser(verb, help=summary)
        add_client_options(parser, tabular=verb == "list")
        _add_resource_options(parser)
        if verb != "list":
            _add_entry_options(parser)
        if verb == "list":
            parser.add_argument("--principal", action="append", default=[],
                                help="only this principal's ACLs (Type:name)")
        if verb == "remove":
            parser.add_argument("--force", action="store_true",
                                help="remove without asking")
        parser.set_defaults(run=runs("acls", {"add": add_acls, "list": list_acls,
                                              "remove": remove_acls}[verb]))


def _add_resource_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", action="append", default=[],
                        help="a topic ('*': every topic)")
    parser.add_argument("--group", action="append", default=[],
                        help="a consumer group ('*': every group)")
    parser.add_argument("--transactional-id", action="append", default=[],
                        help="a transactional id ('*': every one)")
    parser.add_argument("--cluster", action="store_true", help="the cluster")
    parser.add_argument("--resource-pattern-type", default="literal",
                        help="literal or prefixed; listing and removing also take any and "
                             "match (default literal)")


def _add_entry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-principal", action="append", default=[],
                        help="principal to allow (Type:name; User:* is everyone)")
    parser.add_argument("--deny-principal", action="append", default=[],
                        help="principal to deny (Type:name)")
    parser.add_argument("--allow-host", action="append", default=[],
                        help="host the allowed principals connect from (default *)")
    parser.add_argument("--deny-host", action="append", default=[],
                        help="host the denied principals connect from (default *)")
    parser.add_argument("--operation", action="append", default=[],
                        help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                             "DescribeConfigs, AlterConfigs, IdempotentWrite or All "
                             "(default All)")
    parser.add_argument("--producer", action="store_true",
                        help="WRITE, DESCRIBE, CREATE on the topics; WRITE, DESCRIBE on the "
                             "transactional ids")
    parser.add_argument("--consumer", action="store_true",
                        help="READ, DESCRIBE on the topics; READ on the groups")
    parser.add_argument("--idempotent", action="store_true",
                        help="with --producer: IDEMPOTENT_WRITE on the cluster")


# --- arguments to ACLs -------------------------------------------------------------------


def _named(kind: Any, text: str, what: str) -> Any:
    try:
        return enum_named(kind, text)
    except ValueError:
        raise ToolError(f"unknown {what} {text!r}") from None


def _pattern_type(args: argparse.Namespace, adding: bool) -> PatternType:
    pattern_type: PatternType = _named(PatternType, args.resource_pattern_type,
                                       "--resource-pattern-type")
    if adding and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ToolError(f"a --resource-pattern-type of {pattern_type.name.lower()} is not "
                        "valid when adding ACLs")
    return pattern_type


def resources(args: argparse.Namespace, adding: bool = False) -> list[Resource]:
    """The resources the flags name, in Kafka's order."""
    pattern_type = _pattern_type(args, adding)
    named = [(ResourceType.TOPIC, name, pattern_type) for name in args.topic]
    if pattern_type == PatternType.LITERAL and (args.cluster or getattr(args, "idempotent",
                                                                        False)):
        named.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    named += [(ResourceType.GROUP, name, pattern_type) for name in args.group]
    named += [(ResourceType.TRANSACTIONAL_ID, name, pattern_type)
              for name in args.transactional_id]
    return named


def _principals(texts: Iterable[str]) -> list[str]:
    principals = []
    for text in texts:
        try:
            principals.append(str(KafkaPrincipal.parse(text.strip())))
        except ValueError as error:
            raise ToolError(str(error)) from None
    return principals


def _entries(args: argparse.Namespace, operations: Iterable[AclOperation]) -> list[Entry]:
    entries: list[Entry] = []
    for permission, principals, hosts in (("ALLOW", args.allow_principal, args.allow_host),
                                          ("DENY", args.deny_principal, args.deny_host)):
        for principal in _principals(principals):
            for host in hosts or [WILDCARD]:
                entries += [(principal, host.strip(), operation, permission)
                            for operation in operations]
    return entries


def acls_to_change(args: argparse.Namespace, adding: bool) -> dict[Resource, list[Entry]]:
    """Per resource, the entries the flags describe (kafka-acls' getResourceFilterToAcls)."""
    named = resources(args, adding)
    if not named:
        raise ToolError("name at least one resource: --topic, --group, --transactional-id "
                        "or --cluster")
    changes: dict[Resource, list[Entry]] = {}
    if not (args.producer or args.consumer):
        operations = [_named(AclOperation, text, "operation")
                      for text in args.operation or ["All"]]
        changes = {resource: _entries(args, operations) for resource in named}
    if args.producer:
        for resource in named:
            kind = resource[0]
            if kind == ResourceType.TOPIC:
                changes[resource] = _entries(args, (Op.WRITE, Op.DESCRIBE, Op.CREATE))
            elif kind == ResourceType.TRANSACTIONAL_ID:
                changes[resource] = _entries(args, (Op.WRITE, Op.DESCRIBE))
            elif kind == ResourceType.CLUSTER and args.idempotent:
                changes[resource] = _entries(args, (Op.IDEMPOTENT_WRITE,))
    if args.consumer:
        for resource in named:
            if resource[0] == ResourceType.TOPIC:
                changes.setdefault(resource, []).extend(_entries(args, (Op.READ, Op.DESCRIBE)))
            elif resource[0] == ResourceType.GROUP:
                changes.setdefault(resource, []).extend(_entries(args, (Op.READ,)))
    for (kind, _, _), entries in changes.items():
        valid = {*SUPPORTED_OPERATIONS[kind], Op.ALL}
        wrong = sorted({e[2].name for e in entries if e[2] not in valid})
        if wrong:
            raise ToolError(f"ResourceType {kind.name} does not support {', '.join(wrong)}; "
                            f"it supports {', '.join(sorted(o.name for o in valid))}")
    return changes


# --- the verbs ---------------------------------------------------------------------------


def _client_types() -> Any:
    from confluent_kafka import admin

    return admin


def _binding(admin: Any, resource: Resource, entry: Entry, filtering: bool = False) -> Any:
    kind, name, pattern_type = resource
    principal, host, operation, permission = entry
    cls = admin.AclBindingFilter if filtering else admin.AclBinding
    return cls(admin.ResourceType(int(kind)), name, admin.ResourcePatternType(int(pattern_type)),
               principal, host, admin.AclOperation(int(operation)),
               admin.AclPermissionType[permission])


def add_acls(args: argparse.Namespace) -> None:
    changes = acls_to_change(args, adding=True)
    if any(not entries for entries in changes.values()):
        raise ToolError("name --allow-principal or --deny-principal to add ACLs")
    admin = _client_types()
    client = admin_client(args)
    bindings = [_binding(admin, resource, entry) for resource, entries in changes.items()
                for entry in entries]
    for binding, future in client.create_acls(bindings,
                                              request_timeout=args.timeout).items():
        wait(future, args)
        print(f"Added {_describe(binding)}")


def remove_acls(args: argparse.Namespace) -> None:
    changes = acls_to_change(args, adding=False)
    admin = _client_types()
    filters = []
    for resource, entries in changes.items():
        if entries:
            filters += [_binding(admin, resource, entry, filtering=True) for entry in entries]
        else:
            kind, name, pattern_type = resource
            filters.append(admin.AclBindingFilter(
                admin.ResourceType(int(kind)), name, admin.ResourcePatternType(int(pattern_type)),
                None, None, admin.AclOperation.ANY, admin.AclPermissionType.ANY))
    if not args.force:
        _confirm(f"remove the ACLs matching {len(filters)} filter(s)")
    client = admin_client(args)
    for future in client.delete_acls(filters, request_timeout=args.timeout).values():
        for binding in wait(future, args):
            print(f"Removed {_describe(binding)}")


def list_acls(args: argparse.Namespace) -> None:
    """Over the wire: librdkafka answers a refused DescribeAcls with an empty list."""
    asyncio.run(_list_acls(args))


async def _list_acls(args: argparse.Namespace) -> None:
    filters = [{"resource_type_filter": kind, "resource_name_filter": name,
                "pattern_type_filter": pattern_type} for kind, name, pattern_type in
               resources(args)] or [{"resource_type_filter": ResourceType.ANY,
                                     "resource_name_filter": None,
                                     "pattern_type_filter": PatternType.ANY}]
    wanted = set(_principals(args.principal))
    rows = []
    async with WireClient(args, CLIENT_ID) as client:
        for acl_filter in filters:
            response = await client.send(DESCRIBE_ACLS, {
                **acl_filter, "principal_filter": None, "host_filter": None,
                "operation": AclOperation.ANY, "permission_type": AclPermissionType.ANY})
            check(response.error_code, "DescribeAcls", response.error_message)
            rows += [(ResourceType(r.resource_type).name, r.resource_name,
                      PatternType(r.pattern_type).name, a.principal, a.host,
                      AclOperation(a.operation).name, AclPermissionType(a.permission_type).name)
                     for r in response.resources for a in r.acls
                     if not wanted or a.principal in wanted]
    print_rows(args, HEADER, sorted(set(rows)))


def _row(binding: Any) -> tuple[str, ...]:
    """A confluent-kafka AclBinding as a row (its BROKER resource type is Kafka's CLUSTER)."""
    kind = "CLUSTER" if binding.restype.name == "BROKER" else binding.restype.name
    return (kind, binding.name, binding.resource_pattern_type.name, binding.principal,
            binding.host, binding.operation.name, binding.permission_type.name)


def _describe(binding: Any) -> str:
    kind, name, pattern, principal, host, operation, permission = _row(binding)
    return (f"{permission} {principal} {operation} from host {host} on {kind} {name} "
            f"({pattern})")


def _confirm(question: str) -> None:
    print(f"Are you sure you want to {question}? (y/n)", flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer != "y":
        raise ToolError("not removed (pass --force to remove without asking)")
