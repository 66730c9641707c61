"""`odradek quorum describe --status|--replication`, the counterpart of Kafka's
kafka-metadata-quorum.sh: the metadata log's Raft quorum as its leader reports it, through
DescribeQuorum (API 55), which any broker forwards to the active controller."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.tools.common import ToolError, add_client_options, print_json, runs, table
from odradek.cli.tools.wire import WireClient, check
from odradek.metadata.image import METADATA_TOPIC
from odradek.net.kafka_client.request_versions import DESCRIBE_QUORUM

CLIENT_ID = "odradek-quorum"
UNKNOWN = -1
RETRIABLE = frozenset({ErrorCode.request_timed_out, ErrorCode.not_leader_or_follower,
                       ErrorCode.not_controller})
"""No active controller (an election is under way): asked again until --timeout, as Kafka's
admin client retries."""
RETRY_BACKOFF_S = 0.1
REPLICATION_HEADER = ("NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                      "LastCaughtUpTimestamp", "Status")


@dataclass(frozen=True, slots=True)
class Replica:
    node_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    """Milliseconds since the epoch; -1 when unknown."""
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]

    @property
    def leader(self) -> Replica:
        for voter in self.voters:
            if voter.node_id == self.leader_id:
                return voter
        raise ToolError(f"the quorum's leader {self.leader_id} is not among its voters")


# --- the report, as kafka-metadata-quorum prints it --------------------------------------


def status(cluster_id: str, quorum: QuorumInfo) -> dict[str, Any]:
    """`--status`'s fields. The most lagging voter is the first with the lowest log end
    offset; its lag in time is how long before the leader's it was last caught up."""
    leader = quorum.leader
    laggard = min(quorum.voters, key=lambda voter: voter.log_end_offset)
    if laggard is leader:
        lag_time_ms = 0
    elif UNKNOWN not in (leader.last_caught_up_timestamp, laggard.last_caught_up_timestamp):
        lag_time_ms = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    else:
        lag_time_ms = UNKNOWN
    return {
        "ClusterId": cluster_id,
        "LeaderId": quorum.leader_id,
        "LeaderEpoch": quorum.leader_epoch,
        "HighWatermark": quorum.high_watermark,
        "MaxFollowerLag": leader.log_end_offset - laggard.log_end_offset,
        "MaxFollowerLagTimeMs": lag_time_ms,
        "CurrentVoters": [voter.node_id for voter in quorum.voters],
        "CurrentObservers": [observer.node_id for observer in quorum.observers],
    }


def status_text(fields: dict[str, Any]) -> str:
    """Kafka's layout: names padded to one column, id lists as `[1,2,3]`."""
    return "\n".join(
        f"{name + ':':<24}"
        + ("[" + ",".join(map(str, value)) + "]" if isinstance(value, list) else str(value))
        for name, value in fields.items())


def _timestamp(timestamp_ms: int, human_readable: bool, now_ms: int, what: str) -> int | str:
    if timestamp_ms == UNKNOWN:
        return UNKNOWN
    if not human_readable:
        return timestamp_ms
    if not 0 < timestamp_ms <= now_ms:
        raise ToolError(f"Error while computing relative time, possible drift in system clock. "
                        f"Current timestamp is {now_ms}, {what} timestamp is {timestamp_ms}")
    return f"{now_ms - timestamp_ms} ms ago"


def replication_rows(quorum: QuorumInfo, human_readable: bool, now_ms: int
                     ) -> list[tuple[int | str, ...]]:
    """`--replication`'s rows: the leader, the other voters, then the observers; the lag is
    behind the leader's log end offset."""
    leader = quorum.leader
    groups: list[tuple[str, Sequence[Replica]]] = [
        ("Leader", [leader]),
        ("Follower", [v for v in quorum.voters if v.node_id != quorum.leader_id]),
        ("Observer", quorum.observers),
    ]
    return [
        (replica.node_id, replica.log_end_offset, leader.log_end_offset - replica.log_end_offset,
         _timestamp(replica.last_fetch_timestamp, human_readable, now_ms, "last fetch"),
         _timestamp(replica.last_caught_up_timestamp, human_readable, now_ms, "last caught up"),
         role)
        for role, replicas in groups for replica in replicas
    ]


