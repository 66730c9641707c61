"""Consumer groups with real clients: three consumers split a six-partition topic with no
overlap, commit exactly what they read, and a newcomer resumes right after the commits.
Classic protocol with confluent-kafka (eager and cooperative-sticky), kafka-python and
aiokafka; KIP-848's consumer protocol with confluent-kafka."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from odradek.config.kafka_configs import BrokerConfig, effective_topic_config
from odradek.group.partitioning import partition_for
from odradek.log import LogConfig, PartitionLog
from odradek.protocol.record_codec import build_batch
from odradek.protocol.records import validate_batches
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import TIMEOUT, create_topic, unique
from tests.integration.groups import (
    AiokafkaGroup,
    ConfluentGroup,
    GroupDriver,
    KafkaPythonGroup,
    fill,
    split_evenly,
)
from tests.waiting import wait_until

PARTITIONS = 6
PER_PARTITION = 50
FAST_JOIN = {"group.initial.rebalance.delay.ms": "300"}


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("groups")
    process = BrokerProcess(root / "data", root / "broker.log", FAST_JOIN)
    process.start()
    yield process
    if process.alive():
        process.stop()


def drivers(bootstrap: str, group: str, topic: str) -> dict[str, GroupDriver]:
    return {
        "confluent-classic": ConfluentGroup(bootstrap, group, topic, **{
            "group.protocol": "classic", "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500}),
        "confluent-cooperative": ConfluentGroup(bootstrap, group, topic, **{
            "group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}),
        "confluent-consumer": ConfluentGroup(bootstrap, group, topic,
                                             **{"group.protocol": "consumer"}),
        "kafka-python": KafkaPythonGroup(bootstrap, group, topic, session_timeout_ms=10000,
                                         heartbeat_interval_ms=500),
        "aiokafka": AiokafkaGroup(bootstrap, group, topic, session_timeout_ms=10000,
                                  heartbeat_interval_ms=500),
    }


@pytest.mark.parametrize("client", ["confluent-classic", "confluent-cooperative",
                                    "confluent-consumer", "kafka-python", "aiokafka"])
def test_three_consumers_split_commit_and_a_newcomer_resumes(
        group_broker: BrokerProcess, client: str) -> None:
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, unique("split"), PARTITIONS)
    group_id = unique("g")
    group = drivers(bootstrap, group_id, topic)[client]
    members = [group.add(f"c{i}") for i in range(3)]
    wait_until(lambda: split_evenly(members, PARTITIONS),
               TIMEOUT, "three consumers to split the topic", between=group.poll)
    assert [len(m.owned) for m in members] == [2, 2, 2]

    fill(bootstrap, topic, PARTITIONS, PER_PARTITION)
    total = PARTITIONS * PER_PARTITION
    wait_until(lambda: sum(len(m.reads) for m in members) >= total,
               TIMEOUT, "every record to arrive", between=group.poll)
    for _ in range(5):
        group.poll()
    reads = [r for m in members for r in m.reads]
    assert len(reads) == total and len(set(reads)) == total, "each record read exactly once"
    for member in members:
        assert {p for p, _ in member.reads} <= member.owned, "a member read only its own"
    for member in members:
        group.commit(member)
    committed = group.committed(members[0], PARTITIONS)
    assert committed == dict.fromkeys(range(PARTITIONS), PER_PARTITION)

    group.close_all()
    fill(bootstrap, topic, PARTITIONS, 10, start=PER_PARTITION)
    newcomer_group = drivers(bootstrap, group_id, topic)[client]
    newcomer = newcomer_group.add("newcomer")
    wait_until(lambda: len(newcomer.reads) >= PARTITIONS * 10,
               TIMEOUT, "the newcomer to read the new records", between=newcomer_group.poll)
    for _ in range(5):
        newcomer_group.poll()
    offsets = Counter(p for p, _ in newcomer.reads)
    assert offsets == dict.fromkeys(range(PARTITIONS), 10), "nothing re-delivered or skipped"
    assert min(o for _, o in newcomer.reads) == PER_PARTITION
    newcomer_group.close_all()


def test_consumer_protocol_moves_a_leaving_members_partitions_within_seconds(
        group_broker: BrokerProcess) -> None:
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, unique("kip848"), PARTITIONS)
    group = ConfluentGroup(bootstrap, unique("g"), topic, **{"group.protocol": "consumer"})
    members = [group.add(f"c{i}") for i in range(3)]
    wait_until(lambda: split_evenly(members, PARTITIONS),
               TIMEOUT, "three KIP-848 consumers to split the topic", between=group.poll)
    leaving = members.pop()
    group.close(leaving)
    seconds = wait_until(lambda: split_evenly(members, PARTITIONS),
                         TIMEOUT, "the leaver's partitions to move", between=group.poll)
    assert seconds < 15, f"partitions moved after {seconds:.1f}s: a session timeout, not a leave"
    assert [len(m.owned) for m in members] == [3, 3]
    group.close_all()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(
        group_broker: BrokerProcess) -> None:
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap, unique("static"), PARTITIONS)
    group = ConfluentGroup(bootstrap, unique("g"), topic, **{
        "group.protocol": "classic", "session.timeout.ms": 30000,
        "heartbeat.interval.ms": 500})
    members = [group.add(f"c{i}", **{"group.instance.id": f"pod-{i}"}) for i in range(3)]
    wait_until(lambda: split_evenly(members, PARTITIONS),
               TIMEOUT, "three static members to split the topic", between=group.poll)
    before = {m.name: set(m.owned) for m in members}
    revocations = {m.name: m.revocations for m in members}
    restarting = members[1]
    group.close(restarting)
    back = group.add("c1", **{"group.instance.id": "pod-1"})
    wait_until(lambda: back.owned == before["c1"],
               TIMEOUT, "the static member to get its partitions back", between=group.poll)
    for _ in range(20):
        group.poll()
    for member in (members[0], members[2]):
        assert member.owned == before[member.name]
        assert member.revocations == revocations[member.name], "the others did not rebalance"
    group.close_all()


def _simple_commit(bootstrap: str, group_id: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit as a consumer outside the group, until the coordinator has loaded: on a busy
    machine librdkafka's synchronous commit has failed with COORDINATOR_LOAD_IN_PROGRESS
    while the shard was still loading (`__consumer_offsets` just created)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                         "enable.auto.commit": False})
    partitions = [TopicPartition(topic, p, o) for p, o in offsets.items()]

    def committed() -> bool:
        try:
            consumer.commit(offsets=partitions, asynchronous=False)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.COORDINATOR_LOAD_IN_PROGRESS:
                raise
            return False
        return True

    try:
        wait_until(committed, TIMEOUT, "the offsets committed", interval=0.5)
    finally:
        consumer.close()


def _committed(bootstrap: str, group_id: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id})
    try:
        wanted = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: tp.offset for tp in consumer.committed(wanted, TIMEOUT)}
    finally:
        consumer.close()


@pytest.mark.parametrize("hard", [False, True], ids=["graceful", "kill-9"])
def test_committed_offsets_survive_a_broker_restart(fresh_broker: BrokerProcess,
                                                    hard: bool) -> None:
    fresh_broker.overrides.update(FAST_JOIN)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("restart"), 3)
    fill(bootstrap, topic, 3, 20)
    group = ConfluentGroup(bootstrap, unique("g"), topic, **{"group.protocol": "classic"})
    member = group.add("c0")
    wait_until(lambda: len(member.reads) >= 60, TIMEOUT, "records", between=group.poll)
    group.commit(member)
    group.close_all()
    _simple_commit(bootstrap, "standalone", topic, {0: 7, 2: 11})
    fresh_broker.restart(hard=hard)
    assert _committed(bootstrap, group.group, topic, 3) == {0: 20, 1: 20, 2: 20}
    assert _committed(bootstrap, "standalone", topic, 3) == {0: 7, 1: -1001, 2: 11}


def test_kill_9_during_a_burst_of_commits_loses_no_acknowledged_commit(
        fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("burst"), 1)
    acked: list[int] = []
    attempted: list[int] = []
    refused: list[KafkaException] = []
    killing, stop = threading.Event(), threading.Event()

    def commit_burst() -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "burst",
                             "enable.auto.commit": False, "socket.timeout.ms": 2000,
                             "log_level": 0})  # the broker is killed under it: no log spam
        offset = 0
        while not stop.is_set():
            offset += 1
            attempted.append(offset)
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            except KafkaException as error:
                if not killing.is_set():  # timed out on a loaded machine: not acknowledged
                    refused.append(error)
                continue
            if stop.is_set():
                break  # acknowledged by the restarted broker: not part of the burst
            acked.append(offset)
        consumer.close()

    with ThreadPoolExecutor(1) as pool:
        bursting = pool.submit(commit_burst)
        try:
            wait_until(lambda: len(acked) >= 200, 3 * TIMEOUT,  # a loaded machine is slow
                       lambda: f"200 commits acknowledged, {len(acked)} were; "
                               f"{len(refused)} refused, the last: {refused[-1:]}",
                       interval=0.01)
            killing.set()
            fresh_broker.kill()
            acked_before_the_kill = acked[-1]
        finally:
            stop.set()
        fresh_broker.start()
        committed = _committed(bootstrap, "burst", topic, 1)[0]
        assert acked_before_the_kill <= committed <= attempted[-1]
        # librdkafka retries its in-flight commit until the broker is back
        bursting.result(TIMEOUT)
    timeouts = {KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT}
    assert [e for e in refused if e.args[0].code() not in timeouts] == []


def test_group_join_time_with_the_default_initial_delay(tmp_path: Path) -> None:
    """The figure users feel: subscribe to first record, with Kafka's default
    group.initial.rebalance.delay.ms (3 s) for the classic protocol, and KIP-848's."""
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log")
    broker.start()
    try:
        bootstrap = broker.bootstrap
        topic = create_topic(bootstrap, unique("join"), 1)
        fill(bootstrap, topic, 1, 1)
        figures: dict[str, float] = {}
        for protocol in ("classic", "consumer"):
            group = ConfluentGroup(bootstrap, unique("g"), topic, **{"group.protocol": protocol})
            member = group.add("c0")
            figures[protocol] = wait_until(lambda m=member: bool(m.reads),
                                           TIMEOUT, f"the first record ({protocol})",
                                           between=group.poll)
            group.close_all()
        print(f"\njoin time, subscribe to first record: {figures}")
        assert figures["classic"] >= 3.0 * 0.9, "the initial delay was honoured"
    finally:
        broker.stop()



