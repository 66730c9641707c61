"""Partition replication on a real 1-controller, 3-broker cluster, driven by real clients:
acks=all against the ISR and min.insync.replicas, the high watermark as the consumers' limit,
ISR shrink and expansion with their metrics, failover on kill -9 and controlled shutdown, and
group offsets surviving the loss of their coordinator."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ElectionType,
    KafkaError,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from odradek.net.kafka_client import BrokerConnection
from odradek.protocol.codec import build_request
from odradek.protocol.record_codec import decode_records
from odradek.protocol.records import iter_batches
from tests.integration.clients import create_topic, read_confluent, receive, unique
from tests.integration.cluster import (
    TIMEOUT,
    Cluster,
    admin,
    partitions,
    running_cluster,
    scrape,
)
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

LAG_TIME_MS = 1000
OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": str(LAG_TIME_MS),
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "leader.imbalance.check.interval.seconds": "2",
    "log.cleaner.backoff.ms": "200",
}
BROKERS = ("broker-1", "broker-2", "broker-3")
FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    try:
        with running_cluster(tmp_path_factory.mktemp("replication"), 1, 3, OVERRIDES) as cluster:
            yield cluster
    finally:
        if FIGURES:
            print("\nreplication figures:", ", ".join(f"{k}={v:.2f}" for k, v in FIGURES.items()))


@pytest.fixture
def patient_cluster(tmp_path: Any) -> Iterator[Cluster]:
    """Followers stay in the ISR for 20 s without fetching, and brokers in the cluster for
    25: room to look at a partition whose followers are frozen (8 s was not, on a busy
    machine)."""
    with running_cluster(tmp_path, 1, 3, {**OVERRIDES, "replica.lag.time.max.ms": "20000",
                                          "broker.session.timeout.ms": "25000",
                                          "auto.leader.rebalance.enable": "false"}) as cluster:
        yield cluster


@pytest.fixture
def all_brokers(cluster: Cluster) -> Iterator[Cluster]:
    """Every broker is back up and in every ISR after the test."""
    yield cluster
    for name in BROKERS:
        if not next(n for n in cluster.status() if n["name"] == name)["alive"]:
            cluster.start(name)
        cluster.resume(name)
    wait_until(lambda: len(admin(cluster.bootstrap).list_topics(timeout=5).brokers) == 3,
               what="all brokers registered again", ignoring=Exception)


def produce(bootstrap: str, topic: str, values: list[bytes], acks: str = "all",
            timeout_ms: int = 20000, retries: int = 2**31 - 1) -> list[Any]:
    """(error, message) delivery reports, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "retries": retries,
                         "message.timeout.ms": timeout_ms, "linger.ms": 1})
    reports: list[Any] = []
    for value in values:
        producer.produce(topic, value, partition=0,
                         on_delivery=lambda error, message: reports.append((error, message)))
    producer.flush(timeout_ms / 1000 + 10)
    return reports


def delivered(reports: list[Any]) -> list[Any]:
    errors = [error for error, _ in reports if error is not None]
    assert not errors, errors[:3]
    return [message for _, message in reports]


