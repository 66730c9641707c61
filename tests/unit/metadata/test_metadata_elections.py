from kio.schema.errors import ErrorCode

from odradek.metadata.controller import ElectionType
from odradek.metadata.records import NO_LEADER
from tests.unit.controller_harness import Cluster


def elect(cluster: Cluster, election: ElectionType,
          partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], ErrorCode]:
    records, outcomes = cluster.controller.elect_leaders(election, partitions)
    cluster.commit(records)
    return {k: ErrorCode.none if e is None else e.error_code for k, e in outcomes.items()}


def moved_leader() -> tuple[Cluster, str]:
    """t-0 on replicas (1, 2, 3) led by 2 after 1 was fenced and came back."""
    cluster = Cluster()
    cluster.start(1, 2, 3)
    topic = cluster.create("t", 2, 3, {0: [1, 2, 3], 1: [2, 3, 1]})
    cluster.heartbeat(1, want_fence=True)
    cluster.heartbeat(1)
    cluster.grow_isr(topic, 0, (2, 3, 1))
    assert cluster.partition(topic).leader == 2
    return cluster, topic


def test_a_preferred_election_gives_the_first_replica_its_leadership_back() -> None:
    cluster, topic = moved_leader()
    before = cluster.partition(topic)
    assert elect(cluster, ElectionType.PREFERRED, [("t", 0), ("t", 1), ("nope", 0)]) == {
        ("t", 0): ErrorCode.none,
        ("t", 1): ErrorCode.election_not_needed,
        ("nope", 0): ErrorCode.unknown_topic_or_partition,
    }
    after = cluster.partition(topic)
    assert (after.leader, after.leader_epoch) == (1, before.leader_epoch + 1)


def test_a_preferred_replica_outside_the_isr_cannot_lead() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2, {0: [1, 2]})
    cluster.heartbeat(1, want_fence=True)
    cluster.heartbeat(1)
    assert cluster.partition(topic).isr == (2,)
    assert elect(cluster, ElectionType.PREFERRED, [("t", 0)]) == {
        ("t", 0): ErrorCode.preferred_leader_not_available}


def test_all_partitions_report_only_the_elections_that_were_needed() -> None:
    cluster, _ = moved_leader()
    assert elect(cluster, ElectionType.PREFERRED, None) == {("t", 0): ErrorCode.none}


def test_an_unclean_election_revives_an_offline_partition_from_outside_the_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2, {0: [1, 2]})
    cluster.grow_isr(topic, 0, (1,))
    assert elect(cluster, ElectionType.UNCLEAN, [("t", 0)]) == {
        ("t", 0): ErrorCode.election_not_needed}
    cluster.heartbeat(1, want_fence=True)
    assert cluster.partition(topic).leader == NO_LEADER
    assert elect(cluster, ElectionType.UNCLEAN, [("t", 0)]) == {("t", 0): ErrorCode.none}
    assert (cluster.partition(topic).leader, cluster.partition(topic).isr) == (2, (2,))
    assert cluster.controller.unclean_elections == 1
    cluster.heartbeat(2, want_fence=True)
    assert elect(cluster, ElectionType.UNCLEAN, [("t", 0)]) == {
        ("t", 0): ErrorCode.eligible_leaders_not_available}


def test_leaders_are_rebalanced_only_past_the_imbalance_percentage() -> None:
    cluster, topic = moved_leader()
    # broker 1 is the preferred replica of t-0 only and does not lead it: 100% imbalance
    assert cluster.controller.balance_leaders(100) == []
    cluster.commit(cluster.controller.balance_leaders(10))
    assert cluster.partition(topic).leader == 1
    assert cluster.controller.balance_leaders(10) == []
