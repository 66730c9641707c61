"""Strimzi's dashboards and rules against a real 3-controller, 3-broker cluster with traffic
and a lagging group: every kafka_* series they query (reference_kafka_series.txt, [kafka])
exists on some process with the labels the queries use, Kafka Exporter's series come from
exactly one process (the active controller), and values mean what Kafka's mean."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from tests.integration.broker_metrics import Samples, scrape_port
from tests.integration.clients import TIMEOUT as CLIENT_TIMEOUT
from tests.integration.clients import create_topic, unique
from tests.integration.cluster import (
    TIMEOUT,
    Cluster,
    admin,
    partitions,
    running_cluster,
)
from tests.integration.groups import ConfluentGroup, fill
from tests.integration.raw_client import RawClient, batch_of
from tests.integration.reference_series import is_exporter_series, reference_series
from tests.waiting import wait_until

PARTITIONS = 3
PER_PARTITION = 20
COMMITTED = 5
CORRUPT_MESSAGE = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("metric-names"), 3, 3, {
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "2000",
    }) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def traffic(cluster: Cluster) -> dict[str, Any]:
    """A replicated topic with records in every partition, read by a group whose one member
    committed only the first COMMITTED offsets of each partition and closed: a lagging,
    empty group."""
    topic = create_topic(cluster.bootstrap, unique("t"), PARTITIONS, replication=3)
    fill(cluster.bootstrap, topic, PARTITIONS, PER_PARTITION)
    group = ConfluentGroup(cluster.bootstrap, unique("lagging"), topic)
    member = group.add("c0")
    wait_until(lambda: len(member.reads) >= PARTITIONS * PER_PARTITION, CLIENT_TIMEOUT,
               "the group reads every record", between=group.poll)
    member.client.commit(offsets=[TopicPartition(topic, p, COMMITTED)
                                  for p in range(PARTITIONS)], asynchronous=False)
    group.close_all()
    return {"topic": topic, "group": group.group}


def nodes(cluster: Cluster, role: str | None = None) -> list[dict[str, Any]]:
    return [n for n in cluster.layout["nodes"] if role is None or n["role"] == role]


def scrape_all(cluster: Cluster, role: str | None = None) -> dict[str, Samples]:
    return {n["name"]: scrape_port(n["metrics_port"]) for n in nodes(cluster, role)}


def node_of(cluster: Cluster, broker_id: int) -> dict[str, Any]:
    return next(n for n in nodes(cluster, "broker") if n["id"] == broker_id)


def labelled(samples: Samples, name: str, **labels: str) -> list[float]:
    """Values of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return [value for (sample, have), value in samples.items()
            if sample == name and wanted <= have]


def one(samples: Samples, name: str, **labels: str) -> float:
    values = labelled(samples, name, **labels)
    assert len(values) == 1, f"{name}{labels}: {values}"
    return values[0]


def test_every_reference_series_exists_with_its_labels(cluster: Cluster,
                                                       traffic: dict[str, Any]) -> None:
    reference = reference_series("kafka")
    missing: list[str] = []

    def all_present() -> bool:
        label_sets: dict[str, list[set[str]]] = {}
        for samples in scrape_all(cluster).values():
            for name, labels in samples:
                label_sets.setdefault(name, []).append({label for label, _ in labels})
        missing[:] = [f"{name}{{{','.join(sorted(labels))}}}"
                      for name, labels in reference.items()
                      if not any(labels <= have for have in label_sets.get(name, []))]
        return not missing

    wait_until(all_present, TIMEOUT, lambda: f"reference series missing: {missing}")
    assert len(reference) == 47


def test_kafka_exporter_series_come_from_the_active_controller_alone(
        cluster: Cluster, traffic: dict[str, Any]) -> None:
    active = cluster.active_controller()
    by_node = scrape_all(cluster)
    exporters = {name: {n for n, samples in by_node.items()
                        if any(sample == name for sample, _ in samples)}
                 for name in {s for samples in by_node.values() for s, _ in samples
                              if is_exporter_series(s)}}
    assert {"kafka_broker_info", "kafka_topic_partitions", "kafka_consumergroup_lag",
            "kafka_topic_partition_current_offset"} <= exporters.keys()
    assert {name: {active} for name in exporters} == exporters


