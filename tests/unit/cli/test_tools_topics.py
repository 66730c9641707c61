"""`odradek topics`' pure parts: kafka-topics' argument parsing and checks, its topic filter,
and describe's report filters and output."""

from __future__ import annotations

import argparse

import pytest

from odradek.cli.main import build_parser
from odradek.cli.tools.common import ToolError
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


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["topics", *argv])


def test_replica_assignment_lists_each_partitions_brokers() -> None:
    assert parse_replica_assignment("0:1, 1 : 2,2:0") == [[0, 1], [1, 2], [2, 0]]
    assert parse_replica_assignment("3") == [[3]]
    assert parse_replica_assignment("") == parse_replica_assignment(None) == []


@pytest.mark.parametrize(("text", "message"), [
    ("1:1", "duplicate entries: 1"),
    ("1:2,3", "Partition 1 has different replication factor: [3]"),
    ("1:x", "expected broker ids"),
    ("1,,2", "expected broker ids"),
])
def test_bad_replica_assignments_are_refused(text: str, message: str) -> None:
    with pytest.raises(ToolError, match=message.replace("[", r"\[")):
        parse_replica_assignment(text)


def test_topic_configs_are_name_value_pairs() -> None:
    assert parse_topic_configs(["retention.ms = 10", "cleanup.policy=compact"]) == {
        "retention.ms": "10", "cleanup.policy": "compact"}
    for bad in ("retention.ms", "a=b=c"):
        with pytest.raises(ToolError, match="key=val"):
            parse_topic_configs([bad])


NAMES = ["orders", "orders.eu", "ordersX", "payments", "__consumer_offsets",
         "__transaction_state"]


@pytest.mark.parametrize(("regex", "exclude_internal", "expected"), [
    (None, False, sorted(NAMES)),
    (None, True, ["orders", "orders.eu", "ordersX", "payments"]),
    ("orders", False, ["orders"]),  # the whole name must match
    ("orders.*", False, ["orders", "orders.eu", "ordersX"]),
    (r"orders\.eu", False, ["orders.eu"]),
    ("orders, payments", False, ["orders", "payments"]),  # commas are alternatives
    ("'orders'", False, ["orders"]),  # quotes from properties files are dropped
    ("__.*", True, []),
])
def test_topic_selection_follows_kafka_topics(regex: str | None, exclude_internal: bool,
                                             expected: list[str]) -> None:
    assert select_topics(NAMES, regex, exclude_internal) == expected


def test_an_invalid_regex_is_one_message() -> None:
    with pytest.raises(ToolError, match=r"orders\[ is an invalid regex."):
        select_topics(NAMES, "orders[", False)


@pytest.mark.parametrize(("argv", "message"), [
    (["create", "--topic", "t", "--replica-assignment", "1:2", "--partitions", "2"],
     "--replica-assignment cannot be used"),
    (["create", "--topic", "t", "--replication-factor", "0"], "between 1 and 32767"),
    (["create", "--topic", "t", "--partitions", "0"], "greater than 0"),
    (["alter", "--topic", "t", "--partitions", "-1"], "greater than 0"),
    (["describe", "--topics-with-overrides", "--unavailable-partitions"], "cannot be combined"),
])
def test_flag_combinations_kafka_topics_refuses(argv: list[str], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        check_arguments(args(*argv))


def test_flag_combinations_kafka_topics_accepts() -> None:
    check_arguments(args("create", "--topic", "t", "--replica-assignment", "1:2"))
    check_arguments(args("describe", "--under-replicated-partitions", "--at-min-isr-partitions"))


LIVE = frozenset({1, 2})  # broker 3 is down
HEALTHY = PartitionState(0, 1, (1, 2, 3), (1, 2, 3))
SHRUNK = PartitionState(1, 2, (3, 1, 2), (1, 2))  # under-replicated, at min ISR 2
ALONE = PartitionState(2, 1, (1, 3, 2), (1,))  # under-replicated, under min ISR
LEADERLESS = PartitionState(3, None, (3, 1, 2), (3,))
STALE_LEADER = PartitionState(4, 3, (3, 1, 2), (3, 1, 2))  # leader not live yet in metadata
TOPIC = TopicState("orders", "AAAAAAAAAAAAAAAAAAAAAQ",
                   (STALE_LEADER, HEALTHY, SHRUNK, ALONE, LEADERLESS),
                   {"min.insync.replicas": "2", "retention.ms": "1000"}, min_isr=2)
PLAIN = TopicState("plain", None, (PartitionState(0, 1, (1,), (1,)),), {}, min_isr=1)


def partitions_shown(**flags: bool) -> list[int]:
    lines = describe_lines([TOPIC], Filters(**flags, live_brokers=LIVE))
    return [int(line.split("Partition: ")[1].split("\t")[0]) for line in lines
            if "Partition: " in line]


def test_report_filters_have_kafka_topics_semantics() -> None:
    assert partitions_shown(under_replicated=True) == [1, 2, 3]
    assert partitions_shown(under_min_isr=True) == [2, 3]
    assert partitions_shown(at_min_isr=True) == [1]
    assert partitions_shown(unavailable=True) == [3, 4]
    assert partitions_shown(at_min_isr=True, unavailable=True) == [1, 3, 4]
    assert partitions_shown() == [0, 1, 2, 3, 4]


def test_describe_prints_kafka_topics_lines() -> None:
    assert describe_lines([TOPIC, PLAIN], Filters(live_brokers=LIVE)) == [
        "Topic: orders\tTopicId: AAAAAAAAAAAAAAAAAAAAAQ\tPartitionCount: 5\t"
        "ReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=1000",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tOffline: 3",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 3,1,2\tIsr: 1,2\tOffline: 3",
        "\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 1,3,2\tIsr: 1\tOffline: 3",
        "\tTopic: orders\tPartition: 3\tLeader: none\tReplicas: 3,1,2\tIsr: 3\tOffline: 3",
        "\tTopic: orders\tPartition: 4\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\tOffline: 3",
        "Topic: plain\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        "\tTopic: plain\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1",
    ]


def test_topics_with_overrides_prints_only_their_summaries() -> None:
    lines = describe_lines([TOPIC, PLAIN], Filters(with_overrides=True, live_brokers=LIVE))
    assert [line.split("\t")[0] for line in lines] == ["Topic: orders"]
    assert describe_json([TOPIC, PLAIN], Filters(with_overrides=True)) == [{
        "topic": "orders", "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition_count": 5,
        "replication_factor": 3,
        "configs": {"min.insync.replicas": "2", "retention.ms": "1000"}}]


def test_json_holds_the_partitions_a_report_prints() -> None:
    report = describe_json([TOPIC, PLAIN], Filters(under_min_isr=True, live_brokers=LIVE))
    assert [t["topic"] for t in report] == ["orders"]  # plain has no such partition
    assert report[0]["partitions"] == [
        {"partition": 2, "leader": 1, "replicas": [1, 3, 2], "isr": [1], "offline": [3]},
        {"partition": 3, "leader": None, "replicas": [3, 1, 2], "isr": [3], "offline": [3]},
    ]