def reader(bootstrap: str, topic: str) -> Consumer:
    """A consumer of partition 0 from its start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    return consumer


def read_for(bootstrap: str, topic: str, seconds: float, at_most: int) -> list[Any]:
    """The records of partition 0 (up to `at_most`) a consumer receives in `seconds`: the
    window in which a record it must never see would arrive."""
    consumer = reader(bootstrap, topic)
    try:
        return [m for m in consumer.consume(at_most, seconds) if m.error() is None]
    finally:
        consumer.close()


def isr(cluster: Cluster, topic: str, partition: int = 0) -> set[int]:
    return set(partitions(cluster.bootstrap, topic)[partition].isrs)


def leader(cluster: Cluster, topic: str, partition: int = 0) -> int:
    return int(partitions(cluster.bootstrap, topic)[partition].leader)


def metrics(cluster: Cluster, broker_id: int) -> dict[str, float]:
    return scrape(cluster.node(f"broker-{broker_id}")["metrics_port"])


def test_acks_all_follows_the_isr_and_min_insync_replicas(all_brokers: Cluster) -> None:
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "acks-all", replication=3,
                         config={"min.insync.replicas": "3"})
    assert len(delivered(produce(cluster.bootstrap, topic, [b"a", b"b"]))) == 2
    owner = leader(cluster, topic)
    follower = next(b for b in (1, 2, 3) if b != owner)
    shrinks_before = metrics(cluster, owner)["kafka_server_replicamanager_isrshrinks_total"]

    cluster.stop(f"broker-{follower}", kill=True)
    lagging = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1"})

    def shrunk() -> bool:
        lagging.produce(topic, b"moves the log end", partition=0)
        lagging.flush(TIMEOUT)
        return follower not in isr(cluster, topic)

    wait_until(shrunk, what="the leader drops the follower that stopped fetching",
               ignoring=Exception)
    assert metrics(cluster, owner)["kafka_server_replicamanager_isrshrinks_total"] > \
        shrinks_before
    refused = produce(cluster.bootstrap, topic, [b"c"], retries=0)
    assert [error.code() for error, _ in refused] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert len(delivered(produce(cluster.bootstrap, topic, [b"d"], acks="1"))) == 1
    seen = metrics(cluster, owner)
    assert seen["kafka_server_replicamanager_underreplicatedpartitions"] >= 1
    assert seen["kafka_server_replicamanager_underminisrpartitioncount"] >= 1

    cluster.start(f"broker-{follower}")
    wait_until(lambda: isr(cluster, topic) == {1, 2, 3}, what="the follower rejoins the ISR",
               ignoring=Exception)
    assert len(delivered(produce(cluster.bootstrap, topic, [b"e"]))) == 1
    values = [r.value for r in read_confluent(cluster.bootstrap, topic)]
    assert [v for v in values if v != b"moves the log end"] == [b"a", b"b", b"d", b"e"]
    after = metrics(cluster, owner)
    assert after["kafka_server_replicamanager_isrexpands_total"] >= 1
    assert after["kafka_server_replicamanager_underminisrpartitioncount"] == 0


def test_consumers_see_nothing_the_isr_does_not_hold(patient_cluster: Cluster) -> None:
    """With both followers frozen an acks=1 write sits on the leader alone, above the high
    watermark: consumers neither read it nor see it in the latest offset until the ISR
    shrinks to the leader."""
    cluster = patient_cluster
    topic = create_topic(cluster.bootstrap, "high-watermark", replication=3,
                         config={"min.insync.replicas": "1"})
    delivered(produce(cluster.bootstrap, topic, [b"committed"]))
    owner = leader(cluster, topic)
    followers = [b for b in (1, 2, 3) if b != owner]
    for follower in followers:
        cluster.pause(f"broker-{follower}")
    try:
        (message,) = delivered(produce(cluster.bootstrap, topic, [b"leader-only"], acks="1"))
        assert message.offset() == 1
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "hw"})
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        assert (low, high) == (0, 1), "the high watermark stays below the leader-only write"
        assert [m.value() for m in read_for(cluster.bootstrap, topic, 1.0, 2)] == [
            b"committed"]
        assert isr(cluster, topic) == {1, 2, 3}, "the checks above ran before the ISR shrank"
        wait_until(lambda: isr(cluster, topic) == {owner}, 60,
                   what="the ISR shrinks to the leader", ignoring=Exception)
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)[1] == 2
        consumer.close()
    finally:
        for follower in followers:
            cluster.resume(f"broker-{follower}")


def test_a_killed_leader_loses_no_acknowledged_write_and_rejoins(all_brokers: Cluster) -> None:
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "failover", replication=3,
                         config={"min.insync.replicas": "2"})
    first = delivered(produce(cluster.bootstrap, topic, [b"%d" % i for i in range(500)]))
    owner = leader(cluster, topic)
    killed_at = time.monotonic()
    cluster.stop(f"broker-{owner}", kill=True)
    second = delivered(produce(cluster.bootstrap, topic, [b"after"]))
    FIGURES["leader_kill_to_first_acks_all_s"] = time.monotonic() - killed_at
    assert leader(cluster, topic) != owner
    assert second[0].offset() == 500
    cluster.start(f"broker-{owner}")
    wait_until(lambda: isr(cluster, topic) == {1, 2, 3}, what="the old leader rejoins the ISR",
               ignoring=Exception)
    values = [r.value for r in read_confluent(cluster.bootstrap, topic)]
    assert values == [m.value() for m in first] + [b"after"]


def test_controlled_shutdown_moves_leadership_before_the_broker_stops(
    all_brokers: Cluster,
) -> None:
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "handover", replication=3,
                         config={"min.insync.replicas": "2"})
    delivered(produce(cluster.bootstrap, topic, [b"before"]))
    owner = leader(cluster, topic)
    started = time.monotonic()
    cluster.stop(f"broker-{owner}")
    assert leader(cluster, topic) != owner, "leadership moved by the time the broker stopped"
    delivered(produce(cluster.bootstrap, topic, [b"after"]))
    FIGURES["controlled_shutdown_to_first_acks_all_s"] = time.monotonic() - started
    assert [r.value for r in read_confluent(cluster.bootstrap, topic)] == [b"before", b"after"]


def test_a_broker_in_controlled_shutdown_stays_listed_until_the_others_know_it_leads_nothing(
    all_brokers: Cluster,
) -> None:
    """Kafka's two steps: its leaderships move first, while Metadata still lists it (clients
    that cached it as a coordinator hear NOT_COORDINATOR from it); it is fenced and let go once
    every other active broker has reported the moves. A paused broker reports nothing, so the
    broker stopping waits, listed, until the paused one's session expires."""
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "listed", replication=3)
    delivered(produce(cluster.bootstrap, topic, [b"before"]))
    owner = leader(cluster, topic)
    paused, survivor = (b for b in (1, 2, 3) if b != owner)
    cluster.pause(f"broker-{paused}")
    stopping = threading.Thread(target=cluster.stop, args=(f"broker-{owner}",))
    stopping.start()
    try:
        def moved_and_listed() -> bool:
            metadata = admin(cluster.broker_bootstrap(f"broker-{survivor}")).list_topics(
                topic, timeout=5)
            return (metadata.topics[topic].partitions[0].leader not in (owner, -1)
                    and owner in metadata.brokers)

        wait_until(moved_and_listed, TIMEOUT, f"broker {owner} listed, leading nothing",
                   interval=0.05, ignoring=Exception)
    finally:
        cluster.resume(f"broker-{paused}")
        stopping.join(TIMEOUT)
    assert not stopping.is_alive()
    delivered(produce(cluster.bootstrap, topic, [b"after"]))


