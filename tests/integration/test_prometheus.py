"""observability/ against a real Prometheus (Debian's binary) scraping a real 3-controller,
3-broker `odradek cluster` with traffic and a lagging consumer group:

- every panel query of every dashboard parses and returns series (the mirror dashboard's
  from `odradek mirror` copying a topic and a group's offsets into this cluster from an
  `odradek dev` source);
- every kafka_* series of Strimzi's dashboards and rules (reference_kafka_series.txt,
  section [kafka]) is exported with the labels those queries use;
- alerts fire: consumer lag that grows, a stopped broker (UnderReplicatedPartitions), a
  broker paused past its session (FencedBrokers), a mirror audit run with a failed bucket
  (MirrorAuditDiscrepancy; the run is written to odradek-audit by the audit job's own
  publishing code, so the audit dashboard's panels have series too).

Prometheus loads observability/prometheus/prometheus-local.yml with this cluster's targets
and 1 s intervals, and the rule files with every alert's `for` removed (written by
`without_for`), so an alert fires as soon as its condition holds; the `for` durations are
covered by the promtool unit tests beside the rules."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from odradek.cli.cluster.layout import free_port
from odradek.spark.audit import _publish
from odradek.spark.audit_contract import AUDIT_TOPIC
from tests import observability as obs
from tests.audit_runs import audit_run
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    Out,
    create_topic,
    produce_confluent,
    read_confluent,
    receive,
)
from tests.integration.cluster import Cluster, running_cluster
from tests.integration.mirror_process import MirrorProcess, properties
from tests.integration.reference_series import reference_series
from tests.waiting import wait_until

pytestmark = pytest.mark.prometheus

CLUSTER = "obsdash"
"""The `cluster` label of this test's targets."""
OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "2000",
    "offsets.topic.num.partitions": "3",
}
TOPIC = "obs-orders"
GROUP = "obs-lagging"
RECORDS = 1500
CONSUMED = 100
"""The group commits after at least this many records, leaving over 1000 (the lag alert's
threshold) behind."""
MIRRORED = "obs-source-orders"
MIRROR_SOURCE = "src"
TIMEOUT = 60.0


class Prometheus:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.process, self.log = url, process, log

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:  # a bad query: 400 with the error in JSON
            return json.load(error)

    def query(self, expr: str) -> list[dict[str, Any]]:
        answer = self.get("/api/v1/query", query=expr)
        assert answer["status"] == "success", f"{expr}: {answer.get('error')}"
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def firing(self, alertname: str, **labels: str) -> list[dict[str, Any]]:
        wanted = {"alertname": alertname, **labels}
        return [alert for alert in self.get("/api/v1/alerts")["data"]["alerts"]
                if alert["state"] == "firing"
                and wanted.items() <= alert["labels"].items()]

    def targets_up(self) -> bool:
        active = self.get("/api/v1/targets", state="active")["data"]["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("prometheus-cluster"), 3, 3,
                         OVERRIDES) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def traffic(cluster: Cluster) -> None:
    """A topic with records, a group that read some and fell behind, and one error reply."""
    create_topic(cluster.bootstrap, TOPIC, 3, replication=3)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        create_topic(cluster.bootstrap, TOPIC, 3, replication=3)
    produce(cluster, RECORDS)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    consumed = 0

    def read() -> bool:
        nonlocal consumed
        consumed += len([m for m in consumer.consume(CONSUMED, 1.0) if not m.error()])
        return consumed >= CONSUMED

    wait_until(read, TIMEOUT, "the group to read some records")
    # Every partition gets a commit (its position, or 0 where it read nothing), so that
    # every partition has a lag.
    positions = consumer.position(consumer.assignment())
    consumer.commit(offsets=[TopicPartition(p.topic, p.partition, max(p.offset, 0))
                             for p in positions], asynchronous=False)
    consumer.close()


@pytest.fixture(scope="module")
def audit_results(cluster: Cluster) -> None:
    """A mirror audit run, just now, that found records of one bucket missing."""
    _publish(cluster.bootstrap, AUDIT_TOPIC, audit_run(
        int(time.time() * 1000), (TOPIC, 0, 100, 100), (TOPIC, 600_000, 100, 90)), {})


