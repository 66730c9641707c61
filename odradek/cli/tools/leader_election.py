"""`odradek leader-election`, the counterpart of kafka-leader-election.sh: preferred or unclean
leader elections for one partition, the partitions of a JSON file, or every partition."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from odradek.cli.tools.admin_client import admin_client
from odradek.cli.tools.common import (
    ToolError,
    add_client_options,
    describe_kafka_error,
    kafka_error,
    read_json_file,
    runs,
    wait,
)

ELECTION_TYPES = ("preferred", "unclean")


def add_leader_election_parser(commands: Any) -> None:
    tool = commands.add_parser("leader-election", help="elect partition leaders: the "
                               "preferred replicas, or any replica (unclean)")
    add_client_options(tool, tabular=False)
    tool.add_argument("--election-type", metavar="preferred|unclean",
                      help="preferred: move leadership to the preferred (first) replica; "
                           "unclean: elect an out-of-sync replica where there is no leader")
    tool.add_argument("--topic", help="the topic of the partition to elect a leader for")
    tool.add_argument("--partition", type=int, help="the partition (with --topic)")
    tool.add_argument("--all-topic-partitions", action="store_true",
                      help="every eligible partition of the cluster")
    tool.add_argument("--path-to-json-file", type=Path, metavar="FILE",
                      help='{"partitions": [{"topic": "foo", "partition": 1}]}')
    tool.set_defaults(run=runs("leader-election", elect))


def check_options(args: argparse.Namespace) -> None:
    """Kafka's rules: an election type, and exactly one way of naming the partitions."""
    if args.election_type is None:
        raise ToolError("Missing required option(s): election-type")
    if args.election_type.lower() not in ELECTION_TYPES:
        raise ToolError(f"--election-type must be one of {', '.join(ELECTION_TYPES)}, "
                        f"got {args.election_type!r}")
    chosen = [args.topic is not None, args.all_topic_partitions,
              args.path_to_json_file is not None]
    if sum(chosen) != 1:
        raise ToolError("One and only one of the following options is required: "
                        "topic, all-topic-partitions, path-to-json-file")
    if args.topic is not None and args.partition is None:
        raise ToolError("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise ToolError("Option partition is only allowed if topic is used")


def parse_election_partitions(data: Any) -> list[tuple[str, int]]:
    """The partitions of a --path-to-json-file: {"partitions": [{"topic", "partition"}]}."""
    if not isinstance(data, dict) or "partitions" not in data:
        raise ToolError("Replica election data is missing \"partitions\" field")
    entries = data["partitions"]
    if not isinstance(entries, list):
        raise ToolError("\"partitions\" must be a list")
    partitions = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not isinstance(partition, int) \
                or isinstance(partition, bool):
            raise ToolError(f"expected {{\"topic\": string, \"partition\": integer}}, "
                            f"got {entry!r}")
        partitions.append((topic, partition))
    duplicates = sorted(p for p, n in Counter(partitions).items() if n > 1)
    if duplicates:
        raise ToolError("Replica election data contains duplicate partitions: "
                        + ",".join(f"{t}-{p}" for t, p in duplicates))
    return partitions


def elect(args: argparse.Namespace) -> int:
    from confluent_kafka import ElectionType, KafkaError, TopicPartition

    check_options(args)
    kind = args.election_type.upper()
    if args.path_to_json_file is not None:
        chosen = parse_election_partitions(read_json_file(args.path_to_json_file))
    elif args.topic is not None:
        chosen = [(args.topic, args.partition)]
    else:
        chosen = None
    partitions = None if chosen is None else [TopicPartition(t, p) for t, p in chosen]
    client = admin_client(args)
    results = wait(client.elect_leaders(ElectionType[kind], partitions), args)
    outcomes = sorted(((tp.topic, tp.partition), failure) for tp, failure in results.items())
    succeeded = [f"{t}-{p}" for (t, p), failure in outcomes if failure is None]
    needless = [f"{t}-{p}" for (t, p), failure in outcomes if failure is not None
                and getattr(kafka_error(failure), "code", lambda: None)()
                == KafkaError.ELECTION_NOT_NEEDED]
    failed = [(f"{t}-{p}", failure) for (t, p), failure in outcomes if failure is not None
              and f"{t}-{p}" not in needless]
    if succeeded:
        print(f"Successfully completed leader election ({kind}) for partitions "
              + ", ".join(succeeded))
    if needless:
        print("Valid replica already elected for partitions " + ", ".join(needless))
    for partition, failure in failed:
        print(f"Error completing leader election ({kind}) for partition: {partition}: "
              f"{describe_kafka_error(failure)}")
    if failed:
        raise ToolError(f"{len(failed)} replica(s) could not be elected")
    return 0