def test_committed_offsets_survive_the_loss_of_their_coordinator(all_brokers: Cluster) -> None:
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "offsets", replication=3,
                         config={"min.insync.replicas": "2"})
    delivered(produce(cluster.bootstrap, topic, [b"%d" % i for i in range(10)]))
    group = "survivors"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    receive(consumer, 6, TIMEOUT)
    consumer.commit(offsets=[TopicPartition(topic, 0, 6)], asynchronous=False)
    client = admin(cluster.bootstrap)  # kept: a collected client never completes its futures
    coordinator = int(client.describe_consumer_groups([group])[group].result(TIMEOUT)
                      .coordinator.id)
    consumer.close()

    cluster.stop(f"broker-{coordinator}", kill=True)
    resumed = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    committed = wait_until(
        lambda: resumed.committed([TopicPartition(topic, 0)], timeout=5)[0].offset == 6,
        what="the new coordinator serves the committed offset", ignoring=Exception)
    FIGURES["coordinator_kill_to_committed_offset_s"] = committed
    resumed.close()


def test_a_follower_points_clients_to_the_leader(all_brokers: Cluster) -> None:
    """KIP-951: Produce v10+ and Fetch v16+ sent to a follower carry the current leader and
    its endpoint, so clients re-route without a metadata round trip. (A consumer's Fetch
    v11+ is served by a follower, KIP-392; a replica's Fetch is not.)"""
    cluster = all_brokers
    topic = create_topic(cluster.bootstrap, "hints", replication=3,
                         config={"min.insync.replicas": "2"})
    described = partitions(cluster.bootstrap, topic)[0]
    follower, other = (r for r in described.replicas if r != described.leader)
    port = cluster.node(f"broker-{follower}")["port"]
    produce_request = build_request(0, 12, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": b""}]}]})
    fetch_request = build_request(1, 16, {
        "max_wait": 0, "min_bytes": 1, "replica_state": {"replica_id": other},
        "topics": [{"topic_id": topic_id(cluster, topic), "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]}]})

    async def ask() -> tuple[Any, Any]:
        connection = await BrokerConnection.connect("127.0.0.1", port, "hints", TIMEOUT)
        try:
            return (await connection.send(produce_request, TIMEOUT),
                    await connection.send(fetch_request, TIMEOUT))
        finally:
            connection.close()

    produced, fetched = asyncio.run(ask())
    leader_port = cluster.node(f"broker-{described.leader}")["port"]
    for response, answer in ((produced, produced.responses[0].partition_responses[0]),
                             (fetched, fetched.responses[0].partitions[0])):
        assert answer.error_code == ErrorCode.not_leader_or_follower
        assert answer.current_leader.leader_id == described.leader
        assert [(n.node_id, n.port) for n in response.node_endpoints] == [
            (described.leader, leader_port)]


def topic_id(cluster: Cluster, topic: str) -> uuid.UUID:
    client = admin(cluster.bootstrap)
    found = client.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT).topic_id
    mask = 2**64 - 1
    return uuid.UUID(int=(found.get_most_significant_bits() & mask) << 64
                     | found.get_least_significant_bits() & mask)


def follower_log_start(cluster: Cluster, broker_id: int, topic: str) -> int:
    """The log start offset of a follower's replica of partition 0, as the follower itself
    reports it to a consumer's Fetch (KIP-392) of its last record (of the ten the tests write:
    a fetch out of range carries no offsets, as Kafka's)."""
    client = RawClient(cluster.broker_bootstrap(f"broker-{broker_id}"))
    try:
        fetched = client.fetch_partition(topic, 0, 9)
    finally:
        client.close()
    return int(fetched.log_start_offset)


def test_deleted_records_stay_deleted_on_the_next_leader(all_brokers: Cluster) -> None:
    cluster = all_brokers
    client = admin(cluster.bootstrap)
    topic = create_topic(cluster.bootstrap, "trimmed", replication=3,
                         config={"min.insync.replicas": "2"})
    delivered(produce(cluster.bootstrap, topic, [b"%d" % i for i in range(10)]))
    (trimmed,) = client.delete_records([TopicPartition(topic, 0, 5)]).values()
    assert trimmed.result(TIMEOUT).low_watermark == 5
    owner = leader(cluster, topic)
    wait_until(lambda: all(follower_log_start(cluster, f, topic) == 5
                           for f in (1, 2, 3) if f != owner),
               what="the followers learn the log start offset from their next fetches",
               ignoring=Exception)
    cluster.stop(f"broker-{owner}")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "trimmed"})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT) == (5, 10)
    consumer.close()


FIRST_SEGMENT = "00000000000000000000.log"


def test_followers_keep_dropped_segments_for_file_delete_delay_ms(all_brokers: Cluster) -> None:
    """A follower drops the segments below the leader's new log start (DeleteRecords) as the
    leader does: renamed `*.deleted` at once, unlinked only after file.delete.delay.ms, so that
    a read already holding them finishes first."""
    cluster = all_brokers
    client = admin(cluster.bootstrap)
    topic = unique("delayed")
    create_topic(cluster.bootstrap, topic, replication=3, config={
        "min.insync.replicas": "3", "segment.bytes": "1024", "file.delete.delay.ms": "3600000"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "batch.size": 1, "linger.ms": 0})
    for i in range(40):
        producer.produce(topic, b"%0100d" % i, partition=0)
    assert producer.flush(TIMEOUT) == 0
    (trimmed,) = client.delete_records([TopicPartition(topic, 0, 30)]).values()
    assert trimmed.result(TIMEOUT).low_watermark == 30
    owner = leader(cluster, topic)
    for broker in (1, 2, 3):
        directory = cluster.data_dir / f"broker-{broker}" / f"{topic}-0"
        wait_until(lambda: not (directory / FIRST_SEGMENT).exists(),  # noqa: B023
                   what=f"broker {broker} dropped its first segment")
        role = "leader" if broker == owner else "follower"
        assert (directory / f"{FIRST_SEGMENT}.deleted").exists(), \
            f"the {role} unlinked its first segment before file.delete.delay.ms"


def reassignments(cluster: Cluster, targets: dict[TopicPartition, list[int] | None]
                  ) -> dict[Any, Any]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        if targets:
            return dict(client.alter_partition_reassignments(
                {KafkaTopicPartition(tp.topic, tp.partition): r for tp, r in targets.items()}))
        return dict(client.list_partition_reassignments())
    finally:
        client.close()


def test_a_reassignment_moves_a_partition_and_its_data(all_brokers: Cluster) -> None:
    cluster = all_brokers
    create_topic(cluster.bootstrap, "moved", assignment=[[1]])
    values = [b"%d" % i for i in range(200)]
    delivered(produce(cluster.bootstrap, "moved", values))
    assert reassignments(cluster, {TopicPartition("moved", 0): [2, 3]}) == {
        KafkaTopicPartition("moved", 0): None}
    wait_until(lambda: not reassignments(cluster, {}), what="the reassignment completes",
               ignoring=Exception)
    after = partitions(cluster.bootstrap, "moved")[0]
    assert (sorted(after.replicas), sorted(after.isrs)) == ([2, 3], [2, 3])
    assert after.leader in (2, 3)
    assert [r.value for r in read_confluent(cluster.bootstrap, "moved")] == values
    wait_until(lambda: not list(Path(cluster.node("broker-1")["config"]).parent.glob("moved-0")),
               what="broker 1 deleted its replica", ignoring=Exception)


def test_a_throttled_reassignment_waits_for_its_quota(all_brokers: Cluster) -> None:
    """2 MB to copy at 1 KB/s: the new replica stays out of sync until the throttle goes."""
    cluster = all_brokers
    client = admin(cluster.bootstrap)
    create_topic(cluster.bootstrap, "throttled", assignment=[[1]],
                 config={"follower.replication.throttled.replicas": "0:2"})
    delivered(produce(cluster.bootstrap, "throttled", [bytes(1000)] * 2000))
    rate = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[ConfigEntry(
        "follower.replication.throttled.rate", "1000",
        incremental_operation=AlterConfigOpType.SET)])
    client.incremental_alter_configs([rate])[rate].result(TIMEOUT)
    reassignments(cluster, {TopicPartition("throttled", 0): [1, 2]})
    time.sleep(4)  # on purpose: unthrottled, the 2 MB would be copied well within this window
    (ongoing,) = reassignments(cluster, {}).values()
    assert ongoing["adding_replicas"] == [2], "the throttle holds the new replica back"
    assert metrics(cluster, 2)["kafka_server_replicafetchermanager_maxlag"] > 0
    lifted = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[ConfigEntry(
        "follower.replication.throttled.rate", None,
        incremental_operation=AlterConfigOpType.DELETE)])
    client.incremental_alter_configs([lifted])[lifted].result(TIMEOUT)
    wait_until(lambda: not reassignments(cluster, {}), what="the reassignment completes",
               ignoring=Exception)
    assert sorted(partitions(cluster.bootstrap, "throttled")[0].isrs) == [1, 2]
    wait_until(lambda: metrics(cluster, 2)["kafka_server_replicafetchermanager_maxlag"] == 0,
               what="the new replica caught up", ignoring=Exception)


