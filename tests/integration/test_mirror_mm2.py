"""`odradek mirror` between two `odradek dev` clusters, east and west, mirroring both ways
(active-active) with MM2's configuration: topic and partition discovery, config sync, the
internal topics, heartbeats, checkpoints and offset syncs in MM2's record formats (decoded
by a codec of our own), consumer failover with exact offsets for confluent-kafka and
kafka-python, IdentityReplicationPolicy, `odradek mirror status`, one-line config errors,
a cluster that goes away, and SIGTERM."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    ConfigResource,
    ConfigSource,
    NewPartitions,
    ResourceType,
)

from tests.integration import mm2_codec
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import create_topic, kafka_python_subscriber, unique
from tests.integration.mirror_process import (
    MirrorProcess,
    assert_refused_in_one_line,
    properties,
)
from tests.integration.test_cluster_admin import admin, partition_counts, topic_config
from tests.waiting import wait_until

pytestmark = pytest.mark.mirror
TIMEOUT = 60.0
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "east")


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "west")


def dev_broker(factory: pytest.TempPathFactory, name: str) -> Iterator[BrokerProcess]:
    """An `odradek dev` broker for a module, with groups that start at once."""
    root = factory.mktemp(name)
    process = BrokerProcess(root / "data", root / "broker.log", FAST_GROUPS)
    process.start()
    yield process
    if process.alive():
        process.stop()


@pytest.fixture(scope="module")
def mirror(east: BrokerProcess, west: BrokerProcess,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[MirrorProcess]:
    config = properties({"east": east.bootstrap, "west": west.bootstrap}, **{
        "east->west.enabled": "true", "west->east.enabled": "true",
        "sync.group.offsets.enabled": "true",
        "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*, ident-.*"})
    process = MirrorProcess(tmp_path_factory.mktemp("mirror"), config).start()
    yield process
    if process.alive():
        process.kill()


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """The topic's own (dynamic) configs."""
    return {name: entry.value for name, entry in topic_config(bootstrap, topic).items()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


NO_LEADER_YET = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                 KafkaError.UNKNOWN_TOPIC_OR_PART}


