"""Fetching from the closest replica (KIP-392) on a real 3-broker cluster, one broker per
rack, with `replica.selector.class` set to Kafka's RackAwareReplicaSelector: a confluent-kafka
consumer naming a follower's rack in `client.rack` reads every record from that follower
(the leader sends it no record bytes), including records produced while it waits, and under
read_committed only committed transactions; a consumer naming no rack reads from the
leader; a consumer whose follower is killed carries on from the leader, missing nothing.
kafkajs, with `rackId`, is sent to the follower in its rack too.
Per-broker consumer bytes out (`kafka_server_brokertopicmetrics_bytesout_total`, which
leaves replication out, as in Kafka) show who served whom."""

from __future__ import annotations

import base64
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from odradek.replication.read_replica import RACK_AWARE_SELECTOR
from tests.integration.clients import create_topic, produce_values, unique
from tests.integration.cluster import (
    TIMEOUT,
    Cluster,
    admin,
    partitions,
    running_cluster,
    scrape,
)
from tests.integration.kafkajs_client import NODE, run_kafkajs
from tests.waiting import wait_until

RACKS = ["rack-a", "rack-b", "rack-c"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("follower-fetching"), 1, 3,
                         {"replica.selector.class": RACK_AWARE_SELECTOR,
                          "broker.session.timeout.ms": "4000",
                          "broker.heartbeat.interval.ms": "500"}, RACKS) as cluster:
        yield cluster


def replicated_topic(cluster: Cluster) -> tuple[str, int, int]:
    """A one-partition topic on every broker: its name, leader and a follower."""
    topic = create_topic(cluster.bootstrap, unique("t"), 1, replication=3)
    leader = partitions(cluster.bootstrap, topic)[0].leader
    return topic, leader, next(b for b in (1, 2, 3) if b != leader)


def consumer_bytes_out(cluster: Cluster, broker_id: int, topic: str) -> float:
    port = cluster.node(f"broker-{broker_id}")["metrics_port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "kafka_server_brokertopicmetrics_bytesout_total"
               and sample.labels.get("topic") == topic)


def consume(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []

    def more() -> bool:
        for message in consumer.consume(count - len(values), timeout=0.5):
            if message.error() is None:
                values.append(message.value())
        return len(values) >= count

    wait_until(more, what=f"{count} records", ignoring=Exception)
    return values


def new_consumer(bootstrap: str, rack: str | None,
                 isolation_level: str = "read_uncommitted") -> Consumer:
    config = {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
              "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "isolation.level": isolation_level}
    if rack is not None:
        config["client.rack"] = rack
    return Consumer(config)


def test_a_consumer_reads_from_the_follower_in_its_rack(cluster: Cluster) -> None:
    topic, leader, follower = replicated_topic(cluster)
    first = [f"early-{i}".encode() for i in range(500)]
    produce_values(cluster.bootstrap, topic, first)

    consumer = new_consumer(cluster.bootstrap, rack=RACKS[follower - 1])
    consumer.subscribe([topic])
    try:
        assert consume(consumer, len(first)) == first
        late = [f"late-{i}".encode() for i in range(100)]
        produce_values(cluster.bootstrap, topic, late)
        assert consume(consumer, len(late)) == late
    finally:
        consumer.close()

    record_bytes = sum(map(len, first + late))
    assert consumer_bytes_out(cluster, follower, topic) > record_bytes
    assert consumer_bytes_out(cluster, leader, topic) == 0
    leader_metrics = scrape(cluster.node(f"broker-{leader}")["metrics_port"])
    follower_metrics = scrape(cluster.node(f"broker-{follower}")["metrics_port"])
    assert leader_metrics["kafka_server_brokertopicmetrics_replicationbytesout_total"] \
        > 2 * record_bytes
    assert follower_metrics["kafka_server_brokertopicmetrics_replicationbytesin_total"] \
        > record_bytes


def test_a_consumer_without_a_rack_reads_from_the_leader(cluster: Cluster) -> None:
    topic, leader, _ = replicated_topic(cluster)
    values = [f"v-{i}".encode() for i in range(200)]
    produce_values(cluster.bootstrap, topic, values)

    consumer = new_consumer(cluster.bootstrap, rack=None)
    consumer.subscribe([topic])
    try:
        assert consume(consumer, len(values)) == values
    finally:
        consumer.close()

    assert consumer_bytes_out(cluster, leader, topic) > sum(map(len, values))
    assert all(consumer_bytes_out(cluster, b, topic) == 0 for b in (1, 2, 3) if b != leader)


def test_read_committed_from_a_follower_skips_aborted_transactions(cluster: Cluster) -> None:
    topic, leader, follower = replicated_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap,
                         "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(TIMEOUT)
    for outcome in ("committed", "aborted", "committed"):
        producer.begin_transaction()
        for i in range(50):
            producer.produce(topic, f"{outcome}-{i}".encode(), partition=0)
        if outcome == "committed":
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)

    consumer = new_consumer(cluster.bootstrap, rack=RACKS[follower - 1],
                            isolation_level="read_committed")
    consumer.subscribe([topic])
    try:
        assert consume(consumer, 100) == [f"committed-{i}".encode() for i in range(50)] * 2
        assert consumer.consume(10, timeout=2) == []
    finally:
        consumer.close()
    assert consumer_bytes_out(cluster, follower, topic) > 0
    assert consumer_bytes_out(cluster, leader, topic) == 0


def test_a_consumer_whose_follower_dies_carries_on_from_the_leader(cluster: Cluster) -> None:
    topic, leader, follower = replicated_topic(cluster)
    before = [f"before-{i}".encode() for i in range(300)]
    produce_values(cluster.bootstrap, topic, before)
    consumer = new_consumer(cluster.bootstrap, rack=RACKS[follower - 1])
    consumer.subscribe([topic])
    try:
        assert consume(consumer, len(before)) == before
        assert consumer_bytes_out(cluster, leader, topic) == 0
        cluster.stop(f"broker-{follower}", kill=True)
        after = [f"after-{i}".encode() for i in range(300)]
        produce_values(cluster.bootstrap, topic, after)
        assert consume(consumer, len(after)) == after
    finally:
        consumer.close()
        cluster.start(f"broker-{follower}")
        wait_until(lambda: len(admin(cluster.bootstrap).list_topics(timeout=5).brokers) == 3,
                   what="the killed follower back", ignoring=Exception)
    assert consumer_bytes_out(cluster, leader, topic) > sum(map(len, after))


@pytest.mark.skipif(NODE is None, reason="node not found: kafkajs needs Node.js >= 14")
def test_a_kafkajs_consumer_reads_from_the_follower_in_its_rack(cluster: Cluster) -> None:
    topic, leader, follower = replicated_topic(cluster)
    values = [f"js-{i}".encode() for i in range(200)]
    produce_values(cluster.bootstrap, topic, values)
    (result,), log = run_kafkajs(cluster.bootstrap, {"op": "consume", "args": {
        "groupId": f"g-{uuid.uuid4().hex[:8]}", "topic": topic, "count": len(values),
        "rackId": RACKS[follower - 1]}})
    assert "error" not in result, (result, log)
    assert [base64.b64decode(r["value"]["base64"]) for r in result["ok"]] == values
    assert consumer_bytes_out(cluster, follower, topic) > sum(map(len, values))
    assert consumer_bytes_out(cluster, leader, topic) == 0
