"""Client quotas against a real `odradek dev` broker: set and described with `odradek configs`
(AlterClientQuotas / DescribeClientQuotas), enforced on real clients. A producer over
producer_byte_rate and a consumer over consumer_byte_rate are held to their quota and told their
throttle time. The quota is set from an unlimited client measured first in the same run (a
quarter of its rate, at most QUOTA), so that a loaded machine cannot close the gap between
the two clients that the test relies on; a
throttled connection is muted for the throttle time it was told (KIP-219); the quota
gauges carry Kafka's names; topic mutations past controller_mutation_rate are refused.

The broker keeps 3 quota windows of 1 s (quota.window.num, controller.quota.window.num), so
that a client's first burst allowance is short; rates are measured after it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kio.schema.errors import ErrorCode

from odradek.net.kafka_client import KafkaCluster
from odradek.protocol.codec import build_request
from tests.integration.broker_metrics import sample, scrape
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import confluent_consumer, create_topic, unique
from tests.integration.raw_client import RawClient, batch_of
from tests.waiting import wait_until

pytestmark = pytest.mark.quotas

QUOTA = 256 * 1024
"""The most bytes per second a throttled client is given."""
RECORD = b"q" * 1000
WARMUP_S = 3.0
"""The first seconds of a run, which the first burst allowance (2 windows) distorts."""
MEASURED_S = 12
"""Seconds of a throttled client's traffic measured."""
MEASURED_BYTES = MEASURED_S * QUOTA
"""What an unlimited client writes or reads: MEASURED_S at the largest quota."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("quotas")
    process = BrokerProcess(root / "data", root / "broker.log",
                            {"quota.window.num": "3", "quota.window.size.seconds": "1",
                             "controller.quota.window.num": "3"})
    process.start()
    yield process
    if process.alive():
        process.stop()


def configs(broker: BrokerProcess, *args: str) -> str:
    """`odradek configs` (over the broker's PLAINTEXT listener); its output."""
    result = subprocess.run([*ODRADEK, "configs", *args, "--bootstrap-server", broker.bootstrap],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def set_client_quota(broker: BrokerProcess, client_id: str, quota: str) -> None:
    assert configs(broker, "alter", "--entity-type", "clients", "--entity-name", client_id,
                   "--add-config", quota) == f"Completed updating config for client {client_id}.\n"


def rate_after_warmup(deliveries: list[tuple[float, int]]) -> float:
    """Bytes per second delivered from WARMUP_S after the first delivery to the last; for a
    client done sooner, over its whole run."""
    first = deliveries[0][0]
    last = deliveries[-1][0]
    warmup = WARMUP_S if last - first > 2 * WARMUP_S else 0.0
    measured = sum(size for at, size in deliveries if at >= first + warmup)
    return measured / max(last - first - warmup, 1e-3)


def quota_below(unlimited_rate: float) -> int:
    """The quota for a throttled client: a quarter of the unlimited client's rate in this
    run, at most QUOTA."""
    return int(min(QUOTA, unlimited_rate / 4))


def assert_held_to_quota(rate: float, quota: int, unlimited_rate: float) -> None:
    figures = (f"throttled {rate / quota:.2f} × quota, unlimited {unlimited_rate / quota:.2f} "
               f"× quota ({quota} B/s)")
    assert 0.75 <= rate / quota <= 1.25, figures


def apply_quota(broker: BrokerProcess, entity: list[str], kind: str, quota: int) -> None:
    """Sets `kind` (producer_byte_rate, consumer_byte_rate) to `quota` for `entity` (configs'
    entity options) and waits until this broker's image has it: DescribeClientQuotas is
    answered from it, with the value as Kafka prints a double."""
    configs(broker, "alter", *entity, "--add-config", f"{kind}={quota}")
    wait_until(lambda: f"{kind}={float(quota)}" in configs(broker, "describe", *entity), 30,
               f"the broker applying {kind}={quota} to {entity}")


def produce_for_rate(bootstrap: str, topic: str, client_id: str, total: int,
                     **config: str) -> tuple[float, int]:
    """Produce `total` bytes as fast as the client may (with `config`, e.g. SASL's); its
    delivered bytes per second after the warmup, and the largest throttle time librdkafka
    was told."""
    deliveries: list[tuple[float, int]] = []
    throttles: list[int] = []

    def stats(text: str) -> None:
        throttles.extend(b["throttle"]["max"] for b in json.loads(text)["brokers"].values()
                         if b["nodeid"] >= 0)

    def delivered(error: object, message: object) -> None:
        assert error is None, error
        deliveries.append((time.monotonic(), len(RECORD)))

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id,
                         "linger.ms": 5, "batch.size": 65536,
                         "queue.buffering.max.kbytes": 512, "statistics.interval.ms": 500,
                         "stats_cb": stats, **config})
    queued = 0
    while queued < total:
        try:
            producer.produce(topic, RECORD, on_delivery=delivered)
            queued += len(RECORD)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    wait_until(lambda: throttles, 10, "a statistics report", between=lambda: producer.poll(0.1))
    return rate_after_warmup(deliveries), max(throttles)