def produce(cluster: Cluster, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(TOPIC, key=str(i).encode(), value=b"v" * 100)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def mirror(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[MirrorProcess]:
    """`odradek mirror` into this cluster (a mirror's `cluster` label is its target's) from
    an `odradek dev` source holding a topic and a group that committed part of it."""
    root = tmp_path_factory.mktemp("mirror-source")
    source = BrokerProcess(root / "data", root / "broker.log")
    source.start()
    flow = f"{MIRROR_SOURCE}->{CLUSTER}"
    process = MirrorProcess(root / "mirror", properties(
        {MIRROR_SOURCE: source.bootstrap, CLUSTER: cluster.bootstrap},
        **{f"{flow}.enabled": "true", f"{flow}.topics": MIRRORED, "groups": ".*"}))
    try:
        create_topic(source.bootstrap, MIRRORED, 2)
        produce_confluent(source.bootstrap, MIRRORED, [
            Out(f"k{i}".encode(), b"v", int(time.time() * 1000), (), i % 2)
            for i in range(200)])
        consumer = Consumer({"bootstrap.servers": source.bootstrap, "group.id": MIRRORED,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([MIRRORED])
        receive(consumer, 50)
        consumer.commit(asynchronous=False)
        consumer.close()
        process.start()
        wait_until(lambda: len(read_confluent(cluster.bootstrap, f"{MIRROR_SOURCE}.{MIRRORED}",
                                              partitions=(0, 1))) == 200, TIMEOUT,
                   lambda: f"mirrored\n{process.logs()[-3000:]}", ignoring=KafkaException)
        yield process
    finally:
        if process.process is not None:
            process.stop()
        source.stop()


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, traffic: None, audit_results: None, mirror: MirrorProcess,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    home = tmp_path_factory.mktemp("prometheus")
    (home / "rules").mkdir()
    for path in obs.RULES:
        (home / "rules" / path.name).write_text(obs.without_for(path))
    config = obs.load_yaml(obs.LOCAL_CONFIG)
    config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s",
                        "evaluation_interval": "1s"}
    config["scrape_configs"][0]["static_configs"] = [
        *obs.static_configs(cluster.layout["nodes"], CLUSTER),
        {"targets": [f"127.0.0.1:{mirror.metrics_port}"],
         "labels": {"cluster": CLUSTER, "instance": "mirror", "role": "mirror"}}]
    (home / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    log = home / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [obs.binary("prometheus"), f"--config.file={home / 'prometheus.yml'}",
             f"--storage.tsdb.path={home / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT)
    server = Prometheus(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_until(server.targets_up, TIMEOUT,
                   lambda: f"every target up:\n{log.read_text()[-3000:]}",
                   ignoring=(OSError, KeyError, ValueError))
        # Three scrapes of every target (rates need two samples), and the rules evaluated.
        wait_until(lambda: server.query(
            f'min(count_over_time(up{{cluster="{CLUSTER}"}}[1m])) >= 3')
            and server.query(f'cluster_consumergroup:kafka_consumergroup_lag:sum'
                             f'{{cluster="{CLUSTER}"}}'), TIMEOUT, "samples and rules")
        yield server
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize("query", obs.panel_queries(), ids=lambda q: q.id)
def test_panel_query_returns_series(prometheus: Prometheus, query: obs.PanelQuery) -> None:
    result = prometheus.query(obs.substitute(query.expr, CLUSTER))
    assert result, f"no series for {query.expr}"


def test_every_reference_kafka_series_is_exported(prometheus: Prometheus) -> None:
    expected = reference_series("kafka")
    missing = []
    for name, labels in sorted(expected.items()):
        matchers = "".join(f',{label}!=""' for label in sorted(labels))
        if not prometheus.query(f'{{__name__="{name}",cluster="{CLUSTER}"{matchers}}}'):
            missing.append(" ".join([name, *sorted(labels)]))
    assert missing == [], f"{len(missing)} of {len(expected)} reference series missing"


def test_lag_alert_fires_when_a_group_falls_further_behind(prometheus: Prometheus,
                                                             cluster: Cluster) -> None:
    lag = prometheus.query(f'cluster_consumergroup:kafka_consumergroup_lag:sum'
                           f'{{cluster="{CLUSTER}",consumergroup="{GROUP}"}}')
    assert lag and float(lag[0]["value"][1]) > 1000
    assert not prometheus.firing("ConsumerGroupLagGrowing", consumergroup=GROUP), \
        "a lag that does not grow"
    wait_until(lambda: prometheus.firing("ConsumerGroupLagGrowing", cluster=CLUSTER,
                                         consumergroup=GROUP),
               TIMEOUT, "ConsumerGroupLagGrowing firing", between=lambda: produce(cluster, 200))


def fires_during_fault(prometheus: Prometheus, alertname: str, fault: Callable[[], None],
                      repair: Callable[[], None]) -> None:
    """`alertname` is silent (an earlier test's fault may take a while to clear: a broker
    started again is unfenced once it caught up), then fires for this cluster once `fault`
    is done; `repair` undoes the fault whatever happens."""
    wait_until(lambda: not prometheus.firing(alertname, cluster=CLUSTER), TIMEOUT,
               f"{alertname} silent before the fault")
    fault()
    try:
        wait_until(lambda: prometheus.firing(alertname, cluster=CLUSTER), TIMEOUT,
                   f"{alertname} firing")
    finally:
        repair()


def test_under_replicated_alert_fires_when_a_broker_stops(prometheus: Prometheus,
                                                          cluster: Cluster) -> None:
    fires_during_fault(prometheus, "UnderReplicatedPartitions",
                       lambda: cluster.stop("broker-3"), lambda: cluster.start("broker-3"))
    wait_until(lambda: not prometheus.firing("UnderReplicatedPartitions", cluster=CLUSTER)
               and prometheus.targets_up(), TIMEOUT, "broker-3 back in every ISR")


def test_fenced_broker_alert_fires_when_a_broker_pauses_past_its_session(
        prometheus: Prometheus, cluster: Cluster) -> None:
    fires_during_fault(prometheus, "FencedBrokers",
                       lambda: cluster.pause("broker-2"), lambda: cluster.resume("broker-2"))


def test_audit_discrepancy_alert_fires_on_a_failed_bucket(prometheus: Prometheus) -> None:
    wait_until(lambda: prometheus.firing("MirrorAuditDiscrepancy", cluster=CLUSTER,
                                         topic=TOPIC), TIMEOUT, "MirrorAuditDiscrepancy firing")
    assert not prometheus.firing("MirrorAuditStale", cluster=CLUSTER), "a run just now"
