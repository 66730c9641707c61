"""The Prometheus endpoint after real traffic: per-topic byte and message counters, request
counts and latency histograms, and log sizes, under the names Kafka's JMX exporter uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import TopicPartition

from tests.integration.broker_metrics import increase, sample, scrape
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import TIMEOUT as CLIENT_TIMEOUT
from tests.integration.clients import create_topic, unique
from tests.integration.groups import ConfluentGroup, fill
from tests.integration.raw_client import FETCH_VERSION, PRODUCE_VERSION, RawClient, batch_of
from tests.waiting import wait_until

TIMEOUT = 15.0
BATCHES = 5
RECORDS_PER_BATCH = 10
VALUE_SIZE = 200
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    raw = RawClient(broker.bootstrap)
    yield raw
    raw.close()


def test_produce_and_fetch_are_counted_per_topic_and_request(
    broker: BrokerProcess, client: RawClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("metrics"))
    batches = [
        batch_of([(f"key-{b}-{i}".encode(), bytes([65 + i]) * VALUE_SIZE)
                  for i in range(RECORDS_PER_BATCH)])
        for b in range(BATCHES)
    ]
    produced_bytes = sum(len(batch) for batch in batches)
    before = scrape(broker)

    for batch in batches:
        assert client.produce_partition(topic, 0, batch).error_code == 0
    fetched = client.fetch_partition(topic, 0, 0)
    after = scrape(broker)

    assert fetched.error_code == 0
    assert len(fetched.records) == produced_bytes  # stored as produced, one fetch returns all
    records = BATCHES * RECORDS_PER_BATCH
    assert sample(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == records
    bytes_in = sample(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert bytes_in == produced_bytes >= records * VALUE_SIZE
    bytes_out = sample(after, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
    assert bytes_out == produced_bytes > 0
    assert sample(after, "kafka_log_log_size", topic=topic, partition="0") == produced_bytes

    requests = "kafka_network_requestmetrics_requests_total"
    assert increase(before, after, requests, request="Produce",
                    version=str(PRODUCE_VERSION)) == BATCHES
    assert increase(before, after, requests, request="Fetch", version=str(FETCH_VERSION)) == 1

    fetch_count = sample(after, "kafka_network_requestmetrics_totaltimems_count", request="Fetch")
    assert increase(before, after, "kafka_network_requestmetrics_totaltimems_count",
                    request="Fetch") == 1
    assert sample(after, "kafka_network_requestmetrics_totaltimems_bucket",
                  request="Fetch", le="+Inf") == fetch_count
    assert sample(after, "kafka_network_requestmetrics_totaltimems_sum", request="Fetch") > 0
    buckets = sorted(
        (float(dict(labels)["le"]), value)
        for (name, labels), value in after.items()
        if name == "kafka_network_requestmetrics_totaltimems_bucket"
        and dict(labels)["request"] == "Fetch"
    )
    counts = [value for _, value in buckets]
    assert len(buckets) > 2 and counts == sorted(counts)  # cumulative


def test_rejected_produce_is_counted_as_failed_and_not_as_messages_in(
    broker: BrokerProcess, client: RawClient
) -> None:
    topic = create_topic(broker.bootstrap, unique("metrics"))
    good = batch_of([(None, b"v" * VALUE_SIZE)])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF

    before = scrape(broker)
    assert client.produce_partition(topic, 0, good).error_code == 0
    assert client.produce_partition(topic, 0, bytes(corrupt)).error_code == CORRUPT_MESSAGE
    assert client.produce_partition(topic, 7, good).error_code == UNKNOWN_TOPIC_OR_PARTITION
    after = scrape(broker)
    errors = "kafka_network_requestmetrics_errors_total"
    assert increase(before, after, errors, request="Produce", error="CORRUPT_MESSAGE") == 1
    assert increase(
        before, after, errors, request="Produce", error="UNKNOWN_TOPIC_OR_PARTITION"
    ) == 1

    assert sample(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 1
    assert sample(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == len(good)
    assert sample(after, "kafka_server_brokertopicmetrics_failedproducerequests_total",
                  topic=topic) == 2
    assert sample(after, "kafka_log_log_size", topic=topic, partition="0") == len(good)


def test_group_counts_rebalances_and_lag(broker: BrokerProcess) -> None:
    topic = create_topic(broker.bootstrap, unique("metrics"))
    fill(broker.bootstrap, topic, 1, 30)
    before = scrape(broker)
    groups = {}
    for protocol in ("classic", "consumer"):
        group = ConfluentGroup(broker.bootstrap, unique(protocol), topic,
                               **{"group.protocol": protocol})
        member = group.add("c0")
        wait_until(lambda m=member: len(m.reads) >= 30, CLIENT_TIMEOUT, "records",
                   between=group.poll)
        member.client.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
        groups[protocol] = group
    fill(broker.bootstrap, topic, 1, 5)
    after = scrape(broker)
    for protocol, group in groups.items():
        labels = {"consumergroup": group.group, "topic": topic, "partition": "0"}
        assert sample(after, "kafka_consumergroup_current_offset", **labels) == 10
        assert sample(after, "kafka_consumergroup_lag", **labels) == 35 - 10
        assert sample(after, "kafka_consumergroup_lag_sum", consumergroup=group.group,
                      topic=topic) == 25
        assert sample(after, "kafka_consumergroup_members", consumergroup=group.group) == 1
        assert increase(before, after,
                        "kafka_server_group_coordinator_metrics_group_rebalance_total",
                        protocol=protocol) >= 1
        assert increase(before, after,
                        "kafka_server_group_coordinator_metrics_rebalance_time_ms_count",
                        protocol=protocol) >= 1
    assert sample(after, "kafka_server_group_coordinator_metrics_consumer_group_count",
                  state="stable") >= 1
    assert sample(after, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") >= 1
    assert sample(after, "kafka_server_group_coordinator_metrics_group_count",
                  protocol="consumer") >= 1
    for group in groups.values():
        group.close_all()


def test_controller_and_raft_metrics_of_the_combined_node(broker: BrokerProcess) -> None:
    before = scrape(broker)
    create_topic(broker.bootstrap, unique("metrics"))
    after = scrape(broker)

    controller = "kafka_controller_kafkacontroller_"
    assert sample(after, controller + "activecontrollercount") == 1
    assert sample(after, controller + "fencedbrokercount") == 0
    assert sample(after, controller + "activebrokercount") == 1
    assert sample(after, controller + "offlinepartitionscount") == 0
    assert increase(before, after, controller + "globalpartitioncount") == 1
    assert sample(after, "kafka_server_raftmetrics_current_state", current_state="leader") == 1
    assert ("kafka_server_raftmetrics_current_state",
            frozenset({("current_state", "follower")})) not in after  # one state, Kafka's way
    assert sample(after, "kafka_server_raftmetrics_current_vote") == 1
    assert sample(after, "kafka_server_raftmetrics_current_leader") == 1
    assert increase(before, after, "kafka_server_raftmetrics_high_watermark") >= 1
    assert sample(after, "kafka_server_raftmetrics_log_end_offset") == sample(
        after, "kafka_server_raftmetrics_high_watermark")
    assert sample(after, "kafka_server_raftmetrics_commit_latency_max") > 0
    applied = sample(after, "kafka_server_brokermetadatametrics_last_applied_record_offset")
    assert applied == sample(after, "kafka_server_raftmetrics_high_watermark")
    assert sample(after, "kafka_controller_controllerstats_uncleanleaderelections_total") == 0
    replicas = "kafka_server_replicamanager_"
    assert increase(before, after, replicas + "leadercount") == 1
    assert increase(before, after, replicas + "partitioncount") == 1
    assert sample(after, replicas + "underreplicatedpartitions") == 0
    assert sample(after, replicas + "underminisrpartitioncount") == 0
