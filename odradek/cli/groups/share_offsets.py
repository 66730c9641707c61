"""Share groups' offsets for `odradek groups describe|reset-offsets|delete-offsets --type
share`, over the wire at the group's coordinator as Kafka's Admin asks for them
(DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets), printed as
kafka-share-groups.sh prints `--describe`, `--reset-offsets` and `--delete-offsets`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from odradek.cli.groups.model import MISSING, GroupsError, Partition
from odradek.cli.groups.share import find_group_coordinator, table, width
from odradek.cli.tools.wire import WireClient
from odradek.net.kafka_client.request_versions import (
    ALTER_SHARE_GROUP_OFFSETS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
)


@dataclass(frozen=True)
class ShareOffset:
    """A share-partition's start offset, leader epoch and lag; None where Kafka's Admin
    has none (a negative value on the wire)."""

    partition: Partition
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _known(value: int) -> int | None:
    return None if value < 0 else value


async def share_offsets(client: WireClient, group_id: str) -> list[ShareOffset]:
    """Every share-partition of the group with state, sorted."""
    coordinator = await find_group_coordinator(client, group_id)
    answer = await client.send_to_broker(coordinator.node_id, DESCRIBE_SHARE_GROUP_OFFSETS, {
        "groups": [{"group_id": group_id, "topics": None}]})
    (group,) = answer.groups
    if group.error_code != ErrorCode.none:
        raise GroupsError(f"Could not describe the offsets of share group '{group_id}': "
                          f"{group.error_message or group.error_code.name.upper()}")
    found = []
    for topic in group.topics:
        for p in topic.partitions:
            if p.error_code != ErrorCode.none:
                continue  # Kafka's Admin skips them too
            start = _known(p.start_offset)
            found.append(ShareOffset(Partition(topic.topic_name, p.partition_index), start,
                                     None if start is None else _known(p.leader_epoch),
                                     None if start is None else _known(p.lag)))
    return sorted(found, key=lambda o: o.partition)


def share_offsets_table(group_id: str, offsets: Sequence[ShareOffset], verbose: bool) -> str:
    """`kafka-share-groups --describe [--verbose]` of one group."""
    if not offsets:
        return f"\nShare group '{group_id}' has no offset information."
    header: list[object] = ["GROUP", "TOPIC", "PARTITION"]
    widths = [width([group_id], 15), width([o.partition.topic for o in offsets], 15), 10]
    if verbose:
        header.append("LEADER-EPOCH")
        widths.append(13)
    rows = [[*header, "START-OFFSET", "LAG"]]
    widths.append(13)
    for o in offsets:
        row: list[object] = [group_id, o.partition.topic, o.partition.partition]
        if verbose:
            row.append(_cell(o.leader_epoch))
        rows.append([*row, _cell(o.start_offset), _cell(o.lag)])
    return table(widths, rows)


def _cell(value: int | None) -> object:
    return MISSING if value is None else value


async def alter_share_offsets(client: WireClient, group_id: str,
                              offsets: Mapping[Partition, int]) -> None:
    """Move the (empty) group's share-partitions to new start offsets."""
    topics: dict[str, list[dict[str, int]]] = {}
    for p, offset in sorted(offsets.items()):
        topics.setdefault(p.topic, []).append({"partition_index": p.partition,
                                               "start_offset": offset})
    coordinator = await find_group_coordinator(client, group_id)
    answer = await client.send_to_broker(coordinator.node_id, ALTER_SHARE_GROUP_OFFSETS, {
        "group_id": group_id,
        "topics": [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]})
    if answer.error_code != ErrorCode.none:
        raise GroupsError(answer.error_message or answer.error_code.name.upper())
    failed = [f"{t.topic_name}-{p.partition_index}: {p.error_message or p.error_code.name}"
              for t in answer.responses for p in t.partitions
              if p.error_code != ErrorCode.none]
    if failed:
        raise GroupsError(f"Could not reset the offsets of share group '{group_id}': "
                          + "; ".join(failed))


async def delete_share_offsets(client: WireClient, group_id: str, topics: Iterable[str]
                               ) -> tuple[str | None, dict[str, str | None]]:
    """The request's error message, if any, and each topic's (None: deleted). As Kafka's
    Admin reports it, a request-level error is every topic's."""
    wanted = sorted(set(topics))
    coordinator = await find_group_coordinator(client, group_id)
    answer = await client.send_to_broker(coordinator.node_id, DELETE_SHARE_GROUP_OFFSETS, {
        "group_id": group_id, "topics": [{"topic_name": t} for t in wanted]})
    if answer.error_code != ErrorCode.none:
        message = answer.error_message or answer.error_code.name.upper()
        return message, dict.fromkeys(wanted, message)
    results: dict[str, str | None] = {
        t.topic_name: None if t.error_code == ErrorCode.none
        else t.error_message or t.error_code.name.upper() for t in answer.responses}
    return None, {t: results.get(t, "The topic was not in the response.") for t in wanted}


def delete_table(results: Mapping[str, str | None]) -> str:
    """`kafka-share-groups --delete-offsets`: TOPIC and STATUS."""
    rows: list[list[object]] = [["TOPIC", "STATUS"]]
    rows += [[t, "Successful" if e is None else f"Error: {e}"] for t, e in sorted(results.items())]
    return table([width(list(results), 15)], rows)


def reset_table(group_id: str, plan: Mapping[Partition, int]) -> str:
    """`kafka-share-groups --reset-offsets`: the planned start offsets."""
    rows: list[list[object]] = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    rows += [[group_id, p.topic, p.partition, o] for p, o in sorted(plan.items())]
    return table([width([group_id], 15), width([p.topic for p in plan], 15), 10], rows)