def bounce_the_preferred_leader(cluster: Cluster, topic: str) -> int:
    """Stop and restart the partition's preferred replica: another replica leads after."""
    create_topic(cluster.bootstrap, topic, replication=3, config={"min.insync.replicas": "2"})
    preferred = partitions(cluster.bootstrap, topic)[0].replicas[0]
    cluster.stop(f"broker-{preferred}")
    cluster.start(f"broker-{preferred}")
    wait_until(lambda: isr(cluster, topic) == {1, 2, 3}, what="the preferred replica in sync",
               ignoring=Exception)
    return int(preferred)


def test_a_preferred_leader_election_moves_leadership_home(patient_cluster: Cluster) -> None:
    cluster = patient_cluster
    preferred = bounce_the_preferred_leader(cluster, "preferred")
    assert leader(cluster, "preferred") != preferred, "no automatic rebalance here"
    client = admin(cluster.bootstrap)
    (outcome,) = client.elect_leaders(ElectionType.PREFERRED,
                                      [TopicPartition("preferred", 0)]).result(TIMEOUT).values()
    assert outcome is None
    assert leader(cluster, "preferred") == preferred
    (again,) = client.elect_leaders(ElectionType.PREFERRED,
                                    [TopicPartition("preferred", 0)]).result(TIMEOUT).values()
    assert again.code() == KafkaError.ELECTION_NOT_NEEDED