def test_configs_alters_and_describes_client_quotas(broker: BrokerProcess) -> None:
    user_client = ["--entity-type", "users", "--entity-name", "alice",
                   "--entity-type", "clients", "--entity-default"]
    assert configs(broker, "alter", *user_client, "--add-config",
                   "request_percentage=250.5,controller_mutation_rate=10") == \
        "Completed updating config for user alice.\n"
    assert configs(broker, "alter", "--user-defaults", "--add-config",
                   "consumer_byte_rate=1073741824") == \
        "Completed updating default config for users in the cluster.\n"
    assert configs(broker, "describe", *user_client) == (
        "Quota configs for user-principal 'alice', the default client-id are "
        "controller_mutation_rate=10.0, request_percentage=250.5\n")
    assert configs(broker, "describe", "--entity-type", "users") == (
        "Quota configs for the default user-principal are consumer_byte_rate=1.073741824E9\n")
    configs(broker, "alter", *user_client, "--delete-config", "request_percentage")
    configs(broker, "alter", "--user-defaults", "--delete-config", "consumer_byte_rate")
    assert configs(broker, "describe", "--entity-type", "users", "--entity-type", "clients") \
        == ("Quota configs for user-principal 'alice', the default client-id are "
            "controller_mutation_rate=10.0\n")
    configs(broker, "alter", *user_client, "--delete-config", "controller_mutation_rate")
    # kafka-configs prints nothing when no entity has quotas
    assert configs(broker, "describe", "--entity-type", "users", "--entity-type", "clients") \
        == ""


def test_bad_quota_alterations_fail_with_the_brokers_reason(broker: BrokerProcess) -> None:
    result = subprocess.run([*ODRADEK, "configs", "alter", "--client", "c", "--add-config",
                             "producer_byte_rate=0.5", "--bootstrap-server", broker.bootstrap],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        "odradek configs: altering the quotas of client c: INVALID_REQUEST: "
        "producer_byte_rate cannot be a fractional value."]


def test_a_producer_is_held_to_its_producer_byte_rate(broker: BrokerProcess) -> None:
    topic = unique("quota-produce")
    create_topic(broker.bootstrap, topic)
    unlimited_rate, unlimited_throttle = produce_for_rate(broker.bootstrap, topic,
                                                          unique("free"), MEASURED_BYTES)
    throttled = unique("slow-producer")
    quota = quota_below(unlimited_rate)
    apply_quota(broker, ["--client", throttled], "producer_byte_rate", quota)
    rate, throttle = produce_for_rate(broker.bootstrap, topic, throttled, MEASURED_S * quota)
    assert_held_to_quota(rate, quota, unlimited_rate)
    assert throttle > 0 and unlimited_throttle == 0
    gauges = scrape(broker)
    assert sample(gauges, "kafka_server_quota_byte_rate", resource="Produce", user="",
                  clientId=throttled) > 0
    assert sample(gauges, "kafka_server_quota_throttle_time", resource="Produce", user="",
                  clientId=throttled) > 0


