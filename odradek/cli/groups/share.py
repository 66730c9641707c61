"""Share groups (KIP-932) for `odradek groups list|describe --type share`: listed with
ListGroups and described with FindCoordinator and ShareGroupDescribe over the wire
(confluent-kafka has no share group calls), and printed as Kafka's kafka-share-groups.sh
prints `--describe --state` and `--describe --members` (`--verbose` adds the epochs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.groups.model import GroupsError
from odradek.cli.tools.wire import WireClient
from odradek.net.kafka_client.request_versions import (
    FIND_COORDINATOR,
    LIST_GROUPS,
    SHARE_GROUP_DESCRIBE,
)

SHARE = "share"


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    host: str
    client_id: str
    member_epoch: int
    assignment: dict[str, tuple[int, ...]]
    """Topic name -> partitions."""


@dataclass(frozen=True)
class ShareGroup:
    group_id: str
    coordinator: str
    """`host:port  (id)`, as Kafka's tool prints it."""
    state: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[ShareMember, ...]


async def list_share_groups(client: WireClient, states: Sequence[str]) -> list[tuple[str, str]]:
    """(group, state) of every share group on every broker, sorted."""
    rows: set[tuple[str, str]] = set()
    for broker in sorted(await client.brokers()):
        listed = await client.send_to_broker(broker, LIST_GROUPS, {
            "states_filter": list(states), "types_filter": [SHARE]})
        if listed.error_code != ErrorCode.none:
            raise GroupsError(f"Could not list the groups of broker {broker}: "
                              f"{listed.error_code.name.upper()}")
        rows.update((g.group_id, g.group_state) for g in listed.groups)
    return sorted(rows)


async def find_group_coordinator(client: WireClient, group_id: str) -> Any:
    """FindCoordinator's answer for the group (node_id, host, port)."""
    found = await client.send(FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [group_id]})
    (coordinator,) = found.coordinators
    if coordinator.error_code != ErrorCode.none:
        raise GroupsError(f"Could not find the coordinator of group '{group_id}': "
                          f"{coordinator.error_code.name.upper()}")
    return coordinator


async def describe_share_groups(client: WireClient,
                                group_ids: Sequence[str]) -> dict[str, ShareGroup | None]:
    """Each group's description; None for a group that does not exist (or is not a share
    group)."""
    described: dict[str, ShareGroup | None] = {}
    for group_id in group_ids:
        coordinator = await find_group_coordinator(client, group_id)
        answer = await client.send_to_broker(coordinator.node_id, SHARE_GROUP_DESCRIBE, {
            "group_ids": [group_id], "include_authorized_operations": False})
        (group,) = answer.groups
        if group.error_code == ErrorCode.group_id_not_found:
            described[group_id] = None
            continue
        if group.error_code != ErrorCode.none:
            raise GroupsError(f"Could not describe group '{group_id}': "
                              f"{group.error_message or group.error_code.name.upper()}")
        described[group_id] = ShareGroup(
            group_id, f"{coordinator.host}:{coordinator.port}  ({coordinator.node_id})",
            group.group_state, group.group_epoch, group.assignment_epoch,
            tuple(ShareMember(m.member_id, m.client_host, m.client_id, m.member_epoch,
                              {tp.topic_name: tuple(sorted(tp.partitions))
                               for tp in m.assignment.topic_partitions})
                  for m in group.members))
    return described


def table(widths: Sequence[int], rows: Sequence[Sequence[object]]) -> str:
    """Kafka's `%-Ns` columns one space apart, the last unpadded, after a blank line."""
    lines = [" ".join([*(str(cell).ljust(w)
                         for cell, w in zip(row[:-1], widths, strict=True)),
                       str(row[-1])]) for row in rows]
    return "\n" + "\n".join(lines)


def width(values: Sequence[str], least: int) -> int:
    return max([least, *(len(v) for v in values)])


def state_table(groups: Sequence[ShareGroup], verbose: bool) -> str:
    """`kafka-share-groups --describe --state [--verbose]`."""
    header: list[object] = ["GROUP", "COORDINATOR (ID)", "STATE"]
    widths = [width([g.group_id for g in groups], 15),
              width([g.coordinator for g in groups], 25), 15]
    if verbose:
        header += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        widths += [12, 17]
    rows = [[*header, "#MEMBERS"]]
    for g in groups:
        row: list[object] = [g.group_id, g.coordinator, g.state]
        if verbose:
            row += [g.group_epoch, g.assignment_epoch]
        rows.append([*row, len(g.members)])
    return table(widths, rows)


def assignment_text(assignment: dict[str, tuple[int, ...]]) -> str:
    """`orders:0,1;payments:2`, or "-" for none."""
    parts = sorted(f"{topic}:{','.join(map(str, parts))}" for topic, parts in assignment.items())
    return ";".join(parts) or "-"


def members_table(groups: Sequence[ShareGroup], verbose: bool) -> str:
    """`kafka-share-groups --describe --members [--verbose]`."""
    members = [(g, m) for g in groups for m in g.members]
    header: list[object] = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    widths = [width([g.group_id for g in groups], 15),
              width([m.member_id for _, m in members], 15),
              width([m.host for _, m in members], 15),
              width([m.client_id for _, m in members], 15), 12]
    if verbose:
        header.append("MEMBER-EPOCH")
        widths.append(13)
    rows = [[*header, "ASSIGNMENT"]]
    for g, m in members:
        row: list[object] = [g.group_id, m.member_id, m.host, m.client_id,
                             sum(len(p) for p in m.assignment.values())]
        if verbose:
            row.append(m.member_epoch)
        rows.append([*row, assignment_text(m.assignment)])
    return table(widths, rows)
