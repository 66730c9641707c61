"""What `odradek groups` prints: describe rows, text tables and JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from odradek.cli.groups.model import MISSING, GroupInfo, Partition


@dataclass(frozen=True)
class OffsetRow:
    """One line of `describe`: None prints as "-"."""

    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    @property
    def lag(self) -> int | None:
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.current_offset


def offset_rows(group: GroupInfo, committed: Mapping[Partition, int],
                log_ends: Mapping[Partition, int]) -> list[OffsetRow]:
    """kafka-consumer-groups.sh's rows: members with partitions, most partitions first, then
    partitions with a committed offset that no member holds."""
    rows = []
    assigned: set[Partition] = set()
    holders = sorted((m for m in group.members if m.assignment), key=lambda m: -len(m.assignment))
    for member in holders:
        for partition in sorted(member.assignment):
            assigned.add(partition)
            rows.append(OffsetRow(group.group_id, partition.topic, partition.partition,
                                  committed.get(partition), log_ends.get(partition),
                                  member.consumer_id, member.host, member.client_id))
    for partition in sorted(set(committed) - assigned):
        rows.append(OffsetRow(group.group_id, partition.topic, partition.partition,
                              committed[partition], log_ends.get(partition), None, None, None))
    return rows


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns two spaces apart; None prints as "-"."""
    cells = [list(headers)] + [[MISSING if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def format_assignment(partitions: Iterable[Partition]) -> str:
    """`orders(0,2), payments(1)`, or "-" for none."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return MISSING
    return ", ".join(f"{topic}({','.join(str(p) for p in sorted(numbers))})"
                     for topic, numbers in sorted(by_topic.items()))


def group_summary_table(group: GroupInfo) -> str:
    return format_table(
        ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "TYPE", "#MEMBERS"),
        [(group.group_id, group.coordinator, group.assignment_strategy or None, group.state,
          group.type, len(group.members))])


def offsets_table(rows: Sequence[OffsetRow]) -> str:
    return format_table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
         "HOST", "CLIENT-ID"),
        [(r.group, r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag,
          r.consumer_id, r.host, r.client_id) for r in rows])


def members_table(group: GroupInfo) -> str:
    """One line per member; consumer (KIP-848) groups add each member's target assignment."""
    with_targets = group.type == "Consumer"
    headers = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
               "ASSIGNMENT"]
    if with_targets:
        headers.append("TARGET-ASSIGNMENT")
    rows = []
    for m in group.members:
        row: list[object] = [group.group_id, m.consumer_id, m.group_instance_id, m.host,
                             m.client_id, len(m.assignment), format_assignment(m.assignment)]
        if with_targets:
            row.append(format_assignment(m.target_assignment or ()))
        rows.append(row)
    return format_table(headers, rows)


def plan_table(plans: Mapping[str, Mapping[Partition, int]]) -> str:
    return format_table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                        [(group, p.topic, p.partition, offset)
                         for group, plan in plans.items() for p, offset in plan.items()])


def _partitions_json(partitions: Iterable[Partition]) -> list[dict[str, object]]:
    return [{"topic": p.topic, "partition": p.partition} for p in partitions]


def group_json(group: GroupInfo, rows: Sequence[OffsetRow]) -> dict[str, object]:
    return {
        "group": group.group_id,
        "state": group.state,
        "type": group.type,
        "coordinator": group.coordinator,
        "assignment_strategy": group.assignment_strategy,
        "members": [
            {"consumer_id": m.consumer_id, "group_instance_id": m.group_instance_id,
             "client_id": m.client_id, "host": m.host,
             "assignment": _partitions_json(m.assignment),
             "target_assignment": None if m.target_assignment is None
             else _partitions_json(m.target_assignment)}
            for m in group.members
        ],
        "offsets": [
            {"topic": r.topic, "partition": r.partition, "current_offset": r.current_offset,
             "log_end_offset": r.log_end_offset, "lag": r.lag, "consumer_id": r.consumer_id,
             "host": r.host, "client_id": r.client_id}
            for r in rows
        ],
    }
