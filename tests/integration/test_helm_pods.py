"""The pods the Helm chart renders, run on a real Docker engine (tests/integration/helm_pods.py
runs them as a kubelet would, as far as one engine can): three controllers and three brokers
of release `east` form a cluster; the brokers' init container reads their nodes' zones and
addresses from a stand-in API server (over TLS, with the service account's token), so each
broker has its node's zone as broker.rack and advertises its NodePort on its node's address;
the chart's own `helm test` Pod passes; a replication-factor-3 topic is still read in full
after one broker is killed; and the mirror Deployment of release `west` copies east to west.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.helm.chart import render
from tests.helm.fake_api import FakeApiServer, self_signed
from tests.integration.clients import (
    Out,
    confluent_consumer,
    now_ms,
    produce_confluent,
    read_confluent,
    receive,
    unique,
)
from tests.integration.cluster import TIMEOUT, admin, partitions
from tests.integration.compose_stack import ROOT, docker, engine_or_skip
from tests.integration.helm_pods import TAG, Api, PodRunner, build_images
from tests.waiting import wait_until

pytestmark = [pytest.mark.containers, pytest.mark.timeout(1200)]

NAMESPACE = "data"
NETWORK = "odradek-helm-test"
ZONES = ["zone-a", "zone-b", "zone-c"]
EAST_EXTERNAL = "127.0.0.1:31090,127.0.0.1:31091,127.0.0.1:31092"
WEST_EXTERNAL = "127.0.0.1:31190"
READY_TIMEOUT_S = 180.0
RUN_VALUES: dict[str, Any] = {"image": {"tag": TAG}, "brokers": {"external": {"enabled": True}}}
"""Release east as the test runs it: our images, rack on, external access by NodePort."""


def node(index: int) -> dict[str, Any]:
    """Node node-<i> in zone ZONES[i], reachable from outside on 127.0.0.1 (its ExternalIP;
    its InternalIP is not reachable here, so advertising it would fail the clients)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{index}",
                         "labels": {"topology.kubernetes.io/zone": ZONES[index]}},
            "status": {"addresses": [{"type": "InternalIP", "address": f"10.1.0.{index}"},
                                     {"type": "ExternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": f"node-{index}"}]}}


def wait_ready(runner: PodRunner, container: str) -> None:
    wait_until(lambda: runner.ready(container, 9404), READY_TIMEOUT_S,
               lambda: f"{container} ready; its log:\n{runner.logs(container)}", interval=1)


def start_release(runner: PodRunner, release: str, mode: str, brokers: int) -> None:
    """Controllers together (podManagementPolicy Parallel), then brokers one after the
    other, each ready before the next (OrderedReady), each on its own node."""
    if mode == "split":
        controllers = [runner.run_statefulset_pod(f"{release}-odradek-controller", i, NAMESPACE)
                       for i in range(3)]
        for container in controllers:
            wait_ready(runner, container)
    pool = "broker" if mode == "split" else "combined"
    for i in range(brokers):
        wait_ready(runner, runner.run_statefulset_pod(f"{release}-odradek-{pool}", i, NAMESPACE,
                                                      node=f"node-{i}"))


@dataclass
class Release:
    runner: PodRunner
    api: FakeApiServer


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    engine_or_skip()
    subprocess.run(["bash", str(ROOT / "scripts" / "container_base_images.sh")], check=True,
                   timeout=900)
    build_images(["broker", "controller", "mirror"])
    runner = PodRunner(NETWORK)
    gateway = runner.create_network()
    account = tmp_path_factory.mktemp("serviceaccount")
    cert, key = self_signed(account, [gateway])
    (account / "ca.crt").write_bytes(cert.read_bytes())
    (account / "token").write_text("helm-test-token")
    for path in account.iterdir():
        path.chmod(0o644)
    account.chmod(0o755)
    api = FakeApiServer(host=gateway, tls=(cert, key))
    for i in range(3):
        api.store(node(i))
    runner.api = Api(gateway, api.port, account)
    runner.add(render(RUN_VALUES, release="east", namespace=NAMESPACE))
    with api:
        try:
            start_release(runner, "east", "split", 3)
            yield Release(runner, api)
        finally:
            runner.remove()


def test_the_brokers_form_a_cluster_with_their_nodes_zones_as_racks(east: Release) -> None:
    """Reached from outside through each broker's NodePort on its node's address, which
    the init container read from the API server with the pod's token."""
    client = admin(EAST_EXTERNAL)
    cluster = client.describe_cluster().result(TIMEOUT)
    assert {(n.id, n.host, n.port, n.rack) for n in cluster.nodes} == {
        (i, "127.0.0.1", 31090 + i, ZONES[i]) for i in range(3)}
    api = east.api
    assert {path for path, _ in api.requests} >= {f"/api/v1/nodes/node-{i}" for i in range(3)}
    assert {auth for _, auth in api.requests} == {"Bearer helm-test-token"}