def read_all(bootstrap: str, topic: str, partitions: int = 1) -> list[Message]:
    """Every committed record of the topic, to its end; none while the topic does not exist."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("read"),
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed"})
    if consumer.list_topics(topic, TIMEOUT).topics[topic].error is not None:
        consumer.close()
        return []
    consumer.assign([CTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    ends: dict[int, int] = {}
    records: list[Message] = []
    at_end: set[int] = set()

    def end_offsets() -> bool:
        """A topic just created may have no leader yet (NOT_LEADER_OR_FOLLOWER): not yet."""
        for p in range(partitions):
            try:
                ends[p] = consumer.get_watermark_offsets(CTopicPartition(topic, p), TIMEOUT)[1]
            except KafkaException as error:
                if error.args[0].code() not in NO_LEADER_YET:
                    raise
                return False
        return True

    def consume() -> None:
        for message in consumer.consume(500, 0.2):
            if message.error() is None:
                records.append(message)
            elif message.error().code() == KafkaError._PARTITION_EOF and (
                    message.offset() >= ends[message.partition()]):
                at_end.add(message.partition())

    try:
        wait_until(end_offsets, TIMEOUT, f"the end offsets of {topic}")
        wait_until(lambda: len(at_end) == partitions, TIMEOUT, f"the end of {topic}",
                   between=consume)
    finally:
        consumer.close()
    return records


def test_internal_topics_are_mm2s_compacted_single_partition_topics(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess) -> None:
    expected = {east: ["heartbeats", "mm2-offset-syncs.west.internal",
                       "west.checkpoints.internal"],
                west: ["heartbeats", "mm2-offset-syncs.east.internal",
                       "east.checkpoints.internal"]}
    for cluster, names in expected.items():
        wait_until(lambda c=cluster, n=names: set(n) <= set(partition_counts(c.bootstrap)), TIMEOUT,
                   f"{names} on {cluster.bootstrap}")
        counts = partition_counts(cluster.bootstrap)
        for name in names:
            assert counts[name] == 1
            assert topic_configs(cluster.bootstrap, name)["cleanup.policy"] == "compact"


def test_new_topics_partitions_and_configs_follow_the_source(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess) -> None:
    topic = create_topic(east.bootstrap, unique("disc"), 3,
                         config={"retention.ms": "1234567", "min.insync.replicas": "1"})
    remote = f"east.{topic}"
    wait_until(lambda: partition_counts(west.bootstrap).get(remote) == 3, TIMEOUT, f"{remote} x3")
    configs = topic_configs(west.bootstrap, remote)
    assert configs["retention.ms"] == "1234567"
    assert "min.insync.replicas" not in configs  # MM2's default config.properties.exclude

    client = admin(east.bootstrap)
    client.create_partitions([NewPartitions(topic, 5)])[topic].result(TIMEOUT)
    wait_until(lambda: partition_counts(west.bootstrap).get(remote) == 5, TIMEOUT, f"{remote} x5")
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "7654321"})
    client.alter_configs([resource])[resource].result(TIMEOUT)
    wait_until(lambda: topic_configs(west.bootstrap, remote).get("retention.ms") == "7654321",
               TIMEOUT, "retention.ms synced")


def test_active_active_never_loops(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess) -> None:
    ping = create_topic(east.bootstrap, unique("ping"))
    pong = create_topic(west.bootstrap, unique("pong"))
    wait_until(lambda: f"east.{ping}" in partition_counts(west.bootstrap), TIMEOUT, "east.ping")
    wait_until(lambda: f"west.{pong}" in partition_counts(east.bootstrap), TIMEOUT, "west.pong")
    # A topic created after the remote ones existed, mirrored by a later refresh of both
    # flows: by then a loop would have shown.
    late = create_topic(west.bootstrap, unique("late"))
    wait_until(lambda: f"west.{late}" in partition_counts(east.bootstrap), TIMEOUT, "west.late")
    late = create_topic(east.bootstrap, unique("late"))
    wait_until(lambda: f"east.{late}" in partition_counts(west.bootstrap), TIMEOUT, "east.late")
    looped = [name for cluster in (east, west) for name in partition_counts(cluster.bootstrap)
              if re.match(r"(east\.west|west\.east)\.", name)]
    assert looped == []


def test_heartbeats_in_mm2s_format(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess) -> None:
    def beats(bootstrap: str, topic: str) -> set[tuple[str, str]]:
        if topic not in partition_counts(bootstrap):
            return set()
        decoded = [mm2_codec.heartbeat(m.key(), m.value()) for m in read_all(bootstrap, topic)]
        assert all(beat.timestamp > 0 for beat in decoded)
        return {(beat.source, beat.target) for beat in decoded}

    wait_until(lambda: beats(west.bootstrap, "heartbeats") == {("east", "west")}, TIMEOUT)
    wait_until(lambda: beats(east.bootstrap, "heartbeats") == {("west", "east")}, TIMEOUT)
    # east's heartbeats (from the west->east pair) reach west through the data path
    wait_until(lambda: beats(west.bootstrap, "east.heartbeats") == {("west", "east")},
               TIMEOUT, "east.heartbeats on west")


def produce_numbered(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    """`count` committed records, and an aborted transaction in the middle of each
    partition (an upstream offset gap the translation must step over)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx")})
    producer.init_transactions()
    for start, abort in ((0, False), (count // 2, True), (count // 2, False)):
        producer.begin_transaction()
        end = count if start else count // 2
        for i in range(start, end):
            producer.produce(topic, key=str(i).encode(),
                             value=(b"aborted-" if abort else b"v-") + str(i).encode(),
                             partition=i % partitions)
        if abort:
            producer.abort_transaction()
        else:
            producer.commit_transaction()


def committed_on(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    request = [ConsumerGroupTopicPartitions(group)]
    client = admin(bootstrap)
    result = client.list_consumer_group_offsets(request)[group].result(TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions
            if tp.offset >= 0}


def consume_confluent(bootstrap: str, group: str, topic: str, count: int | None,
                      ends: dict[int, int] | None = None) -> list[bytes]:
    """Consume with `group` (subscribed) until `count` records, or until its position
    reaches `ends` on every partition; commits and leaves."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []

    def done() -> bool:
        if count is not None:
            return len(values) >= count
        assert ends is not None
        positions = consumer.position([CTopicPartition(topic, p) for p in ends])
        return all(tp.offset >= ends[tp.partition] for tp in positions)

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())

    wait_until(lambda: bool(values or ends) and done(), TIMEOUT, f"{group}: {len(values)}",
               between=poll)
    consumer.commit(asynchronous=False)
    consumer.close()
    return values


def consume_kafka_python(bootstrap: str, group: str, topic: str, count: int | None,
                         ends: dict[int, int] | None = None) -> list[bytes]:
    consumer = kafka_python_subscriber(topic, bootstrap_servers=bootstrap, group_id=group,
                                       enable_auto_commit=False, auto_offset_reset="earliest",
                                       isolation_level="read_committed")
    values: list[bytes] = []

    def done() -> bool:
        if count is not None:
            return len(values) >= count
        assert ends is not None
        assigned = consumer.assignment()
        return len(assigned) == len(ends) and all(
            consumer.position(tp) >= ends[tp.partition] for tp in assigned)

    def poll() -> None:
        for records in consumer.poll(200, max_records=count - len(values) if count else None
                                     ).values():
            values.extend(record.value for record in records)

    wait_until(lambda: bool(values or ends) and done(), TIMEOUT,
               lambda: f"{group}: {len(values)} records, assigned {consumer.assignment()}",
               between=poll)
    consumer.commit()
    consumer.close()
    return values


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("ends"),
                         "isolation.level": "read_committed"})
    try:
        return {p: consumer.get_watermark_offsets(CTopicPartition(topic, p), TIMEOUT)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


@pytest.mark.parametrize("consume", [consume_confluent, consume_kafka_python],
                         ids=["confluent-kafka", "kafka-python"])
def test_consumer_failover_resumes_exactly(
        consume: object, mirror: MirrorProcess, east: BrokerProcess,
        west: BrokerProcess) -> None:
    assert callable(consume)
    partitions, count = 3, 300
    topic = create_topic(east.bootstrap, unique("orders"), partitions)
    produce_numbered(east.bootstrap, topic, count, partitions)
    everything = {f"v-{i}".encode() for i in range(count)}
    group = unique("app")
    first = consume(east.bootstrap, group, topic, 100)
    upstream = committed_on(east.bootstrap, group)
    remote = f"east.{topic}"

    # the checkpoint of each partition carries the exact downstream offset...
    def checkpoints() -> dict[tuple[str, int], mm2_codec.Checkpoint]:
        latest = {}
        for message in read_all(west.bootstrap, "east.checkpoints.internal"):
            checkpoint = mm2_codec.checkpoint(message.key(), message.value())
            if checkpoint.group == group:
                latest[(checkpoint.topic, checkpoint.partition)] = checkpoint
        return latest

    wait_until(lambda: {(t.removeprefix("east."), p): c.upstream
                        for (t, p), c in checkpoints().items()} == upstream, TIMEOUT,
               lambda: f"checkpoints {checkpoints()} for {upstream}")
    # ...from offset syncs that decode with MM2's format...
    syncs = [mm2_codec.offset_sync(m.key(), m.value())
             for m in read_all(east.bootstrap, "mm2-offset-syncs.west.internal")]
    assert {(s.topic, s.partition) for s in syncs} >= set(upstream)
    # ...and sync.group.offsets commits it on west, where the group is idle.
    wait_until(lambda: committed_on(west.bootstrap, group) == {
        key: c.downstream for key, c in checkpoints().items()}, TIMEOUT,
        lambda: f"{committed_on(west.bootstrap, group)} vs {checkpoints()}")
    ends = end_offsets(west.bootstrap, remote, partitions)
    wait_until(lambda: sum(end_offsets(west.bootstrap, remote, partitions).values())
               >= sum(ends.values()), TIMEOUT)
    rest = consume(west.bootstrap, group, remote, None,
                   _mirrored_ends(west.bootstrap, remote, partitions, count))
    # exactly what the group had not committed on east: what it consumed there is not the
    # measure (kafka-python may hand out records past the offset it then commits)
    remaining = {m.value() for m in read_all(east.bootstrap, topic, partitions)
                 if m.offset() >= upstream.get((topic, m.partition()), 0)}
    assert len(rest) == len(set(rest)), "duplicates"
    assert set(rest) == remaining, (
        f"missing {sorted(remaining - set(rest))[:5]}, read twice "
        f"{sorted(set(rest) - remaining)[:5]}: upstream {upstream}, checkpoints "
        f"{checkpoints()}, syncs {[s for s in syncs if s.topic == topic]}")
    assert set(first) | set(rest) == everything


def _mirrored_ends(bootstrap: str, topic: str, partitions: int, count: int
                   ) -> dict[int, int]:
    """The end offsets of the mirrored topic once every committed source record is there."""
    wait_until(lambda: len([m for m in read_all(bootstrap, topic, partitions)
                            if m.value().startswith(b"v-")]) >= count, TIMEOUT,
               f"{count} records mirrored to {topic}")
    return end_offsets(bootstrap, topic, partitions)


def metrics(mirror: MirrorProcess) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{mirror.metrics_port}/metrics",
                                timeout=10) as response:
        text: str = response.read().decode()
    return text


def test_checkpoint_latency_metric_has_mm2s_name_and_labels(mirror: MirrorProcess,
                                                            east: BrokerProcess) -> None:
    topic, group = create_topic(east.bootstrap, unique("lat"), 1), unique("lat")
    produce_numbered(east.bootstrap, topic, 10, 1)
    consume_confluent(east.bootstrap, group, topic, 10)  # a committed offset to checkpoint
    name = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"
    ours = f'group="{group}"'
    wait_until(lambda: ours in metrics(mirror), TIMEOUT, name)
    for suffix in ("", "_min", "_max", "_avg"):
        line = next(line for line in metrics(mirror).splitlines()
                    if line.startswith(f"{name}{suffix}{{") and ours in line)
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        assert set(labels) == {"source", "target", "group", "topic", "partition"}
        assert (labels["source"], labels["target"]) == ("east", "west")
        assert labels["topic"] == f"east.{topic}"
        assert not float(line.rsplit(" ", 1)[1]) < 0  # NaN without a recent sample


def test_status_lists_flows_partitions_owners_and_lag(mirror: MirrorProcess,
                                                      east: BrokerProcess) -> None:
    topic = create_topic(east.bootstrap, unique("stat"), 2)
    producer = Producer({"bootstrap.servers": east.bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"s", partition=i % 2)
    producer.flush(TIMEOUT)

    def rows() -> list[dict[str, object]]:
        flows = {flow["flow"]: flow for flow in _status(mirror)["flows"]}
        assert set(flows) == {"east->west", "west->east"}
        return [row for row in flows["east->west"]["partitions"]  # type: ignore[index]
                if row["topic"] == topic]

    wait_until(lambda: [(r["partition"], r["next_offset"], r["lag"]) for r in rows()]
               == [(0, 3, 0), (1, 2, 0)], TIMEOUT, lambda: f"status {rows()}")
    assert all(row["target_topic"] == f"east.{topic}" and row["end_offset"] in (2, 3)
               and row["owner"] != "-" for row in rows())


def _status(mirror: MirrorProcess) -> dict[str, list[dict[str, object]]]:
    result = subprocess.run([*ODRADEK, "mirror", "status", "--config",
                             str(mirror.config_path), "--json"],
                            capture_output=True, text=True, timeout=TIMEOUT, check=True)
    status: dict[str, list[dict[str, object]]] = json.loads(result.stdout)
    return status


def test_identity_replication_policy_keeps_names(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess,
        tmp_path: Path) -> None:
    config = properties({"east2": east.bootstrap, "west2": west.bootstrap}, **{
        "east2->west2.enabled": "true", "east2->west2.topics": "ident-.*",
        "emit.heartbeats.enabled": "false", "heartbeats.replication.enabled": "false",
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"})
    identity = MirrorProcess(tmp_path, config).start()
    try:
        topic = create_topic(east.bootstrap, unique("ident"), 2)
        wait_until(lambda: partition_counts(west.bootstrap).get(topic) == 2, TIMEOUT, topic)
        producer = Producer({"bootstrap.servers": east.bootstrap})
        for i in range(10):
            producer.produce(topic, value=f"i-{i}".encode(), partition=i % 2)
        producer.flush(TIMEOUT)
        wait_until(lambda: len(read_all(west.bootstrap, topic, 2)) == 10, TIMEOUT,
                   f"10 records in {topic} on west")
    finally:
        assert identity.stop() == 0


def test_checkpoints_are_exact_inside_a_later_mirror_transaction(
        mirror: MirrorProcess, east: BrokerProcess, west: BrokerProcess) -> None:
    topic = create_topic(east.bootstrap, unique("exact"))
    remote = f"east.{topic}"
    producer = Producer({"bootstrap.servers": east.bootstrap, "transactional.id": unique("tx")})
    producer.init_transactions()
    for batch in range(2):  # two source transactions, mirrored one after the other
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, value=f"x-{batch * 10 + i}".encode())
        producer.commit_transaction()
        wait_until(lambda n=(batch + 1) * 10: remote in partition_counts(west.bootstrap) and len(
            read_all(west.bootstrap, remote)) == n, TIMEOUT, f"{remote} mirrored")
    landed = {m.value(): m.offset() for m in read_all(west.bootstrap, remote)}
    source = {m.offset(): m.value() for m in read_all(east.bootstrap, topic)}
    group = unique("exact")
    client = admin(east.bootstrap)
    for committed in (5, 15):  # in the first and in the second mirror transaction
        request = [ConsumerGroupTopicPartitions(group, [CTopicPartition(topic, 0, committed)])]
        client.alter_consumer_group_offsets(request)[group].result(TIMEOUT)
        expected = landed[source[min(u for u in source if u >= committed)]]

        def downstream(c: int = committed) -> int | None:
            found = [mm2_codec.checkpoint(m.key(), m.value())
                     for m in read_all(west.bootstrap, "east.checkpoints.internal")]
            return next((x.downstream for x in reversed(found)
                         if x.group == group and x.upstream == c), None)

        wait_until(lambda: downstream() is not None, TIMEOUT, f"checkpoint of {committed}")
        assert downstream() == expected, (committed, downstream(), expected)


@pytest.mark.parametrize(("lines", "message"), [
    (["north.bootstrap.servers = 127.0.0.1:1"], "unknown cluster alias 'north'"),
    (["east->north.enabled = true"], "flow names cluster 'north'"),
    (["east->west.topics = ord[ers"], "bad regex 'ord[ers'"),
])
def test_bad_configs_are_one_line_errors(tmp_path: Path, lines: list[str], message: str) -> None:
    assert_refused_in_one_line(tmp_path, lines, message)


def test_a_lost_cluster_is_logged_once_and_retried(
        mirror: MirrorProcess, west: BrokerProcess, east: BrokerProcess) -> None:
    """A crashed cluster (kill -9): a graceful stop fences the broker while it still answers
    metadata, so the mirror's calls fail and succeed in turn, and each turn is logged."""
    wait_until(lambda: mirror.health()[0] == 200, TIMEOUT, lambda: mirror.health()[1])
    before = len(mirror.logs())

    def since() -> str:
        return mirror.logs()[before:]

    west.kill()
    wait_until(lambda: "cluster west is unreachable" in since(), TIMEOUT, "unreachable")
    west.start()
    wait_until(lambda: "cluster west is reachable again" in since(), TIMEOUT,
               lambda: since()[-3000:])
    assert since().count("cluster west is unreachable") == 1, since()
    topic = create_topic(east.bootstrap, unique("after"))
    wait_until(lambda: f"east.{topic}" in partition_counts(west.bootstrap), TIMEOUT,
               "mirroring again")


def test_sigterm_stops_cleanly(mirror: MirrorProcess) -> None:
    assert mirror.stop() == 0
    assert "stopped" in mirror.logs()
    assert "Traceback" not in mirror.logs()