def test_consumer_protocol_regex_subscription(group_broker: BrokerProcess) -> None:
    """librdkafka sends a `^` subscription to the broker as KIP-848's regex."""
    bootstrap = group_broker.bootstrap
    prefix = unique("rx")
    matching = [create_topic(bootstrap, f"{prefix}-{name}", 2) for name in ("a", "b")]
    other = create_topic(bootstrap, f"other-{prefix}", 2)
    for topic in [*matching, other]:
        fill(bootstrap, topic, 2, 1)
    group = ConfluentGroup(bootstrap, unique("g"), f"^{prefix}-.*",
                           **{"group.protocol": "consumer"})
    member = group.add("c0")
    wait_until(lambda: len(member.reads) >= 4,
               TIMEOUT, "records of matching topics", between=group.poll)
    for _ in range(10):
        group.poll()
    assert len(member.reads) == 4 and member.owned == {0, 1}
    group.close_all()


def test_undecodable_records_in_the_offsets_topic_are_skipped_at_load(
        fresh_broker: BrokerProcess) -> None:
    """A record of an unknown type (a newer Kafka's, say) or a garbled one in
    `__consumer_offsets` is logged and skipped; the groups around it load."""
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("load"), 1)
    _simple_commit(bootstrap, "survivor", topic, {0: 7})
    fresh_broker.stop()
    directory = fresh_broker.data_dir / f"__consumer_offsets-{partition_for('survivor', 50)}"
    config = LogConfig.from_topic_config(effective_topic_config(BrokerConfig({}), {}))
    log_ = PartitionLog.open(directory, config, 0, recovery_point=0)
    batch = bytearray(build_batch([(b"\x00\x63unknown type", b"\x00\x00"),
                                   (b"\x00\x01\x00\x05trunc", b"\x00\x03")]))
    log_.append(batch, validate_batches(batch, len(batch), from_client=False), 0)
    log_.flush()
    log_.close()
    fresh_broker.start()
    assert _committed(bootstrap, "survivor", topic, 1) == {0: 7}
    _simple_commit(bootstrap, "survivor", topic, {0: 8})
    assert _committed(bootstrap, "survivor", topic, 1) == {0: 8}
    logs = fresh_broker.logs()
    assert "skipping a record of unknown type" in logs
    assert "skipping a malformed record" in logs


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_live_consumer_carries_on_across_a_broker_restart(fresh_broker: BrokerProcess,
                                                            protocol: str) -> None:
    """The group is loaded back from `__consumer_offsets`: its member keeps its partitions
    and reads on from its commits, with nothing read twice."""
    fresh_broker.overrides.update(FAST_JOIN)
    fresh_broker.start()
    bootstrap = fresh_broker.bootstrap
    topic = create_topic(bootstrap, unique("live"), 2)
    fill(bootstrap, topic, 2, 10)
    group = ConfluentGroup(bootstrap, unique("g"), topic, **{
        "group.protocol": protocol, "log_level": 0})
    member = group.add("c0")
    wait_until(lambda: len(member.reads) >= 20, TIMEOUT, "the first records", between=group.poll)
    group.commit(member)
    fresh_broker.restart()
    fill(bootstrap, topic, 2, 10, start=10)
    wait_until(lambda: len(member.reads) >= 40, 60, "the records produced after the restart",
               between=group.poll)
    for _ in range(10):
        group.poll()
    assert sorted(member.reads) == [(p, o) for p in (0, 1) for o in range(20)]
    assert member.revocations == 0, "the member kept its partitions: no rejoin, no rebalance"
    group.commit(member)
    assert group.committed(member, 2) == {0: 20, 1: 20}
    group.close_all()