# --- asking the cluster -------------------------------------------------------------------


def _replicas(states: Sequence[Any]) -> tuple[Replica, ...]:
    return tuple(Replica(int(s.replica_id), int(s.log_end_offset),
                         int(getattr(s, "last_fetch_timestamp", UNKNOWN)),
                         int(getattr(s, "last_caught_up_timestamp", UNKNOWN)))
                 for s in states)


async def describe_quorum(client: WireClient) -> QuorumInfo:
    deadline = time.monotonic() + client.timeout
    while True:
        response = await client.send(DESCRIBE_QUORUM, {"topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]})
        partitions = [p for t in response.topics for p in t.partitions]
        codes = {response.error_code, *(p.error_code for p in partitions)} - {ErrorCode.none}
        if not codes & RETRIABLE or time.monotonic() >= deadline:
            break
        await asyncio.sleep(RETRY_BACKOFF_S)
    check(response.error_code, "DescribeQuorum")
    (partition,) = partitions
    check(partition.error_code, f"DescribeQuorum of {METADATA_TOPIC}-0")
    return QuorumInfo(int(partition.leader_id), int(partition.leader_epoch),
                      int(partition.high_watermark), _replicas(partition.current_voters),
                      _replicas(partition.observers))


async def _describe(args: argparse.Namespace) -> None:
    async with WireClient(args, CLIENT_ID) as client:
        if args.status:
            cluster_id = (await client.metadata([])).cluster_id or ""
            fields = status(cluster_id, await describe_quorum(client))
            if args.json:
                print_json(fields)
            else:
                print(status_text(fields))
            return
        quorum = await describe_quorum(client)
    rows = replication_rows(quorum, args.human_readable, time.time_ns() // 1_000_000)
    if args.json:
        print_json([dict(zip(REPLICATION_HEADER, row, strict=True)) for row in rows])
    else:
        print(table(REPLICATION_HEADER, rows))


def describe(args: argparse.Namespace) -> None:
    if args.bootstrap_controller:
        raise ToolError("--bootstrap-controller is not supported: Odradek's controllers speak "
                        "gRPC, not the Kafka protocol; use --bootstrap-server (brokers forward "
                        "DescribeQuorum to the active controller)")
    if args.status and args.replication:
        raise ToolError("Only one of --status or --replication should be specified with "
                        "describe sub-command")
    if not (args.status or args.replication):
        raise ToolError("One of --status or --replication must be specified with describe "
                        "sub-command")
    if args.status and args.human_readable:
        raise ToolError("The option --human-readable is only supported along with "
                        "--replication")
    asyncio.run(_describe(args))


def add_quorum_parser(commands: Any) -> None:
    tool = commands.add_parser("quorum", help="describe the metadata quorum (the controllers' "
                               "Raft log and the brokers following it)")
    add_client_options(tool, tabular=False)
    tool.add_argument("--bootstrap-controller", metavar="HOST:PORT",
                      help="Kafka 3.7+'s direct connection to the controllers (not supported "
                           "by Odradek's controllers; use --bootstrap-server)")
    tools = tool.add_subparsers(dest="tool", required=True)
    describing = tools.add_parser("describe", help="the quorum's status or its replication")
    describing.add_argument("--status", action="store_true",
                            help="a short summary of the quorum's status")
    describing.add_argument("--replication", action="store_true",
                            help="each voter's and observer's replication of the log")
    describing.add_argument("--human-readable", action="store_true",
                            help="with --replication: timestamps as ages (\"5 ms ago\")")
    describing.add_argument("--json", action="store_true", help="print JSON")
    describing.set_defaults(run=runs("quorum", describe))

