"""`odradek groups list|describe|reset-offsets|delete`: the counterpart of
kafka-consumer-groups.sh, on confluent-kafka's AdminClient.

The module has two halves: pure functions (argument parsing, the reset plan, the describe rows,
table formatting), and `GroupAdmin`, which makes the AdminClient calls and returns plain data.
confluent-kafka is imported lazily, so building the `odradek` parser stays cheap.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient

MISSING = "-"
INACTIVE_STATES = frozenset({"Empty", "Dead"})
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
"""Group states as Kafka names them; librdkafka reports no others (KIP-848's Assigning and
Reconciling come back as Unknown)."""
TYPES = ("Classic", "Consumer")
_STATE_ENUM_NAMES = {
    "PreparingRebalance": "PREPARING_REBALANCING",
    "CompletingRebalance": "COMPLETING_REBALANCING",
    "Stable": "STABLE",
    "Dead": "DEAD",
    "Empty": "EMPTY",
}


class GroupsError(Exception):
    """A failure to report as `Error: <message>` with exit code 1."""


# --- command line ----------------------------------------------------------------------------


def add_groups_parser(commands: Any) -> None:
    groups = commands.add_parser("groups", help="list, describe, reset and delete consumer groups")
    tools = groups.add_subparsers(dest="tool", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    common.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for each broker answer (default 10)")

    listing = tools.add_parser("list", parents=[common], help="one line per group")
    listing.add_argument("--state", action="extend", nargs="+", type=_state, default=[],
                         help=f"only groups in these states: {', '.join(STATES)}")
    listing.add_argument("--type", action="extend", nargs="+", type=_type, default=[],
                         help="only groups of these types: classic, consumer")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=run_list)

    describe = tools.add_parser("describe", parents=[common],
                                help="state, committed offsets and lag, members")
    which = describe.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", action="append", metavar="GROUP")
    which.add_argument("--all-groups", action="store_true")
    describe.add_argument("--members", action="store_true",
                          help="also list the members and their assignments")
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(run=run_describe)

    reset = tools.add_parser("reset-offsets", parents=[common],
                             help="plan (default) or --execute a reset of committed offsets")
    reset.add_argument("--group", action="append", required=True, metavar="GROUP")
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


def parse_datetime(text: str) -> int:
    """An ISO 8601 date-time as epoch milliseconds. Like Kafka, the 'T' is required and a time
    without a zone is UTC; unlike Kafka, seconds and milliseconds may be left out."""
    if "T" not in text:
        raise ValueError(f"invalid date-time {text!r}: expected ISO 8601 with a 'T', "
                         "e.g. 2024-05-01T12:00:00.000")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"invalid date-time {text!r}: expected ISO 8601, "
                         "e.g. 2024-05-01T12:00:00.000+02:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


class TopicArg(NamedTuple):
    """`--topic T` (partitions None: all of them) or `--topic T:0,2`."""

    topic: str
    partitions: tuple[int, ...] | None


def parse_topic_arg(text: str) -> TopicArg:
    topic, separator, partitions = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"invalid topic {text!r}: no topic name")
    if not separator:
        return TopicArg(topic, None)
    try:
        numbers = tuple(int(p) for p in partitions.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid topic {text!r}: expected TOPIC:PARTITION[,PARTITION...]") from None
    if any(n < 0 for n in numbers):
        raise argparse.ArgumentTypeError(f"invalid topic {text!r}: negative partition")
    return TopicArg(topic, numbers)


# --- plain data ------------------------------------------------------------------------------


class Partition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True)
class Member:
    consumer_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[Partition, ...]
    target_assignment: tuple[Partition, ...] | None = None


@dataclass(frozen=True)
class GroupInfo:
    """A described group; `state` and `type` use Kafka's names ("Stable", "Classic")."""

    group_id: str
    state: str
    type: str
    coordinator: str
    assignment_strategy: str
    members: tuple[Member, ...]


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


@dataclass(frozen=True)
class PartitionOffsets:
    """What a reset plan needs to know of one partition. `at_timestamp` is the first offset
    whose timestamp is at or after the requested one, None when no record is that late."""

    earliest: int
    latest: int
    committed: int | None = None
    at_timestamp: int | None = None


ResetKind = Literal["earliest", "latest", "offset", "datetime", "shift"]


@dataclass(frozen=True)
class ResetTarget:
    """Where to move: `value` is the offset, the shift, or the epoch milliseconds."""

    kind: ResetKind
    value: int = 0


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


def clamp(offset: int, earliest: int, latest: int) -> int:
    """Kafka's checkOffsetsRange: past the log end goes to the end, before the start to it."""
    return max(earliest, min(offset, latest))


