"""`odradek topics create|list|describe|alter|delete`, the counterpart of kafka-topics.sh:
the same flags, output and topic selection (`--topic` is a regular expression except with
create), spoken through confluent-kafka's AdminClient."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from odradek.cli.tools.admin_client import admin_client
from odradek.cli.tools.common import (
    ToolError,
    add_client_options,
    kafka_error,
    print_json,
    runs,
    wait,
)
from odradek.cli.tools.topic_args import (
    check_arguments,
    parse_replica_assignment,
    parse_topic_configs,
    select_topics,
)
from odradek.cli.tools.topic_report import (
    Filters,
    PartitionState,
    TopicState,
    describe_json,
    describe_lines,
)

MIN_ISR = "min.insync.replicas"
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or "
                     "underscore ('_') could collide. To avoid issues it is best to use either, "
                     "but not both.")


def add_topics_parser(commands: Any) -> None:
    """Adds `topics` and its five tools to the `odradek` subcommands."""
    tool = commands.add_parser("topics", help="create, list, describe, alter and delete topics")
    tools = tool.add_subparsers(dest="tool", required=True)
    client = argparse.ArgumentParser(add_help=False)
    add_client_options(client, tabular=False)
    tabular = argparse.ArgumentParser(add_help=False)
    add_client_options(tabular)

    create = tools.add_parser("create", parents=[client], help="create a topic")
    create.add_argument("--topic", required=True, help="the topic's name")
    create.add_argument("--partitions", type=int,
                        help="partition count (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=int,
                        help="replicas per partition (default: the broker's "
                             "default.replication.factor)")
    _add_replica_assignment(create)
    create.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                        help="a topic config override (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed quietly when the topic exists")
    create.set_defaults(run=_runs(create_topic))

    listing = tools.add_parser("list", parents=[tabular], help="topic names, one a line")
    _add_selection(listing, required=False)
    listing.add_argument("--exclude-internal", action="store_true",
                         help="leave out internal topics")
    listing.set_defaults(run=_runs(list_topics))

    describe = tools.add_parser("describe", parents=[tabular],
                                help="partitions, leaders, replicas, ISR and config overrides")
    _add_selection(describe, required=False)
    describe.add_argument("--exclude-internal", action="store_true",
                          help="leave out internal topics")
    describe.add_argument("--if-exists", action="store_true",
                          help="succeed quietly when no topic matches --topic")
    reports = describe.add_argument_group("reports (combinable; each narrows to partitions)")
    reports.add_argument("--under-replicated-partitions", action="store_true",
                         help="partitions whose ISR is smaller than their replicas")
    reports.add_argument("--under-min-isr-partitions", action="store_true",
                         help="partitions without a leader or whose ISR is smaller than "
                              "min.insync.replicas")
    reports.add_argument("--at-min-isr-partitions", action="store_true",
                         help="partitions whose ISR size equals min.insync.replicas")
    reports.add_argument("--unavailable-partitions", action="store_true",
                         help="partitions without a leader or whose leader is not live")
    describe.add_argument("--topics-with-overrides", action="store_true",
                          help="only the summary lines of topics with config overrides")
    describe.set_defaults(run=_runs(describe_topics))

    alter = tools.add_parser("alter", parents=[client],
                             help="add partitions to topics (configs: odradek configs)")
    _add_selection(alter, required=True)
    alter.add_argument("--partitions", type=int, required=True,
                       help="the new partition count")
    _add_replica_assignment(alter)
    alter.add_argument("--if-exists", action="store_true",
                       help="succeed quietly when no topic matches --topic")
    alter.set_defaults(run=_runs(alter_topics))

    delete = tools.add_parser("delete", parents=[client], help="delete topics")
    _add_selection(delete, required=True)
    delete.add_argument("--if-exists", action="store_true",
                        help="succeed quietly when no topic matches --topic")
    delete.set_defaults(run=_runs(delete_topics))


def _add_selection(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--topic", required=required, metavar="REGEX",
                        help="the topics whose whole name matches this regular expression "
                             "(commas separate alternatives; escape dots: 'my\\.topic')")


def _add_replica_assignment(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replica-assignment", metavar="B1:B2,B1:B2,...",
                        help="each partition's broker ids, the first one preferred leader, "
                             "partitions separated by commas")


def _runs(command: Callable[[Any, argparse.Namespace], None]
          ) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> None:
        check_arguments(args)
        try:
            command(admin_client(args), args)
        except ValueError as error:  # confluent-kafka's refusal of a request it cannot send
            raise ToolError(str(error)) from None

    return runs("topics", run)


def _topics(admin: Any, args: argparse.Namespace, required: bool) -> list[str]:
    """The topics `--topic` selects; none is an error when `required` (and no --if-exists)."""
    names = list(admin.list_topics(timeout=args.timeout).topics)
    topics = select_topics(names, args.topic, getattr(args, "exclude_internal", False))
    if required and args.topic and not topics and not getattr(args, "if_exists", False):
        raise ToolError(f"Topic '{args.topic}' does not exist as expected")
    return topics


def create_topic(admin: Any, args: argparse.Namespace) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    configs = parse_topic_configs(args.config)
    assignment = parse_replica_assignment(args.replica_assignment)
    if "." in args.topic or "_" in args.topic:
        print(COLLISION_WARNING)
    if assignment:
        topic = NewTopic(args.topic, num_partitions=len(assignment),
                         replica_assignment=assignment, config=configs)
    else:
        topic = NewTopic(args.topic, num_partitions=args.partitions or -1,
                         replication_factor=args.replication_factor or -1, config=configs)
    future = admin.create_topics([topic], request_timeout=args.timeout)[args.topic]
    try:
        wait(future, args)
    except KafkaException as error:
        cause = kafka_error(error)
        exists = cause is not None and cause.code() == KafkaError.TOPIC_ALREADY_EXISTS
        if exists and args.if_not_exists:
            return
        raise
    print(f"Created topic {args.topic}.")


def list_topics(admin: Any, args: argparse.Namespace) -> None:
    topics = _topics(admin, args, required=False)
    if args.json:
        print_json(topics)
    elif topics:
        print("\n".join(topics))


def describe_topics(admin: Any, args: argparse.Namespace) -> None:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import ConfigResource, ResourceType

    names = _topics(admin, args, required=True)
    filters = Filters(args.under_replicated_partitions, args.under_min_isr_partitions,
                      args.at_min_isr_partitions, args.unavailable_partitions,
                      args.topics_with_overrides)
    states = []
    if names:
        described = admin.describe_topics(TopicCollection(names), request_timeout=args.timeout)
        configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names],
                                         request_timeout=args.timeout)
        cluster = wait(admin.describe_cluster(request_timeout=args.timeout), args)
        filters = replace(filters, live_brokers=frozenset(n.id for n in cluster.nodes))
        config_of = {resource.name: future for resource, future in configs.items()}
        states = [topic_state(wait(described[n], args), wait(config_of[n], args)) for n in names]
    if args.json:
        print_json(describe_json(states, filters))
    else:
        for line in describe_lines(states, filters):
            print(line)


def topic_state(description: Any, configs: dict[str, Any]) -> TopicState:
    """A confluent-kafka TopicDescription and the topic's ConfigEntries as a TopicState."""
    min_isr = configs.get(MIN_ISR)
    return TopicState(
        name=description.name,
        topic_id=str(description.topic_id) if description.topic_id else None,
        partitions=tuple(
            PartitionState(p.id, p.leader.id if p.leader is not None else None,
                           tuple(n.id for n in p.replicas), tuple(n.id for n in p.isr))
            for p in description.partitions),
        overrides={name: entry.value for name, entry in configs.items() if not entry.is_default},
        min_isr=int(min_isr.value) if min_isr is not None and min_isr.value else 1,
    )


def alter_topics(admin: Any, args: argparse.Namespace) -> None:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import NewPartitions

    topics = _topics(admin, args, required=True)
    if not topics:
        return
    assignment = parse_replica_assignment(args.replica_assignment)
    current = {}
    if assignment:
        described = admin.describe_topics(TopicCollection(topics), request_timeout=args.timeout)
        current = {n: len(wait(f, args).partitions) for n, f in described.items()}
    requests = [NewPartitions(n, args.partitions, assignment[current[n]:]) if assignment
                else NewPartitions(n, args.partitions) for n in topics]
    for future in admin.create_partitions(requests, request_timeout=args.timeout).values():
        wait(future, args)


def delete_topics(admin: Any, args: argparse.Namespace) -> None:
    topics = _topics(admin, args, required=True)
    if not topics:
        return
    for future in admin.delete_topics(topics, request_timeout=args.timeout).values():
        wait(future, args)
