from kio.schema.errors import ErrorCode

from odradek.metadata.records import PartitionChangeRecord
from tests.unit.controller_harness import Cluster, alter


def reassigned(targets: dict[tuple[str, int], tuple[int, ...] | None], cluster: Cluster
               ) -> dict[tuple[str, int], ErrorCode]:
    records, outcomes = cluster.controller.alter_partition_reassignments(targets)
    cluster.commit(records)
    return {key: ErrorCode.none if error is None else error.error_code
            for key, error in outcomes.items()}


def started() -> tuple[Cluster, str]:
    cluster = Cluster()
    cluster.start(1, 2, 3, 4)
    topic = cluster.create("t", 1, 2, {0: [1, 2]})
    assert reassigned({("t", 0): (3, 4)}, cluster) == {("t", 0): ErrorCode.none}
    return cluster, topic


def test_a_reassignment_adds_the_targets_and_waits_for_them_to_join_the_isr() -> None:
    cluster, topic = started()
    p = cluster.partition(topic)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((3, 4, 1, 2), (3, 4), (1, 2))
    assert (p.leader, p.isr) == (1, (1, 2))
    cluster.commit(alter(cluster, topic, (1, 2, 3)))
    assert cluster.partition(topic).adding_replicas == (3, 4), "4 is not in sync yet"


def test_it_completes_when_every_target_is_in_sync_and_the_leader_moves_into_it() -> None:
    cluster, topic = started()
    cluster.commit(alter(cluster, topic, (1, 2, 3)))
    before = cluster.partition(topic)
    records = alter(cluster, topic, (1, 2, 3, 4))
    assert records == [PartitionChangeRecord(topic, 0, leader=3, isr=(3, 4), replicas=(3, 4),
                                             adding_replicas=(), removing_replicas=())]
    cluster.commit(records)
    after = cluster.partition(topic)
    assert (after.replicas, after.isr, after.leader) == ((3, 4), (3, 4), 3)
    assert after.leader_epoch == before.leader_epoch + 1


def test_a_target_already_in_sync_completes_at_once() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    topic = cluster.create("t", 1, 3, {0: [1, 2, 3]})
    assert reassigned({("t", 0): (2, 3)}, cluster) == {("t", 0): ErrorCode.none}
    after = cluster.partition(topic)
    assert (after.replicas, after.isr, after.leader, after.adding_replicas) == (
        (2, 3), (2, 3), 2, ())


def test_cancelling_goes_back_to_the_original_replicas() -> None:
    cluster, topic = started()
    cluster.commit(alter(cluster, topic, (1, 2, 3)))
    assert reassigned({("t", 0): None}, cluster) == {("t", 0): ErrorCode.none}
    after = cluster.partition(topic)
    assert (after.replicas, after.isr, after.adding_replicas, after.removing_replicas) == (
        (1, 2), (1, 2), (), ())
    assert reassigned({("t", 0): None}, cluster) == {
        ("t", 0): ErrorCode.no_reassignment_in_progress}


def test_bad_targets_are_refused_one_partition_at_a_time() -> None:
    cluster, _ = started()
    cluster.create("u", 1, 1, {0: [1]})
    outcome = reassigned({("u", 0): (1, 1), ("u", 1): (2,), ("nope", 0): (2,),
                          ("t", 0): (9,)}, cluster)
    assert outcome == {
        ("u", 0): ErrorCode.invalid_replica_assignment,
        ("u", 1): ErrorCode.unknown_topic_or_partition,
        ("nope", 0): ErrorCode.unknown_topic_or_partition,
        ("t", 0): ErrorCode.invalid_replica_assignment,
    }


def test_a_new_target_during_a_reassignment_starts_from_the_original_replicas() -> None:
    cluster, topic = started()
    assert reassigned({("t", 0): (2, 4)}, cluster) == {("t", 0): ErrorCode.none}
    p = cluster.partition(topic)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((2, 4, 1), (4,), (1,))