def test_kafka_exporter_values(cluster: Cluster, traffic: dict[str, Any]) -> None:
    topic, group = traffic["topic"], traffic["group"]
    live = ConfluentGroup(cluster.bootstrap, unique("live"), topic)
    member = live.add("c0")
    wait_until(lambda: bool(member.owned), CLIENT_TIMEOUT, "an assignment", between=live.poll)
    samples = scrape_port(cluster.node(cluster.active_controller())["metrics_port"])
    assert one(samples, "kafka_brokers") == 3
    addresses = {n["id"]: f"127.0.0.1:{n['port']}" for n in nodes(cluster, "broker")}
    assert {(dict(labels)["id"], dict(labels)["address"]) for name, labels in samples
            if name == "kafka_broker_info"} == {(str(i), a) for i, a in addresses.items()}
    assert one(samples, "kafka_topic_partitions", topic=topic) == PARTITIONS
    metadata = partitions(cluster.bootstrap, topic)
    for p in range(PARTITIONS):
        where = {"topic": topic, "partition": str(p)}
        assert one(samples, "kafka_topic_partition_current_offset", **where) == PER_PARTITION
        assert one(samples, "kafka_topic_partition_oldest_offset", **where) == 0
        assert one(samples, "kafka_topic_partition_replicas", **where) == 3
        assert one(samples, "kafka_topic_partition_in_sync_replica", **where) == 3
        assert one(samples, "kafka_topic_partition_leader", **where) == metadata[p].leader
        assert one(samples, "kafka_topic_partition_under_replicated_partition", **where) == 0
        of_group = {"consumergroup": group, **where}
        assert one(samples, "kafka_consumergroup_current_offset", **of_group) == COMMITTED
        assert one(samples, "kafka_consumergroup_lag", **of_group) == PER_PARTITION - COMMITTED
    assert one(samples, "kafka_consumergroup_lag_sum", consumergroup=group, topic=topic) == (
        PARTITIONS * (PER_PARTITION - COMMITTED))
    assert one(samples, "kafka_consumergroup_members", consumergroup=live.group) == 1
    assert one(samples, "kafka_consumergroup_members", consumergroup=group) == 0  # closed


def test_partition_gauges_are_reported_by_the_leader(cluster: Cluster,
                                                     traffic: dict[str, Any]) -> None:
    topic = traffic["topic"]
    metadata = partitions(cluster.bootstrap, topic)
    brokers = scrape_all(cluster, "broker")
    for p in range(PARTITIONS):
        where = {"topic": topic, "partition": str(p)}
        leader = node_of(cluster, metadata[p].leader)["name"]
        counts = {name: one(samples, "kafka_cluster_partition_replicascount", **where)
                  for name, samples in brokers.items()}
        assert counts == {name: 3 if name == leader else 0 for name in brokers}
        assert one(brokers[leader], "kafka_cluster_partition_insyncreplicascount", **where) == 3
        # min.insync.replicas is 1 (Kafka's default): the ISR of 3 is above it
        assert one(brokers[leader], "kafka_cluster_partition_atminisr", **where) == 0
        assert one(brokers[leader], "kafka_cluster_partition_underminisr", **where) == 0


def test_produce_and_fetch_requests_are_counted_per_partition(cluster: Cluster,
                                                              traffic: dict[str, Any]) -> None:
    topic = traffic["topic"]
    leader = node_of(cluster, partitions(cluster.bootstrap, topic)[0].leader)
    good = batch_of([(None, b"v" * 100)])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    client = RawClient(f"127.0.0.1:{leader['port']}")
    try:
        before = scrape_port(leader["metrics_port"])
        assert client.produce_partition(topic, 0, good).error_code == 0
        assert client.produce_partition(topic, 0, bytes(corrupt)).error_code == CORRUPT_MESSAGE
        assert client.fetch_partition(topic, 0, 0).error_code == 0
        after = scrape_port(leader["metrics_port"])
        assert one(after, "kafka_server_socket_server_metrics_connection_count",
                   listener="PLAINTEXT") >= 1
    finally:
        client.close()
    prefix = "kafka_server_brokertopicmetrics_"

    def moved(name: str) -> float:
        return one(after, prefix + name, topic=topic) - one(before, prefix + name, topic=topic)

    assert moved("totalproducerequests_total") == 2
    assert moved("failedproducerequests_total") == 1
    assert moved("messagesin_total") == 1
    assert moved("totalfetchrequests_total") >= 1  # followers fetch the partition too
    assert moved("failedfetchrequests_total") == 0


