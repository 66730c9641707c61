"""The latest mirror audit results on /metrics: audit runs written to `odradek-audit` by the
audit job's own publishing code (odradek.spark.audit._publish) on a real `odradek dev`,
whose active controller exports them (odradek_audit_*) when scraped."""

from __future__ import annotations

from confluent_kafka import Producer

from odradek.exporter.audit_series import BUCKETS, EXTRA_RECORDS, LAST_RUN, MISSING_RECORDS
from odradek.spark.audit import _publish
from odradek.spark.audit_contract import AUDIT_TOPIC
from tests.audit_runs import audit_run
from tests.integration.broker_metrics import Samples, sample, scrape
from tests.integration.broker_process import BrokerProcess
from tests.waiting import wait_until

TIMEOUT = 30.0


def audit_samples(broker: BrokerProcess) -> Samples:
    return {key: value for key, value in scrape(broker).items()
            if key[0].startswith("odradek_audit_")}


def buckets(samples: Samples, topic: str, status: str, in_grace: str = "false") -> float:
    return sample(samples, BUCKETS, topic=topic, status=status, in_grace=in_grace)


def test_no_audit_series_before_a_first_run(broker: BrokerProcess) -> None:
    samples = scrape(broker)
    assert sample(samples, "kafka_brokers") == 1, "the controller's exporter serves"
    assert audit_samples(broker) == {}


def test_the_latest_run_is_exported_and_a_newer_run_replaces_it(
        broker: BrokerProcess) -> None:
    _publish(broker.bootstrap, AUDIT_TOPIC, audit_run(
        1_700_000_000_000, ("orders", 0, 100, 100), ("orders", 600_000, 100, 97),
        ("orders", 1_200_000, 50, 52), ("orders", 1_800_000, 10, 4, True),
        ("payments", 0, 20, 20)), {})
    wait_until(lambda: audit_samples(broker), TIMEOUT, "audit series on /metrics")
    samples = audit_samples(broker)
    assert buckets(samples, "orders", "complete") == 1
    assert buckets(samples, "orders", "missing") == 1
    assert buckets(samples, "orders", "extra") == 1
    assert buckets(samples, "orders", "missing", in_grace="true") == 1
    assert buckets(samples, "payments", "complete") == 1
    assert buckets(samples, "payments", "mismatch") == 0
    assert sample(samples, MISSING_RECORDS, topic="orders") == 3
    assert sample(samples, EXTRA_RECORDS, topic="orders") == 2
    assert sample(samples, MISSING_RECORDS, topic="payments") == 0
    assert sample(samples, LAST_RUN) == 1_700_000_000

    # A newer run of orders re-audits two buckets, both complete now; a foreign record on
    # the topic is skipped.
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(AUDIT_TOPIC, key=b"not-an-audit-record", value=b"{")
    assert producer.flush(TIMEOUT) == 0
    _publish(broker.bootstrap, AUDIT_TOPIC, audit_run(
        1_700_003_600_000, ("orders", 600_000, 100, 100), ("orders", 1_200_000, 50, 50)), {})
    wait_until(lambda: sample(audit_samples(broker), LAST_RUN) == 1_700_003_600,
               TIMEOUT, "the newer run on /metrics")
    samples = audit_samples(broker)
    assert buckets(samples, "orders", "complete") == 2
    assert buckets(samples, "orders", "missing") == 0
    assert buckets(samples, "orders", "missing", in_grace="true") == 0
    assert sample(samples, MISSING_RECORDS, topic="orders") == 0
    assert sample(samples, EXTRA_RECORDS, topic="orders") == 0
    assert buckets(samples, "payments", "complete") == 1


def test_a_restarted_controller_reads_the_results_again(broker: BrokerProcess) -> None:
    before = audit_samples(broker)
    assert before
    broker.restart()
    wait_until(lambda: audit_samples(broker) == before, TIMEOUT,
               lambda: f"the same series after a restart: {audit_samples(broker)}",
               ignoring=OSError)
