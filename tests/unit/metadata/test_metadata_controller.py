"""The active controller's logic: broker registration, heartbeats, sessions and fencing with
their leader and ISR changes, AlterPartition, producer-id blocks, and topic admin over the
unfenced brokers. Handlers return records; only committed records (replayed) change state."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.metadata.controller import (
    PRODUCER_ID_BLOCK_SIZE,
    HeartbeatResult,
    QuorumController,
)
from odradek.metadata.errors import MetadataError
from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import (
    NO_LEADER,
    FenceBrokerRecord,
    PartitionChangeRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    decode_batch,
    encode_batch,
)
from tests.unit.controller_harness import TIMEOUT, Cluster, alter, image, plaintext_at


def refused(code: ErrorCode) -> Any:
    return pytest.raises(MetadataError, check=lambda error: error.error_code is code)


# --- registration ---------------------------------------------------------------------------


def test_a_new_registration_is_fenced_and_remembers_its_offset() -> None:
    cluster = Cluster()
    records, epoch = cluster.controller.register_broker(1, "inc", plaintext_at("h", 9092), "r1", 0)
    assert records == [RegisterBrokerRecord(1, "inc", epoch, plaintext_at("h", 9092), "r1",
                                            fenced=True)]
    assert cluster.metadata.brokers == {}
    cluster.commit(records)
    assert cluster.metadata.brokers[1].fenced and cluster.metadata.brokers[1].epoch == epoch
    assert cluster.controller.registration_offset(1) == cluster.offset
    assert cluster.controller.fenced_broker_count() == 1


def test_broker_epochs_increase_across_the_cluster() -> None:
    cluster = Cluster()
    epochs = [cluster.register(1), cluster.register(2), cluster.register(3)]
    cluster.tick(TIMEOUT + 1)
    epochs.append(cluster.register(1, TIMEOUT + 1, incarnation="again"))
    epochs.append(cluster.register(2, TIMEOUT + 1, incarnation="again"))
    assert epochs == sorted(set(epochs))


def test_broker_epochs_keep_increasing_after_a_snapshot_forgot_a_broker() -> None:
    cluster = Cluster()
    cluster.register(1)
    last = cluster.register(2)
    cluster.commit([UnregisterBrokerRecord(2, last)])
    restored = QuorumController()
    restored.replay(cluster.metadata.to_records(), cluster.offset)
    restored.become_active(0)
    _, epoch = restored.register_broker(3, "inc", plaintext_at("h", 1), None, 0)
    assert epoch > last


def test_the_same_incarnation_registering_again_keeps_its_epoch() -> None:
    cluster = Cluster()
    cluster.start(1)
    epoch = cluster.epochs[1]
    assert cluster.controller.register_broker(1, "incarnation-1",
                                              plaintext_at("localhost", 9091), None,
                                              5) == ([], epoch)
    records, again = cluster.controller.register_broker(1, "incarnation-1",
                                                        plaintext_at("moved", 9999), "r", 5)
    assert again == epoch
    assert records == [RegisterBrokerRecord(1, "incarnation-1", epoch,
                                            plaintext_at("moved", 9999), "r", fenced=False)]


def test_another_incarnation_is_refused_while_the_registered_one_is_alive() -> None:
    cluster = Cluster()
    cluster.start(1)
    with refused(ErrorCode.duplicate_broker_registration):
        cluster.controller.register_broker(1, "impostor", plaintext_at("h", 1), None, TIMEOUT)


def test_after_a_controller_failover_a_restarted_broker_registers_at_once() -> None:
    """The new controller assumed a session it never heard: a broker that crashed and came
    back under a new incarnation is not kept waiting for that assumed session to expire."""
    cluster = Cluster()
    cluster.start(1)
    cluster.controller.become_active(TIMEOUT)
    assert cluster.register(1, TIMEOUT + 1, incarnation="after-a-crash") > 0
    cluster.heartbeat(1, TIMEOUT + 2)
    with refused(ErrorCode.duplicate_broker_registration):
        cluster.controller.register_broker(1, "impostor", plaintext_at("h", 1), None, TIMEOUT + 3)


def test_another_incarnation_replaces_a_fenced_registration() -> None:
    cluster = Cluster()
    first = cluster.register(1)
    assert cluster.register(1, 1, incarnation="restarted") > first
    assert cluster.metadata.brokers[1].incarnation_id == "restarted"


def test_a_new_incarnation_of_an_expired_leader_takes_over_with_its_leaderships_moved() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2)
    assert cluster.partition(topic).leader == 1
    cluster.grow_isr(topic, 0, (1, 2))
    records, _ = cluster.controller.register_broker(1, "restarted", plaintext_at("h", 1), None,
                                                    TIMEOUT + 1)
    assert PartitionChangeRecord(topic, 0, leader=2, isr=(2,)) in records
    cluster.commit(records)
    assert cluster.metadata.brokers[1].fenced
    assert (cluster.partition(topic).leader, cluster.partition(topic).isr) == (2, (2,))


def test_a_negative_broker_id_is_refused() -> None:
    with refused(ErrorCode.invalid_request):
        QuorumController().register_broker(-1, "inc", plaintext_at("h", 1), None, 0)


# --- heartbeats ------------------------------------------------------------------------------


def test_heartbeats_from_unknown_brokers_and_stale_epochs() -> None:
    cluster = Cluster()
    with refused(ErrorCode.broker_id_not_registered):
        cluster.controller.broker_heartbeat(1, 1, 0, False, False, 0)
    epoch = cluster.register(1)
    with refused(ErrorCode.stale_broker_epoch):
        cluster.controller.broker_heartbeat(1, epoch - 1, 0, False, False, 0)


def test_a_broker_is_unfenced_once_caught_up_with_its_registration() -> None:
    cluster = Cluster()
    epoch = cluster.register(1)
    registered_at = cluster.offset
    behind = cluster.heartbeat(1, offset=registered_at - 1)
    assert behind == HeartbeatResult(is_caught_up=False, is_fenced=True, should_shutdown=False)
    records, result = cluster.controller.broker_heartbeat(1, epoch, registered_at, False,
                                                          False, 0)
    assert records == [UnfenceBrokerRecord(1, epoch)]
    assert result == HeartbeatResult(is_caught_up=True, is_fenced=False, should_shutdown=False)
    cluster.commit(records)
    assert cluster.metadata.unfenced_brokers()[0].broker_id == 1
    assert cluster.heartbeat(1) == result
    assert cluster.controller.fenced_broker_count() == 0


def test_a_broker_that_wants_to_stay_fenced_stays_fenced() -> None:
    cluster = Cluster()
    cluster.register(1)
    assert cluster.heartbeat(1, want_fence=True).is_fenced
    assert cluster.metadata.brokers[1].fenced


def test_want_fence_fences_an_unfenced_broker() -> None:
    cluster = Cluster()
    cluster.start(1)
    epoch = cluster.epochs[1]
    records, result = cluster.controller.broker_heartbeat(1, epoch, cluster.offset, True,
                                                          False, 0)
    assert records == [FenceBrokerRecord(1, epoch)]
    assert result.is_fenced and not result.should_shutdown


def on_three_brokers(cluster: Cluster) -> str:
    """Brokers 1, 2 and 3 unfenced, and a topic whose one partition all three hold in sync,
    led by broker 1."""
    cluster.start(1, 2, 3)
    topic = cluster.create("t", 1, 3, {0: [1, 2, 3]})
    cluster.grow_isr(topic, 0, (1, 2, 3))
    return topic


def test_controlled_shutdown_moves_leaderships_then_lets_the_broker_go() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    shared = cluster.create("shared", 1, 2)
    alone = cluster.create("alone", 1, 1, {0: [1]})
    cluster.grow_isr(shared, 0, (1, 2))
    assert cluster.partition(shared).leader == 1
    # first the leaderships move, and the broker stays unfenced: Metadata still lists it
    result = cluster.heartbeat(1, want_shutdown=True)
    assert result == HeartbeatResult(is_caught_up=True, is_fenced=False, should_shutdown=False)
    assert not cluster.metadata.brokers[1].fenced
    assert (cluster.partition(shared).leader, cluster.partition(shared).isr) == (2, (2,))
    assert (cluster.partition(alone).leader, cluster.partition(alone).isr) == (NO_LEADER, (1,))
    assert cluster.controller.offline_partition_count() == 1
    # it is let go once broker 2 has reported the offset of those moves
    moved = cluster.offset
    assert cluster.heartbeat(1, want_shutdown=True).should_shutdown is False
    cluster.heartbeat(2, offset=moved - 1)
    assert cluster.heartbeat(1, want_shutdown=True).should_shutdown is False
    cluster.heartbeat(2, offset=moved)
    result = cluster.heartbeat(1, want_shutdown=True)
    assert result == HeartbeatResult(is_caught_up=True, is_fenced=True, should_shutdown=True)
    assert cluster.metadata.brokers[1].fenced
    assert cluster.controller.broker_heartbeat(1, cluster.epochs[1], cluster.offset, False,
                                               True, 0) == ([], result)


def test_a_lone_broker_is_let_go_on_its_second_shutdown_heartbeat() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.create("t", 1, 1)
    assert not cluster.heartbeat(1, want_shutdown=True).should_shutdown
    assert cluster.heartbeat(1, want_shutdown=True) == HeartbeatResult(
        is_caught_up=True, is_fenced=True, should_shutdown=True)


def test_a_broker_in_controlled_shutdown_is_neither_elected_nor_taken_back_into_an_isr() -> None:
    cluster = Cluster()
    topic = on_three_brokers(cluster)
    cluster.heartbeat(2, want_shutdown=True)
    assert cluster.partition(topic).isr == (1, 3)
    cluster.heartbeat(1, want_fence=True)
    assert cluster.partition(topic).leader == 3, "the next active ISR member, not broker 2"
    p = cluster.partition(topic)
    with pytest.raises(MetadataError) as refused:
        cluster.controller.alter_partition(3, cluster.epochs[3], topic, 0, p.leader_epoch,
                                           p.partition_epoch, (3, 2))
    assert refused.value.error_code == ErrorCode.ineligible_replica
    # a new incarnation of broker 2 is eligible again
    cluster.register(2, incarnation="again")
    cluster.heartbeat(2)
    cluster.grow_isr(topic, 0, (3, 2))
    assert cluster.partition(topic).isr == (3, 2)


def test_new_partitions_are_not_placed_on_a_broker_in_controlled_shutdown() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    cluster.heartbeat(2, want_shutdown=True)
    topic = cluster.create("fresh", 6, 2)
    cluster.commit(cluster.controller.create_partitions("fresh", 9))
    placed = [cluster.partition(topic, i) for i in range(9)]
    assert all(2 not in p.replicas for p in placed), [p.replicas for p in placed]


def test_a_heartbeat_renews_the_session() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    cluster.heartbeat(1, now=5000)
    assert cluster.tick(TIMEOUT) == []
    assert cluster.tick(TIMEOUT + 1) == [FenceBrokerRecord(2, cluster.epochs[2])]
    assert cluster.tick(5000 + TIMEOUT + 1) == [FenceBrokerRecord(1, cluster.epochs[1])]
    assert cluster.tick(10 * TIMEOUT) == [], "fenced brokers are not fenced again"


# --- fencing and leadership ------------------------------------------------------------------


def test_fencing_a_leader_elects_the_next_unfenced_isr_member_in_replica_order() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    topic = cluster.create("t", 1, 3, {0: [1, 3, 2]})
    cluster.grow_isr(topic, 0, (1, 2, 3))
    before = cluster.partition(topic)
    cluster.heartbeat(1, want_fence=True)
    after = cluster.partition(topic)
    assert (after.leader, after.isr) == (3, (2, 3))
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.partition_epoch == before.partition_epoch + 1


def test_fencing_a_follower_only_shrinks_the_isr() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2, {0: [1, 2]})
    cluster.grow_isr(topic, 0, (1, 2))
    before = cluster.partition(topic)
    records, _ = cluster.controller.broker_heartbeat(2, cluster.epochs[2], cluster.offset,
                                                     True, False, 0)
    assert PartitionChangeRecord(topic, 0, isr=(1,)) in records
    cluster.commit(records)
    after = cluster.partition(topic)
    assert (after.leader, after.isr, after.leader_epoch) == (1, (1,), before.leader_epoch)


def test_the_last_isr_member_stays_and_the_partition_goes_offline_until_it_returns() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 2, 1, {0: [1], 1: [2]})
    cluster.tick(1)
    cluster.heartbeat(2, now=TIMEOUT)
    assert cluster.tick(TIMEOUT + 1) == [FenceBrokerRecord(1, cluster.epochs[1]),
                                         PartitionChangeRecord(topic, 0, leader=NO_LEADER)]
    assert cluster.partition(topic).isr == (1,)
    assert cluster.controller.offline_partition_count() == 1
    result = cluster.heartbeat(1, now=TIMEOUT + 2)
    assert not result.is_fenced
    assert cluster.partition(topic).leader == 1
    assert cluster.partition(topic).leader_epoch == 2
    assert cluster.controller.offline_partition_count() == 0


def test_brokers_expiring_together_make_one_change_per_partition() -> None:
    cluster = Cluster()
    topic = on_three_brokers(cluster)
    cluster.heartbeat(3, now=TIMEOUT)
    records = cluster.tick(TIMEOUT + 1)
    changes = [r for r in records if isinstance(r, PartitionChangeRecord)]
    assert changes == [PartitionChangeRecord(topic, 0, leader=3, isr=(3,))]
    assert cluster.tick(2 * TIMEOUT + 1) == [FenceBrokerRecord(3, cluster.epochs[3]),
                                             PartitionChangeRecord(topic, 0, leader=NO_LEADER)]
    assert cluster.partition(topic).isr == (3,)


def test_a_new_active_controller_gives_every_broker_a_fresh_session() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    follower = QuorumController(session_timeout_ms=TIMEOUT)
    follower.replay(cluster.metadata.to_records(), cluster.offset)
    follower.become_active(50_000)
    assert follower.tick(50_000 + TIMEOUT) == []
    fenced = follower.tick(50_000 + TIMEOUT + 1)
    assert fenced == [FenceBrokerRecord(1, cluster.epochs[1]),
                      FenceBrokerRecord(2, cluster.epochs[2])]


# --- AlterPartition --------------------------------------------------------------------------


@pytest.fixture
def grown() -> tuple[Cluster, str]:
    cluster = Cluster()
    cluster.start(1, 2, 3, 4)
    topic = cluster.create("t", 1, 3, {0: [1, 2, 3]})
    return cluster, topic


def test_alter_partition_grows_and_shrinks_the_isr(grown: tuple[Cluster, str]) -> None:
    cluster, topic = grown
    assert alter(cluster, topic, (1, 2)) == [PartitionChangeRecord(topic, 0, isr=(1, 2))]
    cluster.commit(alter(cluster, topic, (1, 2)))
    after = cluster.partition(topic)
    assert (after.isr, after.leader_epoch, after.partition_epoch) == ((1, 2), 0, 1)
    assert alter(cluster, topic, (1, 2)) == [], "already the ISR"
    cluster.commit(alter(cluster, topic, (1, 2, 3)))
    assert cluster.partition(topic).isr == (1, 2, 3)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"epoch": 999}, ErrorCode.stale_broker_epoch),
        ({"broker": 9, "epoch": 1}, ErrorCode.stale_broker_epoch),
        ({"index": 1}, ErrorCode.unknown_topic_or_partition),
        ({"leader_epoch": 1}, ErrorCode.not_controller),
        ({"partition_epoch": 1}, ErrorCode.not_controller),
        ({"broker": 2}, ErrorCode.not_leader_or_follower),
        ({"isr": (1, 1)}, ErrorCode.invalid_request),
        ({"isr": ()}, ErrorCode.invalid_request),
        ({"isr": (2, 3)}, ErrorCode.invalid_request),
        ({"isr": (1, 4)}, ErrorCode.invalid_request),
    ],
)
def test_alter_partition_refusals(grown: tuple[Cluster, str], arguments: dict[str, Any],
                                  code: ErrorCode) -> None:
    cluster, topic = grown
    arguments = {"isr": (1, 2), **arguments}
    with refused(code):
        alter(cluster, topic, **arguments)


def test_alter_partition_of_an_unknown_topic(grown: tuple[Cluster, str]) -> None:
    cluster, _ = grown
    with refused(ErrorCode.unknown_topic_id):
        cluster.controller.alter_partition(1, cluster.epochs[1], "nope", 0, 0, 0, (1,))


def test_alter_partition_with_stale_epochs(grown: tuple[Cluster, str]) -> None:
    cluster, topic = grown
    cluster.commit(alter(cluster, topic, (1, 2)))
    with refused(ErrorCode.invalid_update_version):
        alter(cluster, topic, (1, 2, 3), partition_epoch=0)
    cluster.heartbeat(1, want_fence=True)
    cluster.heartbeat(1)
    assert cluster.partition(topic).leader == 2
    with refused(ErrorCode.fenced_leader_epoch):
        alter(cluster, topic, (2,), broker=2, leader_epoch=0)


def test_alter_partition_refuses_fenced_replicas(grown: tuple[Cluster, str]) -> None:
    cluster, topic = grown
    cluster.heartbeat(3, want_fence=True)
    with refused(ErrorCode.ineligible_replica):
        alter(cluster, topic, (1, 3))


# --- producer ids ----------------------------------------------------------------------------


def test_producer_id_blocks_are_consecutive() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    blocks = []
    for broker in (1, 2, 1):
        records, first, count = cluster.controller.allocate_producer_ids(
            broker, cluster.epochs[broker])
        assert records == [ProducerIdsRecord(broker, cluster.epochs[broker], first + count)]
        cluster.commit(records)
        blocks.append((first, count))
    assert blocks == [(0, 1000), (1000, 1000), (2000, 1000)]
    assert PRODUCER_ID_BLOCK_SIZE == 1000


def test_producer_ids_need_the_current_broker_epoch() -> None:
    cluster = Cluster()
    cluster.start(1)
    with refused(ErrorCode.stale_broker_epoch):
        cluster.controller.allocate_producer_ids(1, cluster.epochs[1] + 1)
    with refused(ErrorCode.stale_broker_epoch):
        cluster.controller.allocate_producer_ids(2, 0)


def test_producer_ids_run_out_at_the_int64_limit() -> None:
    cluster = Cluster()
    cluster.start(1)
    cluster.commit([ProducerIdsRecord(1, cluster.epochs[1], 2**63 - 999)])
    with refused(ErrorCode.unknown_server_error):
        cluster.controller.allocate_producer_ids(1, cluster.epochs[1])


# --- topic admin -----------------------------------------------------------------------------


def test_topics_are_placed_over_unfenced_brokers_all_in_sync() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3, racks=["a", "b", "a"])
    cluster.register(4, rack="b")
    topic = cluster.create("t", 4, 2)
    partitions = [cluster.partition(topic, i) for i in range(4)]
    assert all(4 not in p.replicas for p in partitions)
    assert all(p.isr == p.replicas and p.leader == p.replicas[0] for p in partitions)
    assert all(len({cluster.metadata.racks()[b] for b in p.replicas}) == 2 for p in partitions)


def test_repeated_topic_creations_spread_leaders() -> None:
    cluster = Cluster()
    cluster.start(1, 2, 3)
    for n in range(9):
        cluster.create(f"t{n}", 1, 2)
    leaders = [cluster.partition(f"id-t{n}").leader for n in range(9)]
    assert sorted(leaders) == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_topic_admin_delegates_to_the_metadata() -> None:
    cluster = Cluster()
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2)
    cluster.commit(cluster.controller.create_partitions("t", 3))
    assert sorted(cluster.metadata.topic("t").partitions) == [0, 1, 2]
    cluster.commit(cluster.controller.create_partitions("t", 4, [[2, 1]]))
    assert cluster.partition(topic, 3).replicas == (2, 1)
    cluster.commit(cluster.controller.alter_topic_configs("t", {"retention.ms": "5"}))
    assert cluster.metadata.topic("t").configs == {"retention.ms": "5"}
    cluster.commit(cluster.controller.alter_broker_configs("1", {"log.retention.ms": "7"}))
    assert cluster.metadata.broker_configs == {"1": {"log.retention.ms": "7"}}
    cluster.commit(cluster.controller.delete_topic("t"))
    assert cluster.metadata.topics == {}
    with refused(ErrorCode.invalid_replication_factor):
        cluster.controller.create_topic("u", "id-u", 1, 3, {})


# --- random operation sequences ----------------------------------------------------------------

BROKER_IDS = st.integers(1, 4)
TOPICS = st.sampled_from("abc")
HEARTBEAT = st.tuples(st.just("heartbeat"), BROKER_IDS,
                      st.sampled_from([False, False, False, True]),
                      st.sampled_from([False, False, False, True]), st.booleans())
GROW = st.tuples(st.just("grow"), TOPICS, st.integers(0, 5), st.integers(0, 15))
OPERATIONS = st.one_of(
    st.tuples(st.just("register"), BROKER_IDS, st.booleans(), st.sampled_from([None, "a", "b"])),
    HEARTBEAT, HEARTBEAT, HEARTBEAT,
    st.tuples(st.just("time"), st.integers(0, TIMEOUT)),
    st.tuples(st.just("tick")),
    st.tuples(st.just("create"), TOPICS, st.integers(1, 4), st.integers(1, 3)),
    st.tuples(st.just("delete"), TOPICS),
    GROW, GROW,
    st.tuples(st.just("partitions"), TOPICS, st.integers(1, 6)),
    st.tuples(st.just("producer_ids"), BROKER_IDS),
    st.tuples(st.just("failover")),
)
PRELUDE = [
    *[("register", b, False, rack) for b, rack in ((1, "a"), (2, "b"), (3, "a"), (4, None))],
    *[("heartbeat", b, False, False, True) for b in (1, 2, 3, 4)],
    ("create", "a", 3, 3), ("grow", "a", 0, 7), ("grow", "a", 1, 3),
]


def check_invariants(metadata: ClusterMetadata,
                     epochs: dict[tuple[str, int], tuple[int, int]]) -> None:
    """Leaders are in the ISR and unfenced, or -1; ISRs are non-empty sets of replicas; a
    partition's leader and partition epochs never go back (a re-created topic starts over)."""
    present = {(p.topic_id, p.partition) for p in metadata.partitions()}
    for gone in set(epochs) - present:
        del epochs[gone]
    for p in metadata.partitions():
        assert p.isr and len(set(p.isr)) == len(p.isr) and set(p.isr) <= set(p.replicas)
        assert len(set(p.replicas)) == len(p.replicas)
        if p.leader != NO_LEADER:
            assert p.leader in p.isr
            assert all(not metadata.brokers[r].fenced for r in p.isr), \
                "an online partition's ISR holds only unfenced brokers"
        key = (p.topic_id, p.partition)
        leader_epoch, partition_epoch = epochs.get(key, (0, 0))
        assert p.leader_epoch >= leader_epoch and p.partition_epoch >= partition_epoch
        epochs[key] = (p.leader_epoch, p.partition_epoch)


