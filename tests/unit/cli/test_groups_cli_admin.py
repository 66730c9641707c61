"""`odradek groups`: confluent-kafka AdminClient results as plain data."""

from __future__ import annotations

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, Node, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription

from odradek.cli.groups.admin import state_name, to_group_info
from odradek.cli.groups.model import GroupInfo, Member, Partition

T0, T1 = Partition("orders", 0), Partition("orders", 1)


def test_group_info_from_a_confluent_description() -> None:
    description = ConsumerGroupDescription(
        "g", False,
        [MemberDescription("m1", "client-1", "/127.0.0.1",
                           MemberAssignment([TopicPartition("orders", 1),
                                             TopicPartition("orders", 0)]),
                           group_instance_id="static-1",
                           target_assignment=MemberAssignment([TopicPartition("orders", 2)]))],
        "uniform", ConsumerGroupState.STABLE, Node(1, "localhost", 9092),
        type=ConsumerGroupType.CONSUMER)
    assert to_group_info(description) == GroupInfo(
        "g", "Stable", "Consumer", "localhost:9092 (1)", "uniform",
        (Member("m1", "static-1", "client-1", "/127.0.0.1", (T0, T1),
                (Partition("orders", 2),)),))


@pytest.mark.parametrize(("state", "name"), [
    (ConsumerGroupState.PREPARING_REBALANCING, "PreparingRebalance"),
    (ConsumerGroupState.COMPLETING_REBALANCING, "CompletingRebalance"),
    (ConsumerGroupState.EMPTY, "Empty"),
    (ConsumerGroupState.DEAD, "Dead"),
    (ConsumerGroupState.UNKNOWN, "Unknown"),
    (None, "Unknown"),
])
def test_state_names_are_kafkas(state: ConsumerGroupState | None, name: str) -> None:
    assert state_name(state) == name

