"""`odradek reassign generate|execute|verify|cancel|list`, the counterpart of
kafka-reassign-partitions.sh: propose a placement of topics over brokers, start partition
reassignments with replication throttles, follow them (with a progress bar of the bytes
copied) and lift the throttles once they are done. Reassignments and log sizes are spoken
over the wire (AlterPartitionReassignments, ListPartitionReassignments, DescribeLogDirs,
IncrementalAlterConfigs): the Python clients have no call for them."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.tools.common import ToolError, add_client_options, read_json_file, runs
from odradek.cli.tools.log_dirs import describe_log_dirs
from odradek.cli.tools.reassign_plan import (
    BROKER_THROTTLES,
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
    TOPIC_THROTTLES,
    Assignment,
    CopyProgress,
    Move,
    Ongoing,
    Partition,
    follower_throttles,
    leader_throttles,
    moves,
    ongoing_line,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    placement_brokers,
    plural,
    propose,
    reassigning_brokers,
    reassignment_json,
    status_line,
)
from odradek.cli.tools.wire import WireClient, alter_configs, check
from odradek.metadata.records import ConfigResourceType
from odradek.net.kafka_client.request_versions import (
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
)

TOPIC_RESOURCE = 2
CLIENT_ID = "reassign-partitions-tool"
POLL_SECONDS = 0.5

EXISTING_REASSIGNMENT = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment.")
RUN_VERIFY = ("Warning: You must run --verify periodically, until the reassignment "
              "completes, to ensure the throttle is removed.")

Command = Callable[[WireClient, argparse.Namespace], Awaitable[None]]


def add_reassign_parser(commands: Any) -> None:
    tool = commands.add_parser("reassign", help="move partitions between brokers")
    tools = tool.add_subparsers(dest="tool", required=True)

    def action(name: str, command: Command, help_text: str) -> argparse.ArgumentParser:
        parser = tools.add_parser(name, help=help_text)
        add_client_options(parser, tabular=False)
        parser.set_defaults(run=_runs(command))
        return parser

    generate = action("generate", generate_command,
                      "propose a placement of topics' partitions over a list of brokers")
    generate.add_argument("--topics-to-move-json-file", type=Path, required=True,
                          metavar="FILE", help='{"topics": [{"topic": "foo"}], "version": 1}')
    generate.add_argument("--broker-list", required=True, metavar="1,2,3",
                          help="the brokers to place the replicas on")
    generate.add_argument("--disable-rack-aware", action="store_true",
                          help="ignore the brokers' racks")

    execute = action("execute", execute_command, "start the reassignment of a JSON file")
    _reassignment_file(execute)
    execute.add_argument("--additional", action="store_true",
                         help="start it even though other reassignments are in progress")
    execute.add_argument("--throttle", type=int, default=-1, metavar="BYTES/S",
                         help="limit the replication of moving partitions to this rate")
    execute.add_argument("--replica-alter-log-dirs-throttle", type=int, default=-1,
                         metavar="BYTES/S", help="limit moves between log directories")

    verify = action("verify", verify_command,
                    "report a reassignment's progress; lift its throttles once done")
    _reassignment_file(verify)
    verify.add_argument("--preserve-throttles", action="store_true",
                        help="leave the throttles in place")
    verify.add_argument("--wait", action="store_true",
                        help="wait for the reassignment, showing the bytes copied")

    cancel = action("cancel", cancel_command, "cancel the reassignments of a JSON file")
    _reassignment_file(cancel)
    cancel.add_argument("--preserve-throttles", action="store_true",
                        help="leave the throttles in place")

    action("list", list_command, "every reassignment in progress")


def _reassignment_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reassignment-json-file", type=Path, required=True, metavar="FILE",
                        help='{"version": 1, "partitions": [{"topic": "foo", "partition": 0, '
                             '"replicas": [1, 2, 3]}]}')


def _runs(command: Command) -> Callable[[argparse.Namespace], int]:
    async def call(args: argparse.Namespace) -> None:
        async with WireClient(args, CLIENT_ID) as client:
            await command(client, args)

    def run(args: argparse.Namespace) -> None:
        asyncio.run(call(args))

    return runs("reassign", run)


def say(*lines: str) -> None:
    print("\n".join(lines), flush=True)


# --- cluster state -----------------------------------------------------------------------


async def _topics(client: WireClient, topics: Iterable[str]) -> dict[str, Any]:
    """Metadata of these topics by name; those the cluster does not know are left out."""
    response = await client.metadata(sorted(set(topics)))
    found = {}
    for topic in response.topics:
        if topic.error_code == ErrorCode.unknown_topic_or_partition:
            continue
        check(topic.error_code, f"topic {topic.name}")
        found[topic.name] = topic
    return found


async def _partitions(client: WireClient, topics: Iterable[str]) -> dict[Partition, Any]:
    """The Metadata of every partition of these topics (of those the cluster knows)."""
    return {Partition(name, p.partition_index): p
            for name, topic in (await _topics(client, topics)).items()
            for p in topic.partitions}


async def current_replicas(client: WireClient, topics: Iterable[str]) -> Assignment:
    """The replicas of every partition of these topics (of those the cluster knows)."""
    return {partition: list(p.replica_nodes)
            for partition, p in (await _partitions(client, topics)).items()}


async def replica_assignment(client: WireClient, topics: Iterable[str]) -> Assignment:
    """Every partition's replicas of these topics; an unknown topic is an error."""
    wanted = sorted(set(topics))
    current = await current_replicas(client, wanted)
    for name in wanted:
        if all(p.topic != name for p in current):
            raise ToolError(f"Topic {name} not found.")
    return current