def step(cluster: Cluster, operation: tuple[Any, ...], now: int, issued: list[int]) -> int:
    controller = cluster.controller
    kind, *args = operation
    if kind == "time":
        return now + args[0]
    if kind == "tick":
        cluster.handle(lambda: (controller.tick(now), None))
    elif kind == "failover":
        restored = QuorumController(session_timeout_ms=TIMEOUT)
        restored.replay(cluster.metadata.to_records(), cluster.offset)
        assert image(restored.metadata) == image(cluster.metadata)
        restored.become_active(now)
        cluster.controller = restored
    elif kind == "register":
        broker, new_incarnation, rack = args
        incarnation = f"{broker}-{now}" if new_incarnation else f"{broker}"
        epoch = cluster.handle(lambda: controller.register_broker(
            broker, incarnation, plaintext_at("h", 1), rack, now))
        if epoch not in issued:
            assert epoch > max(issued, default=0), "broker epochs only increase"
            issued.append(epoch)
        cluster.epochs[broker] = epoch
    elif kind == "heartbeat":
        broker, want_fence, want_shutdown, caught_up = args
        offset = cluster.offset if caught_up else 0
        cluster.handle(lambda: controller.broker_heartbeat(
            broker, cluster.epochs.get(broker, 0), offset, want_fence, want_shutdown, now))
    elif kind == "create":
        name, partitions, replication = args
        cluster.handle(lambda: (controller.create_topic(name, f"id-{name}-{now}", partitions,
                                                        replication, {}), None))
    elif kind == "delete":
        cluster.handle(lambda: (controller.delete_topic(args[0]), None))
    elif kind == "partitions":
        cluster.handle(lambda: (controller.create_partitions(args[0], args[1]), None))
    elif kind == "producer_ids":
        broker = args[0]
        cluster.handle(lambda: controller.allocate_producer_ids(
            broker, cluster.epochs.get(broker, 0))[:2])
    elif kind == "grow":
        name, index, members = args
        p = cluster.metadata.partition(cluster.metadata.topic(name).topic_id, index)
        isr = tuple(r for n, r in enumerate(p.replicas) if members >> n & 1 or r == p.leader)
        cluster.handle(lambda: (controller.alter_partition(
            p.leader, cluster.epochs.get(p.leader, 0), p.topic_id, index, p.leader_epoch,
            p.partition_epoch, isr), None))
    return now


