"""kafka-topics' arguments: replica assignments, `--config` pairs, the checks of flag
combinations, and `--topic` read as kafka-topics reads it (a regular expression)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.topic_report import Filters

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""Kafka's internal topics (its Topic.isInternal), which `--exclude-internal` leaves out."""
MAX_REPLICATION_FACTOR = 32767


def parse_replica_assignment(text: str | None) -> list[list[int]]:
    """Kafka's `--replica-assignment`: `0:1,1:2` is partition 0 on brokers 0 and 1, partition 1
    on brokers 1 and 2. Every partition has the same replica count, without duplicates. None
    or empty: no assignment."""
    assignment: list[list[int]] = []
    if not text:
        return assignment
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise ToolError("invalid --replica-assignment: expected broker ids like 0:1,1:2, "
                            f"got {part.strip()!r}") from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise ToolError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, duplicates)))
        if assignment and len(brokers) != len(assignment[0]):
            raise ToolError(f"Partition {index} has different replication factor: {brokers}")
        assignment.append(brokers)
    return assignment


def parse_topic_configs(items: Sequence[str]) -> dict[str, str]:
    """`--config` values, each `name=value` (kafka-topics allows no further `=`)."""
    configs = {}
    for item in items:
        parts = re.split(r"\s*=\s*", item)
        if len(parts) != 2:
            raise ToolError('Invalid topic config: all configs to be added must be in the '
                            f'format "key=val", got {item!r}')
        configs[parts[0].strip()] = parts[1].strip()
    return configs


def check_arguments(args: argparse.Namespace) -> None:
    """kafka-topics' checks of flag combinations and counts."""
    assignment = parse_replica_assignment(getattr(args, "replica_assignment", None))
    if args.tool == "create":
        if assignment and (args.partitions is not None or args.replication_factor is not None):
            raise ToolError("--replica-assignment cannot be used with --partitions or "
                            "--replication-factor")
        rf = args.replication_factor
        if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
            raise ToolError("The replication factor must be between 1 and "
                            f"{MAX_REPLICATION_FACTOR} inclusive")
    if args.tool in ("create", "alter") and args.partitions is not None and args.partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    if args.tool == "describe" and args.topics_with_overrides and Filters(
            args.under_replicated_partitions, args.under_min_isr_partitions,
            args.at_min_isr_partitions, args.unavailable_partitions).reports:
        raise ToolError("--topics-with-overrides cannot be combined with the partition reports")


def topic_pattern(regex: str) -> re.Pattern[str]:
    """kafka-topics' topic filter: commas are alternatives, spaces and enclosing quotes are
    dropped, and the whole name must match."""
    cleaned = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", regex.strip().replace(",", "|")
                                            .replace(" ", "")))
    try:
        return re.compile(cleaned)
    except re.error:
        raise ToolError(f"{cleaned} is an invalid regex.") from None


def select_topics(names: Sequence[str], regex: str | None, exclude_internal: bool) -> list[str]:
    pattern = topic_pattern(regex) if regex is not None else None
    return sorted(n for n in names
                  if (pattern is None or pattern.fullmatch(n))
                  and not (exclude_internal and n in INTERNAL_TOPICS))