def test_leadership_goes_back_to_preferred_replicas_by_itself(all_brokers: Cluster) -> None:
    """auto.leader.rebalance.enable (on by default), checked every 2 s here."""
    cluster = all_brokers
    preferred = bounce_the_preferred_leader(cluster, "rebalanced")
    wait_until(lambda: leader(cluster, "rebalanced") == preferred,
               what="the controller's rebalance gives the preferred replica its leadership",
               ignoring=Exception)


def test_a_new_replica_starts_inside_a_batch_that_delete_records_cut(
        all_brokers: Cluster) -> None:
    """DeleteRecords can leave the leader's log start inside a batch. A replica added later
    fetches that batch, which starts below its (empty) log's start; it restarts its log at
    the batch, as Kafka's follower does, instead of refusing it for ever."""
    cluster = all_brokers
    client = admin(cluster.bootstrap)
    topic = unique("cut")
    create_topic(cluster.bootstrap, topic, assignment=[[1]])
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 200})
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(TIMEOUT) == 0
    assert len(list(iter_batches(b"".join(
        p.read_bytes() for p in (cluster.data_dir / "broker-1" / f"{topic}-0").glob("*.log"))
    ))) == 1, "the ten records went in one batch"
    (trimmed,) = client.delete_records([TopicPartition(topic, 0, 5)]).values()
    assert trimmed.result(TIMEOUT).low_watermark == 5
    reassignments(cluster, {TopicPartition(topic, 0): [2, 3]})
    wait_until(lambda: not reassignments(cluster, {}), what="the reassignment completes",
               ignoring=Exception)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": topic,
                         "enable.auto.commit": False})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT) == (5, 10)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    messages = receive(consumer, 5, TIMEOUT)
    consumer.close()
    assert [(m.offset(), m.value()) for m in messages] == [(i, b"%d" % i) for i in range(5, 10)]