@given(operations=st.lists(OPERATIONS, max_size=40))
@settings(max_examples=300, deadline=None)
def test_random_operations_keep_the_invariants(operations: list[tuple[Any, ...]]) -> None:
    cluster = Cluster()
    now = 0
    issued: list[int] = []
    epochs: dict[tuple[str, int], tuple[int, int]] = {}
    for operation in PRELUDE + operations:
        with contextlib.suppress(MetadataError):
            now = step(cluster, operation, now, issued)
        check_invariants(cluster.metadata, epochs)
        assert cluster.controller.offline_partition_count() == sum(
            p.leader == NO_LEADER for p in cluster.metadata.partitions())
    rebuilt = ClusterMetadata()
    for record in decode_batch(encode_batch(cluster.metadata.to_records())):
        rebuilt.replay(record)
    assert image(rebuilt) == image(cluster.metadata)


# --- unclean leader election ----------------------------------------------------------------


def offline_with_a_lagging_replica(cluster: Cluster) -> str:
    """Replicas (1, 2), ISR (1,) after 2 fell behind; then 1 is fenced: offline."""
    cluster.start(1, 2)
    topic = cluster.create("t", 1, 2, {0: [1, 2]})
    cluster.grow_isr(topic, 0, (1,))
    cluster.heartbeat(2, want_fence=True)
    cluster.heartbeat(1, want_fence=True)
    assert (cluster.partition(topic).leader, cluster.partition(topic).isr) == (NO_LEADER, (1,))
    return topic