def plan_reset(target: ResetTarget,
               offsets: Mapping[Partition, PartitionOffsets]) -> dict[Partition, int]:
    """The new committed offset of each partition, clamped to [earliest, latest]."""
    plan = {}
    for partition, known in sorted(offsets.items()):
        if target.kind == "earliest":
            wanted = known.earliest
        elif target.kind == "latest":
            wanted = known.latest
        elif target.kind == "offset":
            wanted = target.value
        elif target.kind == "datetime":
            wanted = known.latest if known.at_timestamp is None else known.at_timestamp
        else:
            if known.committed is None:
                raise GroupsError(
                    f"Cannot shift offset for partition {partition.topic}-{partition.partition}"
                    " since there is no current committed offset.")
            wanted = known.committed + target.value
        plan[partition] = clamp(wanted, known.earliest, known.latest)
    return plan


def refusal(group_id: str, state: str | None) -> str | None:
    """Why the offsets of a group in `state` (None: no such group) cannot be reset, if so."""
    if state is None or state in INACTIVE_STATES:
        return None
    return (f"Assignments can only be reset if the group '{group_id}' is inactive, "
            f"but the current state is {state}.")


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


def group_summary_table(groups: Sequence[GroupInfo]) -> str:
    return format_table(
        ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "TYPE", "#MEMBERS"),
        [(g.group_id, g.coordinator, g.assignment_strategy or None, g.state, g.type,
          len(g.members)) for g in groups])


def offsets_table(rows: Sequence[OffsetRow]) -> str:
    return format_table(
        ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
         "HOST", "CLIENT-ID"),
        [(r.group, r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag,
          r.consumer_id, r.host, r.client_id) for r in rows])


def members_table(group: GroupInfo) -> str:
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


# --- the broker side -------------------------------------------------------------------------


def _kafka_error(failure: BaseException | KafkaError) -> KafkaError | None:
    """The KafkaError of a KafkaException (or the error itself, as results list them)."""
    from confluent_kafka import KafkaError

    if isinstance(failure, KafkaError):
        return failure
    argument = failure.args[0] if failure.args else None
    return argument if isinstance(argument, KafkaError) else None


def describe_error(failure: BaseException | KafkaError) -> str:
    error = _kafka_error(failure)
    if error is None:
        return str(failure) or type(failure).__name__
    return f"{error.str()} ({error.name()})"


