"""The `odradek groups list|describe|reset-offsets|delete` parser and commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from odradek.cli.groups.admin import GroupAdmin
from odradek.cli.groups.model import STATES, TYPES, GroupsError
from odradek.cli.groups.report import (
    format_table,
    group_json,
    group_summary_table,
    members_table,
    offset_rows,
    offsets_table,
    plan_table,
)
from odradek.cli.groups.reset import (
    ResetTarget,
    parse_datetime,
    parse_topic_arg,
    partition_offsets,
    plan_reset,
    refusal,
    reset_scope,
)
from odradek.cli.groups.share import (
    describe_share_groups,
    list_share_groups,
    state_table,
)
from odradek.cli.groups.share import (
    members_table as share_members_table,
)
from odradek.cli.groups.share_offsets import (
    alter_share_offsets,
    delete_share_offsets,
    delete_table,
    reset_table,
    share_offsets,
    share_offsets_table,
)
from odradek.cli.tools.common import (
    DEFAULT_BOOTSTRAP,
    ToolError,
    client_properties,
    describe_kafka_error,
    librdkafka_config,
)
from odradek.cli.tools.wire import WireClient, check_login

CLIENT_ID = "odradek-groups"


def add_groups_parser(commands: Any) -> None:
    """Adds `groups` and its four tools to the `odradek` subcommands."""
    groups = commands.add_parser("groups", help="list, describe, reset and delete consumer groups")
    tools = groups.add_subparsers(dest="tool", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT")
    common.add_argument("--command-config", metavar="FILE", type=Path,
                        help="a properties file of client configs")
    common.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for each broker answer (default 10)")

    listing = tools.add_parser("list", parents=[common], help="one line per group")
    listing.add_argument("--state", action="extend", nargs="+", type=_state, default=[],
                         help=f"only groups in these states: {', '.join(STATES)}")
    listing.add_argument("--type", action="extend", nargs="+", type=_type, default=[],
                         help="only groups of these types: classic, consumer, share")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)

    describe = tools.add_parser("describe", parents=[common],
                                help="state, committed offsets and lag, members")
    which = describe.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", action="append", metavar="GROUP")
    which.add_argument("--all-groups", action="store_true")
    describe.add_argument("--members", action="store_true",
                          help="also list the members and their assignments")
    describe.add_argument("--type", type=_type, help="share: describe share groups, printed "
                          "as kafka-share-groups --describe --state (and --members)")
    describe.add_argument("--verbose", action="store_true",
                          help="with --type share: also the group and member epochs")
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(run=run_describe)

    reset = tools.add_parser("reset-offsets", parents=[common],
                             help="plan (default) or --execute a reset of committed offsets")
    reset.add_argument("--group", action="append", required=True, metavar="GROUP")
    reset.add_argument("--type", type=_type, help="share: move a share group's start "
                       "offsets, as kafka-share-groups --reset-offsets")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", type=parse_topic_arg, metavar="TOPIC[:P,P]")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has committed offsets for")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    target.add_argument("--to-datetime", type=_datetime, metavar="ISO8601",
                        help="e.g. 2024-05-01T12:00:00.000 (UTC unless a zone is given)")
    target.add_argument("--shift-by", type=int, metavar="N")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (default)")
    mode.add_argument("--execute", action="store_true", help="commit the planned offsets")
    reset.set_defaults(run=run_reset_offsets)

    delete_offsets = tools.add_parser(
        "delete-offsets", parents=[common],
        help="delete a share group's offsets of topics (kafka-share-groups --delete-offsets)")
    delete_offsets.add_argument("--group", required=True, metavar="GROUP")
    delete_offsets.add_argument("--topic", action="append", required=True, metavar="TOPIC")
    delete_offsets.add_argument("--type", type=_type, required=True,
                                help="share (the only type whose offsets it deletes)")
    delete_offsets.set_defaults(run=run_delete_offsets)

    delete = tools.add_parser("delete", parents=[common], help="delete empty groups")
    delete.add_argument("--group", action="append", required=True, metavar="GROUP")
    delete.set_defaults(run=run_delete)


def _choice(text: str, names: Sequence[str], what: str) -> str:
    for name in names:
        if name.lower() == text.strip().lower():
            return name
    raise argparse.ArgumentTypeError(
        f"invalid {what} {text!r}; valid {what}s are: {', '.join(names)}")


def _state(text: str) -> str:
    return _choice(text, STATES, "state")


def _type(text: str) -> str:
    return _choice(text, TYPES, "type")


def _datetime(text: str) -> int:
    try:
        return parse_datetime(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def reset_target(args: argparse.Namespace) -> ResetTarget:
    if args.to_earliest:
        return ResetTarget("earliest")
    if args.to_latest:
        return ResetTarget("latest")
    if args.to_offset is not None:
        return ResetTarget("offset", args.to_offset)
    if args.to_datetime is not None:
        return ResetTarget("datetime", args.to_datetime)
    return ResetTarget("shift", args.shift_by)


def _print_error(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr)


def list_groups(args: argparse.Namespace, admin: GroupAdmin) -> int:
    others = [t for t in args.type if t != "Share"]
    rows: list[tuple[str, str, str]] = []
    errors: list[str] = []
    if others or not args.type:
        rows, errors = admin.list_groups(args.state, others)
    if "Share" in args.type:
        shares = asyncio.run(_share_groups(args))
        rows = sorted([*rows, *((group, "Share", state) for group, state in shares)])
    if args.json:
        print(json.dumps([{"group": g, "type": t, "state": s} for g, t, s in rows], indent=2))
    elif rows:
        print(format_table(("GROUP", "TYPE", "STATE"), rows))
    for error in errors:
        _print_error(error)
    return 1 if errors else 0


async def _share_groups(args: argparse.Namespace) -> list[tuple[str, str]]:
    async with WireClient(args, CLIENT_ID) as client:
        return await list_share_groups(client, getattr(args, "state", ()))


def describe_share(args: argparse.Namespace) -> int:
    """`describe --type share`: the state table, and the members table with --members."""

    async def describe() -> tuple[dict[str, Any], dict[str, list[Any]]]:
        async with WireClient(args, CLIENT_ID) as client:
            if args.all_groups:
                group_ids = [g for g, _ in await list_share_groups(client, ())]
            else:
                group_ids = list(dict.fromkeys(args.group))
            described = await describe_share_groups(client, group_ids)
            offsets = {g: await share_offsets(client, g)
                       for g, found in described.items() if found is not None}
            return described, offsets

    described, offsets = asyncio.run(describe())
    groups = [g for g in described.values() if g is not None]
    if groups:
        print(state_table(groups, args.verbose))
        for g in groups:
            print(share_offsets_table(g.group_id, offsets[g.group_id], args.verbose))
        if args.members:
            print(share_members_table(groups, args.verbose))
    missing = [group_id for group_id, g in described.items() if g is None]
    for group_id in missing:
        _print_error(f"Share group '{group_id}' does not exist.")
    return 1 if missing else 0


def describe_groups(args: argparse.Namespace, admin: GroupAdmin) -> int:
    if args.type == "Share":
        return describe_share(args)
    if args.all_groups:
        group_ids = [group for group, _, _ in admin.list_groups((), ())[0]]
    else:
        group_ids = list(dict.fromkeys(args.group))
    described = admin.describe(group_ids) if group_ids else {}
    groups = [g for g in described.values() if g is not None]
    committed = {g.group_id: admin.committed(g.group_id) for g in groups}
    partitions = {p for g in groups for m in g.members for p in m.assignment}
    partitions.update(p for offsets in committed.values() for p in offsets)
    log_ends = {p: o for p, o in admin.log_offsets(partitions, "latest").items() if o is not None}
    rows = {g.group_id: offset_rows(g, committed[g.group_id], log_ends) for g in groups}
    if args.json:
        print(json.dumps([group_json(g, rows[g.group_id]) for g in groups], indent=2))
    else:
        sections = []
        for g in groups:
            parts = [group_summary_table(g)]
            if rows[g.group_id]:
                parts.append(offsets_table(rows[g.group_id]))
            else:
                parts.append(f"Consumer group '{g.group_id}' has no committed offsets "
                             "and no assigned partitions.")
            if args.members:
                parts.append(members_table(g) if g.members
                             else f"Consumer group '{g.group_id}' has no active members.")
            sections.append("\n\n".join(parts))
        if sections:
            print("\n\n".join(sections))
    missing = [group_id for group_id, g in described.items() if g is None]
    for group_id in missing:
        _print_error(f"Consumer group '{group_id}' does not exist.")
    return 1 if missing else 0


def reset_share_offsets(args: argparse.Namespace, admin: GroupAdmin) -> int:
    """`reset-offsets --type share`: kafka-share-groups --reset-offsets, group by group."""
    target = reset_target(args)
    if target.kind == "shift":
        raise GroupsError("--shift-by is not a reset scenario of share groups.")

    async def reset(group_id: str) -> str:
        async with WireClient(args, CLIENT_ID) as client:
            group = (await describe_share_groups(client, [group_id]))[group_id]
            if group is not None and group.state != "Empty":
                raise GroupsError(f"Share group '{group_id}' is not empty.")
            current = {o.partition: o.start_offset for o in await share_offsets(client, group_id)
                       if o.start_offset is not None}
            partitions = reset_scope(None if args.all_topics else args.topic, current, admin)
            plan = plan_reset(target, partition_offsets(partitions, current, target, admin))
            if args.execute and plan:
                await alter_share_offsets(client, group_id, plan)
            return reset_table(group_id, plan) if plan else ""

    for group_id in dict.fromkeys(args.group):
        printed = asyncio.run(reset(group_id))
        if printed:
            print(printed)
    return 0


def delete_share_group_offsets(args: argparse.Namespace, admin: GroupAdmin) -> int:
    """`delete-offsets --type share`: kafka-share-groups --delete-offsets."""
    if args.type != "Share":
        raise GroupsError("delete-offsets deletes share groups' offsets only (--type share).")

    async def delete() -> tuple[str | None, dict[str, str | None]]:
        async with WireClient(args, CLIENT_ID) as client:
            return await delete_share_offsets(client, args.group, args.topic)

    error, results = asyncio.run(delete())
    if error is not None:
        _print_error(error)
    print(delete_table(results))
    return 1 if error is not None or any(e is not None for e in results.values()) else 0


def reset_offsets(args: argparse.Namespace, admin: GroupAdmin) -> int:
    if args.type == "Share":
        return reset_share_offsets(args, admin)
    group_ids = list(dict.fromkeys(args.group))
    states = {g: None if info is None else info.state
              for g, info in admin.describe(group_ids).items()}
    refusals = [message for g in group_ids if (message := refusal(g, states[g])) is not None]
    for message in refusals:
        _print_error(message)
    if refusals:
        return 1
    target = reset_target(args)
    topics = None if args.all_topics else args.topic
    plans = {}
    for group_id in group_ids:
        committed = admin.committed(group_id)
        partitions = reset_scope(topics, committed, admin)
        plans[group_id] = plan_reset(target,
                                     partition_offsets(partitions, committed, target, admin))
    if args.execute:
        for group_id, plan in plans.items():
            if plan:
                admin.alter_offsets(group_id, plan)
    print(plan_table(plans))
    return 0


def delete_groups(args: argparse.Namespace, admin: GroupAdmin) -> int:
    outcome = admin.delete(list(dict.fromkeys(args.group)))
    for group_id, error in outcome.items():
        if error is None:
            print(f"Group '{group_id}' deleted.")
        else:
            _print_error(f"Group '{group_id}' could not be deleted: {error}")
    return 1 if any(error is not None for error in outcome.values()) else 0


def _guarded(
    command: Callable[[argparse.Namespace, GroupAdmin], int],
) -> Callable[[argparse.Namespace], int]:
    """Runs a command, turning GroupsError and Kafka failures into `Error:` and exit code 1."""

    def run(args: argparse.Namespace) -> int:
        from confluent_kafka import KafkaException

        try:
            properties = client_properties(args)
            check_login(properties, args.bootstrap_server, args.timeout)
            return command(args, GroupAdmin(librdkafka_config(properties), args.timeout))
        except (GroupsError, ToolError) as error:
            _print_error(str(error))
        except (KafkaException, TimeoutError) as error:
            _print_error(describe_kafka_error(error))
        return 1

    return run


run_list = _guarded(list_groups)
run_describe = _guarded(describe_groups)
run_reset_offsets = _guarded(reset_offsets)
run_delete = _guarded(delete_groups)
run_delete_offsets = _guarded(delete_share_group_offsets)