def test_without_unclean_election_a_replica_outside_the_isr_never_leads() -> None:
    cluster = Cluster()
    topic = offline_with_a_lagging_replica(cluster)
    cluster.heartbeat(2)
    assert cluster.partition(topic).leader == NO_LEADER
    assert cluster.controller.unclean_elections == 0


def test_a_topic_allowing_unclean_election_takes_any_unfenced_replica_and_counts_it() -> None:
    cluster = Cluster()
    topic = offline_with_a_lagging_replica(cluster)
    cluster.commit(cluster.controller.alter_topic_configs(
        "t", {"unclean.leader.election.enable": "true"}))
    cluster.heartbeat(2)
    after = cluster.partition(topic)
    assert (after.leader, after.isr) == (2, (2,))
    assert cluster.controller.unclean_elections == 1


def test_the_controller_default_applies_unless_the_topic_says_otherwise() -> None:
    cluster = Cluster()
    cluster.controller.unclean_leader_election = True
    cluster.start(1, 2)
    kept = cluster.create("kept", 1, 2, {0: [1, 2]})
    strict = cluster.create("strict", 1, 2, {0: [1, 2]})
    cluster.commit(cluster.controller.alter_topic_configs(
        "strict", {"unclean.leader.election.enable": "false"}))
    for topic in (kept, strict):
        cluster.grow_isr(topic, 0, (1,))
    cluster.heartbeat(1, want_fence=True)
    assert cluster.partition(kept).leader == 2
    assert cluster.partition(strict).leader == NO_LEADER