def test_the_charts_helm_test_pod_passes(east: Release) -> None:
    """The `helm test` hook Pod, run as rendered: through the bootstrap Service's name it
    creates a replication-factor-3 topic, produces a record and consumes it back."""
    result = east.runner.run_to_completion("Pod", "east-odradek-test-produce-consume", NAMESPACE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced and consumed" in result.stdout
    assert "(replication factor 3)" in result.stdout


def test_a_killed_broker_loses_no_record_of_a_replicated_topic(east: Release) -> None:
    topic = unique("helm-rf3")
    client = admin(EAST_EXTERNAL)
    client.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})]
                         )[topic].result(TIMEOUT)
    outs = [Out(f"k{i}".encode(), f"v{i}".encode(), now_ms(), (), i % 3) for i in range(90)]
    sent = produce_confluent(EAST_EXTERNAL, topic, outs, {"acks": "all"})
    victim = "helm-east-odradek-broker-1"
    docker("kill", victim)
    try:
        wait_until(lambda: all(p.leader != 1 for p in partitions(EAST_EXTERNAL, topic).values()),
                   TIMEOUT, "every partition led by a live broker", ignoring=(Exception,))
        more = produce_confluent(EAST_EXTERNAL, topic, outs[:30], {"acks": "all"})
        read = read_confluent(EAST_EXTERNAL, topic, [0, 1, 2])
        assert sorted((r.partition, r.key, r.value) for r in read) == sorted(
            (r.partition, r.key, r.value) for r in [*sent, *more])
    finally:
        docker("start", victim)
        wait_ready(east.runner, victim)


def test_the_mirror_deployment_copies_east_to_west(east: Release) -> None:
    """Release west: one combined node and the mirror, flows east->west from values."""
    west = render({**RUN_VALUES, "clusterAlias": "west", "mode": "combined",
                   "brokers": {"replicas": 1, "external": {"enabled": True,
                                                           "nodePortBase": 31190}},
                   "mirror": {"enabled": True, "clusters": {
                       "east": {"bootstrapServers":
                                "east-odradek-bootstrap.data.svc.cluster.local:9092"},
                       "west": {}},
                       "flows": [{"source": "east", "target": "west", "topics": "orders-.*"}],
                       "properties": {"replication.factor": 1,
                                      "checkpoints.topic.replication.factor": 1,
                                      "heartbeats.topic.replication.factor": 1,
                                      "offset-syncs.topic.replication.factor": 3,
                                      "offset.storage.replication.factor": 1,
                                      "refresh.topics.interval.seconds": 5}}},
                  release="west", namespace=NAMESPACE)
    runner = east.runner
    runner.add(west)
    start_release(runner, "west", "combined", 1)
    mirror = runner.run_deployment_pod("west-odradek-mirror", 0, NAMESPACE)
    wait_ready(runner, mirror)
    topic = unique("orders-")
    client = admin(EAST_EXTERNAL)
    client.create_topics([NewTopic(topic, 3, 3)])[topic].result(TIMEOUT)
    sent = produce_confluent(EAST_EXTERNAL, topic, [
        Out(f"k{i}".encode(), f"v{i}".encode(), now_ms(), (), i % 3) for i in range(60)],
        {"acks": "all"})
    target = f"east.{topic}"
    wait_until(lambda: target in admin(WEST_EXTERNAL).list_topics(timeout=TIMEOUT).topics,
               120, f"{target} on west", ignoring=(Exception,))
    # The mirror writes in transactions: the last offset of each partition is a commit
    # marker, so read the records by count rather than up to the end offsets.
    consumer = confluent_consumer(WEST_EXTERNAL, **{"isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(target, p, OFFSET_BEGINNING) for p in range(3)])
        try:
            copied = receive(consumer, len(sent), timeout=120)
        except AssertionError as error:
            raise AssertionError(f"{error}; the mirror's log:\n{runner.logs(mirror)}") from None
    finally:
        consumer.close()
    assert sorted((m.partition(), m.key(), m.value()) for m in copied) == sorted(
        (r.partition, r.key, r.value) for r in sent)


def test_pods_run_as_the_chart_says(east: Release) -> None:
    """The security context reached the containers: non-root user, read-only root, no
    capabilities, no privilege escalation; the data volume is where log.dirs points."""
    container = "helm-east-odradek-broker-0"
    config = docker("inspect", "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} "
                    "{{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}}", container).stdout
    assert config.split(" ", 2)[:2] == ["10001:10001", "true"], config
    assert "[ALL]" in config and "no-new-privileges" in config, config
    probe = docker("exec", container, "sh", "-c",
                   "id -u; touch /etc/x 2>/dev/null && echo writable || echo read-only; "
                   "ls /var/lib/odradek/data | head -1", check=False).stdout.split()
    assert probe[:2] == ["10001", "read-only"] and probe[2:], probe