def test_a_follower_catches_up_across_what_the_leader_compacted(all_brokers: Cluster) -> None:
    """A follower that was down while its leader compacted fetches the compacted log, gaps
    in the offsets included, and ends up with the same latest value per key."""
    cluster = all_brokers
    topic = unique("table")
    create_topic(cluster.bootstrap, topic, replication=3, config={
        "min.insync.replicas": "1", "cleanup.policy": "compact", "segment.bytes": "8192",
        "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
    owner = leader(cluster, topic)
    follower = next(b for b in (1, 2, 3) if b != owner)
    cluster.stop(f"broker-{follower}", kill=True)
    keys = [b"k%d" % (i % 50) for i in range(3000)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 5, "batch.size": 4096})
    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=b"v%d" % i)
        producer.poll(0)
    time.sleep(1.2)  # segment.ms (1 s) is an age: it must pass before "roll" rolls the segment
    producer.produce(topic, key=b"roll", value=b"roll")
    assert producer.flush(TIMEOUT) == 0
    expected = {key: b"v%d" % i for i, key in enumerate(keys)} | {b"roll": b"roll"}

    wait_until(lambda: len(replica_records(cluster, owner, topic)) < len(keys) // 2,
               what="the leader's log compacted", ignoring=Exception)
    cluster.start(f"broker-{follower}")
    wait_until(lambda: isr(cluster, topic) == {1, 2, 3}, what="the follower back in the ISR",
               ignoring=Exception)
    records = replica_records(cluster, follower, topic)
    assert {key: value for _, key, value in records} == expected
    offsets = [offset for offset, _, _ in records]
    assert offsets == sorted(offsets) and offsets[-1] == len(keys)
    assert len(offsets) < len(keys) // 2, "the follower copied the compacted log"


def replica_records(cluster: Cluster, broker: int, topic: str
                    ) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in a broker's replica files of partition 0."""
    records = []
    for path in sorted((cluster.data_dir / f"broker-{broker}" / f"{topic}-0").glob("*.log")):
        data = path.read_bytes()
        for info in iter_batches(data):
            records += [(r.offset, r.key, r.value)
                        for r in decode_records(memoryview(data)[info.position:info.end])]
    return records