async def partition_assignment(client: WireClient, partitions: Iterable[Partition]
                               ) -> Assignment:
    """These partitions' replicas; an unknown one is an error."""
    wanted = set(partitions)
    current = await current_replicas(client, {p.topic for p in wanted})
    missing = sorted(wanted - set(current))
    if missing:
        raise ToolError("Unable to find partition: " + ", ".join(map(str, missing)))
    return {p: current[p] for p in wanted}


async def ongoing_reassignments(client: WireClient) -> dict[Partition, Ongoing]:
    response = await client.send(LIST_PARTITION_REASSIGNMENTS,
                                 {"timeout": _ms(client), "topics": None})
    check(response.error_code, "listing the partition reassignments", response.error_message)
    return {Partition(t.name, p.partition_index): Ongoing(
                list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


async def alter_reassignments(client: WireClient,
                              targets: Mapping[Partition, list[int] | None]) -> dict[str, str]:
    """Starts (replicas) or cancels (None) reassignments; the refused ones with the reason."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for partition in sorted(targets):
        by_topic.setdefault(partition.topic, []).append(
            {"partition_index": partition.partition, "replicas": targets[partition]})
    response = await client.send(ALTER_PARTITION_REASSIGNMENTS, {
        "timeout": _ms(client),
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]})
    check(response.error_code, "reassigning partitions", response.error_message)
    return {str(Partition(t.name, p.partition_index)):
            p.error_message or ErrorCode(p.error_code).name.upper()
            for t in response.responses for p in t.partitions
            if p.error_code != ErrorCode.none}


async def broker_ids(client: WireClient) -> set[int]:
    return set(await client.brokers())


async def _alter_configs(client: WireClient, kind: int,
                         changes: Mapping[str, Mapping[str, str | None]]) -> None:
    for result in await alter_configs(client, kind, changes):
        check(result.error_code, f"altering the configs of {result.resource_name}",
              result.error_message)


def _ms(client: WireClient) -> int:
    return int(client.timeout * 1000)


# --- generate ----------------------------------------------------------------------------


async def generate_command(client: WireClient, args: argparse.Namespace) -> None:
    wanted = parse_broker_list(args.broker_list)
    topics = parse_topics_to_move(read_json_file(args.topics_to_move_json_file))
    current = await replica_assignment(client, topics)
    metadata = await client.metadata([])
    racks = {b.node_id: b.rack for b in metadata.brokers}
    proposal = propose(current, placement_brokers(wanted, racks, not args.disable_rack_aware))
    say("Current partition replica assignment", reassignment_json(current), "",
        "Proposed partition reassignment configuration", reassignment_json(proposal))


# --- execute -----------------------------------------------------------------------------


async def execute_command(client: WireClient, args: argparse.Namespace) -> None:
    proposed = parse_reassignment(read_json_file(args.reassignment_json_file))
    ongoing = await ongoing_reassignments(client)
    if ongoing and not args.additional:
        raise ToolError(EXISTING_REASSIGNMENT)
    known = await broker_ids(client)
    unknown = sorted({b for replicas in proposed.values() for b in replicas} - known)
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]}")
    current = await partition_assignment(client, proposed)
    say("Current partition replica assignment", "", reassignment_json(current), "",
        "Save this to use as the --reassignment-json-file option during rollback")
    if args.throttle >= 0 or args.replica_alter_log_dirs_throttle >= 0:
        say(RUN_VERIFY)
    if args.throttle >= 0:
        await set_throttles(client, moves(ongoing, proposed, current), args.throttle)
        say(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    if args.replica_alter_log_dirs_throttle >= 0:
        # Only moves between log directories use this throttle, and the reassignment files
        # this tool accepts have none: there is no broker to set it on (Kafka says the same).
        say(f"The replica-alter-dir throttle limit was set to "
            f"{args.replica_alter_log_dirs_throttle} B/s")
    refused = await alter_reassignments(client, proposed)
    if refused:
        raise ToolError("Error reassigning partition(s): " + "; ".join(
            f"{partition}: {reason}" for partition, reason in sorted(refused.items())))
    say(f"Successfully started partition {plural(len(proposed), 'reassignment')} for "
        + ",".join(map(str, sorted(proposed))))


async def set_throttles(client: WireClient, partition_moves: Mapping[Partition, Move],
                        rate: int) -> None:
    """Kafka's throttles for these moves: the topics' throttled replicas (sources for the
    leaders, new replicas for the followers), and the rate on every broker involved."""
    leader = leader_throttles(partition_moves)
    follower = follower_throttles(partition_moves)
    await _alter_configs(client, TOPIC_RESOURCE, {
        topic: {LEADER_THROTTLED_REPLICAS: leader[topic],
                FOLLOWER_THROTTLED_REPLICAS: follower[topic]}
        for topic in sorted(leader)})
    await _alter_configs(client, ConfigResourceType.BROKER, {
        str(broker): {LEADER_THROTTLED_RATE: str(rate), FOLLOWER_THROTTLED_RATE: str(rate)}
        for broker in reassigning_brokers(partition_moves)})


async def clear_throttles(client: WireClient, targets: Assignment) -> None:
    """Every throttle a reassignment may have set: on all brokers (those of the cluster and
    those named by the targets) and on the targets' topics."""
    live = await broker_ids(client)
    brokers = sorted(live | {b for r in targets.values() for b in r})
    say(f"Clearing broker-level throttles on {plural(len(brokers), 'broker')} "
        + ",".join(map(str, brokers)))
    await _alter_configs(client, ConfigResourceType.BROKER, {
        str(b): dict.fromkeys(BROKER_THROTTLES) for b in brokers if b in live})
    topics = sorted({p.topic for p in targets})
    say(f"Clearing topic-level throttles on {plural(len(topics), 'topic')} " + ",".join(topics))
    await _alter_configs(client, TOPIC_RESOURCE, {t: dict.fromkeys(TOPIC_THROTTLES)
                                                 for t in topics})


# --- verify ------------------------------------------------------------------------------


async def verify_command(client: WireClient, args: argparse.Namespace) -> None:
    targets = parse_reassignment(read_json_file(args.reassignment_json_file))
    if args.wait:
        await wait_for(client, targets)
    ongoing = await ongoing_reassignments(client)
    current = await current_replicas(client, {p.topic for p in targets if p not in ongoing})
    say("Status of partition reassignment:", *(
        status_line(p, None if p in ongoing else current.get(p, []), targets[p])
        for p in sorted(targets)))
    if not ongoing and not args.preserve_throttles:
        await clear_throttles(client, targets)


async def wait_for(client: WireClient, targets: Assignment) -> None:
    """Polls until none of the targets is being reassigned, showing the bytes copied."""
    progress = CopyProgress()
    with ProgressView() as view:
        while True:
            ongoing = await ongoing_reassignments(client)
            moving = {p: o for p, o in ongoing.items() if p in targets}
            for partition in targets.keys() - moving.keys():
                progress.finish(partition)
            if moving:
                await observe_copies(client, moving, progress)
            view.show(progress, done=not moving)
            if not moving:
                return
            await asyncio.sleep(POLL_SECONDS)


async def observe_copies(client: WireClient, moving: Mapping[Partition, Ongoing],
                         progress: CopyProgress) -> None:
    """The log sizes of the moving partitions on their leaders and their new replicas."""
    leader_of = {partition: p.leader_id for partition, p in
                 (await _partitions(client, {p.topic for p in moving})).items()}
    wanted: dict[int, set[Partition]] = {}
    for partition, ongoing in moving.items():
        for broker in [leader_of.get(partition, -1), *ongoing.adding]:
            wanted.setdefault(broker, set()).add(partition)
    live = await broker_ids(client)
    brokers = sorted(b for b in wanted if b in live)
    answers = await asyncio.gather(*(describe_log_dirs(client, b, _by_topic(wanted[b]))
                                     for b in brokers))
    sizes = {(broker, Partition(t.name, p.partition_index)): p.partition_size
             for broker, results in zip(brokers, answers, strict=True)
             for result in results if result.error_code == ErrorCode.none
             for t in result.topics for p in t.partitions if not p.is_future_key}
    for partition, ongoing in moving.items():
        leader_size = sizes.get((leader_of.get(partition, -1), partition))
        if leader_size is not None:
            progress.observe(partition, leader_size,
                             [sizes.get((b, partition), 0) for b in ongoing.adding])


def _by_topic(partitions: Iterable[Partition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for partition in sorted(partitions):
        grouped.setdefault(partition.topic, []).append(partition.partition)
    return grouped


class ProgressView:
    """A rich progress bar on a terminal; elsewhere a plain line whenever the figures
    change, so that logs and pipes get no control codes."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console()
        self.bar: Any = None
        self.task: Any = None
        self.last = ""

    def __enter__(self) -> ProgressView:
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self.bar = Progress(TextColumn("Copying replicas"), BarColumn(),
                                TaskProgressColumn(), DownloadColumn(), TransferSpeedColumn(),
                                TimeRemainingColumn(), console=self.console)
            self.bar.start()
            self.task = self.bar.add_task("copy", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def show(self, progress: CopyProgress, done: bool) -> None:
        if self.bar is not None:
            total = progress.total or (1 if done else None)
            completed = progress.completed if progress.total else (1 if done else 0)
            self.bar.update(self.task, total=total, completed=completed, refresh=True)
            return
        from rich.filesize import decimal

        line = (f"Copied {decimal(progress.completed)} of {decimal(progress.total)} to the "
                f"new replicas ({progress.percent(done)}%)")
        if line != self.last:
            self.last = line
            say(line)


# --- cancel and list ---------------------------------------------------------------------


async def cancel_command(client: WireClient, args: argparse.Namespace) -> None:
    targets = parse_reassignment(read_json_file(args.reassignment_json_file))
    active = sorted(p for p in await ongoing_reassignments(client) if p in targets)
    if active:
        refused = await alter_reassignments(client, dict.fromkeys(active))
        if refused:
            raise ToolError(f"Error cancelling partition {plural(len(refused), 'reassignment')}"
                            " for: " + "; ".join(f"{p}: {reason}"
                                                 for p, reason in sorted(refused.items())))
        say(f"Successfully cancelled partition {plural(len(active), 'reassignment')} for: "
            + ",".join(map(str, active)))
    else:
        say("None of the specified partition reassignments are active.")
    if not args.preserve_throttles:
        await clear_throttles(client, targets)


async def list_command(client: WireClient, args: argparse.Namespace) -> None:
    ongoing = await ongoing_reassignments(client)
    if not ongoing:
        say("No partition reassignments found.")
        return
    say("Current partition reassignments:", *(ongoing_line(p, ongoing[p])
                                              for p in sorted(ongoing)))