def test_raft_and_process_health_figures(cluster: Cluster, traffic: dict[str, Any]) -> None:
    active = cluster.active_controller()
    create_topic(cluster.bootstrap, unique("t"), 1, replication=3)
    controllers = scrape_all(cluster, "controller")
    for name, samples in controllers.items():
        state = "leader" if name == active else "follower"
        assert labelled(samples, "kafka_server_raftmetrics_current_state") == [1]
        assert one(samples, "kafka_server_raftmetrics_current_state", current_state=state) == 1
        assert one(samples, "kafka_server_raftchannelmetrics_request_total") > 0
        assert one(samples, "kafka_server_raftchannelmetrics_response_total") > 0
        assert one(samples, "kafka_server_raftchannelmetrics_outgoing_byte_total") > 0
        assert one(samples, "kafka_server_raftchannelmetrics_incoming_byte_total") > 0
        rate = "append_records_rate" if name == active else "fetch_records_rate"
        assert one(samples, "kafka_server_raftmetrics_" + rate) > 0
    leader = controllers[active]
    assert one(leader, "kafka_server_raftmetrics_current_vote") == cluster.node(active)["id"]
    high_watermark = one(leader, "kafka_server_raftmetrics_high_watermark")

    def applied_everywhere() -> bool:
        return all(one(samples, "kafka_server_brokermetadatametrics_last_applied_record_offset")
                   >= high_watermark for samples in scrape_all(cluster, "broker").values())

    wait_until(applied_everywhere, TIMEOUT, "every broker applies the metadata log")
    for samples in scrape_all(cluster).values():
        for name in ("kafka_network_socketserver_networkprocessoravgidle_percent",
                     "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent"):
            assert 0 <= one(samples, name) <= 1
        assert one(samples, "process_open_fds") > 0
        assert one(samples, "process_resident_memory_bytes") > 0
        assert one(samples, "odradek_event_loop_lag_seconds_count") > 0


def test_a_stopped_replica_puts_a_min_isr_3_partition_under_min_isr(
        cluster: Cluster, traffic: dict[str, Any]) -> None:
    topic = f"min-isr-{unique('t')}"
    client = admin(cluster.bootstrap)
    client.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "3"})]
                         )[topic].result(TIMEOUT)
    where = {"topic": topic, "partition": "0"}
    record = partitions(cluster.bootstrap, topic)[0]
    leader = node_of(cluster, record.leader)
    follower = node_of(cluster, next(r for r in record.replicas if r != record.leader))

    def figures() -> tuple[float, float, float]:
        samples = scrape_port(leader["metrics_port"])
        return (one(samples, "kafka_cluster_partition_underminisr", **where),
                one(samples, "kafka_cluster_partition_atminisr", **where),
                one(samples, "kafka_server_replicamanager_underminisrpartitioncount"))

    # the leader reports the partition once it has applied the topic
    wait_until(lambda: figures() == (0, 1, 0), TIMEOUT, lambda: f"at min ISR: {figures()}",
               ignoring=AssertionError)
    cluster.stop(follower["name"])
    try:
        wait_until(lambda: figures() == (1, 0, 1), TIMEOUT,
                   lambda: f"under min ISR once a replica stops: {figures()}")
    finally:
        cluster.start(follower["name"])
    wait_until(lambda: figures() == (0, 1, 0), TIMEOUT, lambda: f"back at min ISR: {figures()}")