def test_a_consumer_is_held_to_its_consumer_byte_rate(broker: BrokerProcess) -> None:
    topic = unique("quota-fetch")
    create_topic(broker.bootstrap, topic)
    produce_for_rate(broker.bootstrap, topic, unique("loader"), MEASURED_BYTES)

    def consume(client_id: str, total: int) -> tuple[float, int]:
        throttles: list[int] = []
        consumer = confluent_consumer(
            broker.bootstrap, **{"client.id": client_id, "auto.offset.reset": "earliest",
                                 "max.partition.fetch.bytes": 65536,
                                 "queued.max.messages.kbytes": 128,
                                 "statistics.interval.ms": 500,
                                 "stats_cb": lambda text: throttles.extend(
                                     b["throttle"]["max"]
                                     for b in json.loads(text)["brokers"].values()
                                     if b["nodeid"] >= 0)})
        consumer.subscribe([topic])
        deliveries: list[tuple[float, int]] = []
        received = [0]

        def poll() -> None:
            for message in consumer.consume(1000, 0.1):
                if message.error() is None:
                    deliveries.append((time.monotonic(), len(message.value() or b"")))
                    received[0] += len(message.value() or b"")

        try:
            wait_until(lambda: received[0] >= total, 90,
                       "every record consumed", between=poll)
            wait_until(lambda: throttles, 10, "a statistics report", between=poll)
        finally:
            consumer.close()
        return rate_after_warmup(deliveries), max(throttles)

    unlimited_rate, _ = consume(unique("free-consumer"), MEASURED_BYTES)
    throttled = unique("slow-consumer")
    quota = quota_below(unlimited_rate)
    apply_quota(broker, ["--client", throttled], "consumer_byte_rate", quota)
    rate, throttle = consume(throttled, MEASURED_S * quota)
    assert_held_to_quota(rate, quota, unlimited_rate)
    assert throttle > 0
    assert sample(scrape(broker), "kafka_server_quota_byte_rate", resource="Fetch", user="",
                  clientId=throttled) > 0


def test_a_throttled_connection_is_muted_for_the_time_it_was_told(
        broker: BrokerProcess, tmp_path: Path) -> None:
    """KIP-219: the response comes at once with throttle_time_ms, then the broker reads
    nothing more from the connection until that time has passed."""
    topic = unique("quota-mute")
    create_topic(broker.bootstrap, topic)
    set_client_quota(broker, "raw", "producer_byte_rate=5000")  # RawClient's client id
    raw = RawClient(broker.bootstrap)
    try:
        records = batch_of([(None, b"m" * 20_000)])
        request = ProduceRequest[9](
            transactional_id=None, acks=1, timeout_ms=10_000,
            topic_data=[ProduceRequest.TopicProduceData(
                name=topic, partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0,
                                                                        records=records)])])
        response = raw.request(request, ProduceResponse, 9)
        answered = time.monotonic()
        assert response.responses[0].partition_responses[0].error_code == 0
        throttle_ms = response.throttle_time_ms
        assert throttle_ms > 1000
        raw.request(ApiVersionsRequest[0](), ApiVersionsResponse, 0)
        assert time.monotonic() - answered >= throttle_ms / 1000 * 0.9
    finally:
        raw.close()
        configs(broker, "alter", "--client", "raw", "--delete-config", "producer_byte_rate")


def test_topic_mutations_past_controller_mutation_rate_are_refused(
        broker: BrokerProcess) -> None:
    """KIP-599: CreateTopics v6+ and DeleteTopics v5+ over the quota get
    THROTTLING_QUOTA_EXCEEDED and the time until the bucket refills; nothing is created or
    deleted. With 3 windows of 1 s, a rate of 1 partition/s allows a burst of 3: 10
    partitions empty the bucket for 7 s."""
    client_id = unique("mutator")
    set_client_quota(broker, client_id, "controller_mutation_rate=1")
    first, second = unique("mutated"), unique("refused")

    async def mutate() -> tuple[Any, Any, Any]:
        host, port = broker.bootstrap.split(":")
        # two connections: the first is muted for the throttle time once answered
        creating, deleting = (KafkaCluster([(host, int(port))], client_id, 10)
                              for _ in range(2))
        try:
            created = await creating.send(build_request(19, 7, {"timeout": 10_000, "topics": [
                {"name": name, "num_partitions": partitions, "replication_factor": 1}
                for name, partitions in ((first, 10), (second, 1))]}))
            deleted = await deleting.send(build_request(20, 6, {"timeout": 10_000, "topics": [
                {"name": first}]}))
            metadata = await deleting.metadata([first, second])
        finally:
            creating.close()
            deleting.close()
        return created, deleted, metadata

    created, deleted, metadata = asyncio.run(mutate())
    assert [(t.name, t.error_code) for t in created.topics] == [
        (first, ErrorCode.none), (second, ErrorCode.throttling_quota_exceeded)]
    assert created.throttle_time.total_seconds() > 0
    assert deleted.responses[0].error_code == ErrorCode.throttling_quota_exceeded
    assert deleted.throttle_time.total_seconds() > 0
    assert {t.name: t.error_code for t in metadata.topics} == {
        first: ErrorCode.none, second: ErrorCode.unknown_topic_or_partition}