class GroupAdmin:
    """The AdminClient calls of this tool, with results as plain data."""

    def __init__(self, bootstrap: str, timeout: float, client: AdminClient | None = None) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout = timeout
        self.client = client or AdminClient({"bootstrap.servers": bootstrap})

    def _wait(self, future: Any) -> Any:
        """A future's result; librdkafka times the request out itself a little earlier."""
        return future.result(timeout=self.timeout + 5)

    def list_groups(self, states: Sequence[str],
                    types: Sequence[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
        """(group, type, state) rows, sorted, and the errors of the brokers that failed."""
        from confluent_kafka import ConsumerGroupState, ConsumerGroupType

        options: dict[str, Any] = {"request_timeout": self.timeout}
        if states:
            options["states"] = {ConsumerGroupState[_STATE_ENUM_NAMES[s]] for s in states}
        if types:
            options["types"] = {ConsumerGroupType[t.upper()] for t in types}
        result = self._wait(self.client.list_consumer_groups(**options))
        rows = sorted(
            (listing.group_id, _type_name(getattr(listing, "type", None)),
             _state_name(getattr(listing, "state", None)))
            for listing in result.valid or ()
        )
        return rows, [describe_error(e) for e in result.errors or ()]

    def describe(self, group_ids: Sequence[str]) -> dict[str, GroupInfo | None]:
        """Each group's description; None for a group that does not exist."""
        from confluent_kafka import KafkaError, KafkaException

        futures = self.client.describe_consumer_groups(list(group_ids),
                                                       request_timeout=self.timeout)
        described: dict[str, GroupInfo | None] = {}
        for group_id in group_ids:
            try:
                description = self._wait(futures[group_id])
            except KafkaException as exception:
                error = _kafka_error(exception)
                if error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
                    described[group_id] = None
                    continue
                raise GroupsError(f"Could not describe group '{group_id}': "
                                  f"{describe_error(exception)}") from None
            info = _group_info(description)
            described[group_id] = None if info.state == "Dead" else info
        return described

    def committed(self, group_id: str) -> dict[Partition, int]:
        """The group's committed offsets; none for a group that does not exist."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException

        futures = self.client.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id)], request_timeout=self.timeout)
        try:
            result = self._wait(futures[group_id])
        except KafkaException as exception:
            error = _kafka_error(exception)
            if error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
                return {}
            raise GroupsError(f"Could not fetch the offsets of group '{group_id}': "
                              f"{describe_error(exception)}") from None
        committed = {}
        for tp in result.topic_partitions or ():
            if tp.error is not None:
                raise GroupsError(f"Could not fetch the offset of {tp.topic}-{tp.partition} for "
                                  f"group '{group_id}': {tp.error.str()}")
            if tp.offset >= 0:
                committed[Partition(tp.topic, tp.partition)] = tp.offset
        return committed

    def log_offsets(self, partitions: Iterable[Partition], spec: Literal["earliest", "latest"]
                    | int) -> dict[Partition, int | None]:
        """ListOffsets: the earliest or latest offset, or the first offset at or after a
        timestamp (ms), None when no record is that late. Partitions the broker answered
        with an error are left out."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        if spec == "earliest":
            offset_spec = OffsetSpec.earliest()
        elif spec == "latest":
            offset_spec = OffsetSpec.latest()
        else:
            offset_spec = OffsetSpec.for_timestamp(spec)
        futures = self.client.list_offsets(
            {TopicPartition(p.topic, p.partition): offset_spec for p in wanted},
            request_timeout=self.timeout)
        answers: dict[Partition, int | None] = {}
        for tp, future in futures.items():
            try:
                offset = self._wait(future).offset
            except KafkaException:
                continue
            answers[Partition(tp.topic, tp.partition)] = offset if offset >= 0 else None
        return answers

    def topic_partitions(self, topics: Iterable[str]) -> list[Partition]:
        from confluent_kafka import KafkaException, TopicCollection

        names = sorted(set(topics))
        if not names:
            return []
        futures = self.client.describe_topics(TopicCollection(names),
                                              request_timeout=self.timeout)
        partitions: list[Partition] = []
        for name in names:
            try:
                description = self._wait(futures[name])
            except KafkaException as exception:
                raise GroupsError(f"Could not describe topic '{name}': "
                                  f"{describe_error(exception)}") from None
            partitions.extend(Partition(name, info.id) for info in description.partitions)
        return sorted(partitions)

    def alter_offsets(self, group_id: str, offsets: Mapping[Partition, int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

        request = ConsumerGroupTopicPartitions(
            group_id, [TopicPartition(p.topic, p.partition, o) for p, o in offsets.items()])
        futures = self.client.alter_consumer_group_offsets([request],
                                                           request_timeout=self.timeout)
        try:
            result = self._wait(futures[group_id])
        except KafkaException as exception:
            raise GroupsError(f"Could not reset the offsets of group '{group_id}': "
                              f"{describe_error(exception)}") from None
        failed = [f"{tp.topic}-{tp.partition}: {tp.error.str()}"
                  for tp in result.topic_partitions or () if tp.error is not None]
        if failed:
            raise GroupsError(f"Could not reset the offsets of group '{group_id}': "
                              + "; ".join(failed))

    def delete(self, group_ids: Sequence[str]) -> dict[str, str | None]:
        """Each group's deletion error, None where it was deleted."""
        from confluent_kafka import KafkaException

        futures = self.client.delete_consumer_groups(list(group_ids),
                                                     request_timeout=self.timeout)
        outcome: dict[str, str | None] = {}
        for group_id in group_ids:
            try:
                self._wait(futures[group_id])
                outcome[group_id] = None
            except KafkaException as exception:
                outcome[group_id] = describe_error(exception)
        return outcome


def _state_name(state: Any) -> str:
    names = {enum: kafka for kafka, enum in _STATE_ENUM_NAMES.items()}
    return names.get(getattr(state, "name", ""), "Unknown")


def _type_name(group_type: Any) -> str:
    name = getattr(group_type, "name", "")
    return name.capitalize() if name in ("CLASSIC", "CONSUMER") else "Unknown"


def _partitions(topic_partitions: Iterable[Any]) -> tuple[Partition, ...]:
    return tuple(sorted(Partition(tp.topic, tp.partition) for tp in topic_partitions))


def _group_info(description: Any) -> GroupInfo:
    coordinator = description.coordinator
    members = tuple(
        Member(
            consumer_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, host=m.host,
            assignment=_partitions(m.assignment.topic_partitions if m.assignment else ()),
            target_assignment=None if m.target_assignment is None
            else _partitions(m.target_assignment.topic_partitions),
        )
        for m in description.members
    )
    return GroupInfo(
        group_id=description.group_id,
        state=_state_name(getattr(description, "state", None)),
        type=_type_name(getattr(description, "type", None)),
        coordinator=f"{coordinator.host}:{coordinator.port} ({coordinator.id})"
        if coordinator is not None else MISSING,
        assignment_strategy=description.partition_assignor or "",
        members=members,
    )


# --- the commands ----------------------------------------------------------------------------


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


def _guarded(
    command: Callable[[argparse.Namespace, GroupAdmin], int],
) -> Callable[[argparse.Namespace], int]:
    """Runs a command, turning GroupsError and Kafka failures into `Error:` and exit code 1."""

    def run(args: argparse.Namespace) -> int:
        from confluent_kafka import KafkaException

        try:
            return command(args, GroupAdmin(args.bootstrap_server, args.timeout))
        except GroupsError as error:
            return _fail(str(error))
        except (KafkaException, TimeoutError) as error:
            return _fail(describe_error(error))

    run.__doc__ = command.__doc__
    return run


def _list(args: argparse.Namespace, admin: GroupAdmin) -> int:
    rows, errors = admin.list_groups(args.state, args.type)
    if args.json:
        print(json.dumps([{"group": g, "type": t, "state": s} for g, t, s in rows], indent=2))
    elif rows:
        print(format_table(("GROUP", "TYPE", "STATE"), rows))
    for error in errors:
        print(f"Error: {error}", file=sys.stderr)
    return 1 if errors else 0


def _describe(args: argparse.Namespace, admin: GroupAdmin) -> int:
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
    missing = [group_id for group_id, g in described.items() if g is None]
    if args.json:
        print(json.dumps([group_json(g, rows[g.group_id]) for g in groups], indent=2))
    else:
        sections = []
        for g in groups:
            parts = [group_summary_table([g])]
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
    for group_id in missing:
        print(f"Error: Consumer group '{group_id}' does not exist.", file=sys.stderr)
    return 1 if missing else 0


def _reset_offsets(args: argparse.Namespace, admin: GroupAdmin) -> int:
    group_ids = list(dict.fromkeys(args.group))
    states = {g: None if info is None else info.state
              for g, info in admin.describe(group_ids).items()}
    refusals = [message for g in group_ids if (message := refusal(g, states[g])) is not None]
    if refusals:
        for message in refusals:
            print(f"Error: {message}", file=sys.stderr)
        return 1
    target = reset_target(args)
    plans = {}
    for group_id in group_ids:
        committed = admin.committed(group_id)
        partitions = _reset_scope(args, admin, committed)
        plans[group_id] = plan_reset(target, _partition_offsets(admin, partitions, committed,
                                                                target))
    if args.execute:
        for group_id, plan in plans.items():
            if plan:
                admin.alter_offsets(group_id, plan)
    print(plan_table(plans))
    return 0


def _reset_scope(args: argparse.Namespace, admin: GroupAdmin,
                 committed: Mapping[Partition, int]) -> list[Partition]:
    if args.all_topics:
        return sorted(committed)
    partitions = [Partition(t.topic, p) for t in args.topic for p in t.partitions or ()]
    partitions += admin.topic_partitions(t.topic for t in args.topic if t.partitions is None)
    return sorted(set(partitions))


def _partition_offsets(admin: GroupAdmin, partitions: Sequence[Partition],
                       committed: Mapping[Partition, int],
                       target: ResetTarget) -> dict[Partition, PartitionOffsets]:
    earliest = admin.log_offsets(partitions, "earliest")
    latest = admin.log_offsets(partitions, "latest")
    at_timestamp = (admin.log_offsets(partitions, target.value) if target.kind == "datetime"
                    else {})
    known = {}
    for p in partitions:
        start, end = earliest.get(p), latest.get(p)
        if start is None or end is None or (target.kind == "datetime" and p not in at_timestamp):
            raise GroupsError(f"Could not get the offsets of {p.topic}-{p.partition}: "
                              "no such partition, or no answer from its leader.")
        known[p] = PartitionOffsets(start, end, committed.get(p), at_timestamp.get(p))
    return known


def _delete(args: argparse.Namespace, admin: GroupAdmin) -> int:
    outcome = admin.delete(list(dict.fromkeys(args.group)))
    for group_id, error in outcome.items():
        if error is None:
            print(f"Group '{group_id}' deleted.")
        else:
            print(f"Error: Group '{group_id}' could not be deleted: {error}", file=sys.stderr)
    return 1 if any(error is not None for error in outcome.values()) else 0


run_list = _guarded(_list)
run_describe = _guarded(_describe)
run_reset_offsets = _guarded(_reset_offsets)
run_delete = _guarded(_delete)
