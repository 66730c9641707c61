"""The chart's secure variant run on a real Docker engine (tests/integration/helm_pods.py runs
the rendered pods as a kubelet would): a controller and two brokers with tls.existingSecret,
sasl.scram.enabled with users from sasl.users.existingSecret, and authorization on; the
controller's listener and the brokers' REPLICATION listener are mutual TLS. The
Secrets are mounted as Secret volumes (files of mode 0440, group the pod's fsGroup, 10001); the
controller formats its storage with the users on first start; a client outside reaches the
brokers over SASL_SSL with SCRAM on their external NodePorts and is held to its ACLs, and its
acks=all writes to a topic replicated on both brokers (over REPLICATION) are read back; the
chart's `helm test` Pod passes over SASL_SSL; a wrong password and plaintext are refused; no
password is in a container's environment."""

from __future__ import annotations

import json
import subprocess
from base64 import b64encode
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.certificates import Authority
from tests.helm.chart import render
from tests.integration.clients import (
    Out,
    confluent_consumer,
    now_ms,
    produce_confluent,
    receive,
    unique,
)
from tests.integration.cluster import TIMEOUT
from tests.integration.compose_stack import ROOT, docker, engine_or_skip
from tests.integration.helm_pods import TAG, PodRunner, build_images
from tests.integration.raw_client import RawClient, frame, header_v1
from tests.waiting import wait_until

pytestmark = [pytest.mark.containers, pytest.mark.timeout(900)]

NAMESPACE = "data"
NETWORK = "odradek-helm-secure-test"
NODE_PORT = 31290
BOOTSTRAP = f"localhost:{NODE_PORT},localhost:{NODE_PORT + 1}"
PODS = ["sec-odradek-controller-0", "sec-odradek-broker-0", "sec-odradek-broker-1"]
USERS = {"admin": "admin-pw-5bd1", "alice": "alice-pw-93c2"}
VALUES: dict[str, Any] = {
    "image": {"tag": TAG},
    "controllers": {"replicas": 1},
    "brokers": {"replicas": 2, "rack": {"enabled": False},
                "topologySpread": {"enabled": False},
                "external": {"enabled": True, "nodePortBase": NODE_PORT,
                             "advertisedHosts": ["localhost", "localhost"]},
                "config": {"offsets.topic.replication.factor": 2,
                           "transaction.state.log.replication.factor": 2}},
    "tls": {"enabled": True, "existingSecret": "sec-tls"},
    "sasl": {"scram": {"enabled": True}, "users": {"existingSecret": "sec-users"}},
    "authorization": {"enabled": True, "superUsers": ["User:admin"]},
}


def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {key: b64encode(value.encode()).decode() for key, value in data.items()}}


def pod_dns(pod: str) -> str:
    return f"{pod}.{pod.rsplit('-', 1)[0]}-headless.{NAMESPACE}.svc.cluster.local"


@dataclass
class SecureRelease:
    runner: PodRunner
    controller: str
    broker: str
    ca: Path


def start(runner: PodRunner, pod: str) -> str:
    container = runner.run_statefulset_pod(pod.rsplit("-", 1)[0], int(pod[-1]), NAMESPACE)
    wait_until(lambda: runner.ready(container, 9404), 180,
               lambda: f"{container} ready; its log:\n{runner.logs(container)}", interval=1)
    return container


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureRelease]:
    engine_or_skip()
    subprocess.run(["bash", str(ROOT / "scripts" / "container_base_images.sh")], check=True,
                   timeout=900)
    build_images(["broker", "controller"])
    authority = Authority()
    # one Secret for every pod; its CN is the brokers' principal on REPLICATION
    issued = authority.issue("sec-odradek-broker", (
        *map(pod_dns, PODS), f"sec-odradek-bootstrap.{NAMESPACE}.svc.cluster.local",
        "localhost", "127.0.0.1"))
    ca = authority.write(tmp_path_factory.mktemp("ca") / "ca.crt")
    runner = PodRunner(NETWORK)
    runner.create_network()
    runner.add(render(VALUES, release="sec", namespace=NAMESPACE))
    runner.add([secret("sec-tls", {"ca.crt": authority.pem, "tls.crt": issued.certificate_pem,
                                   "tls.key": issued.key_pem}),
                secret("sec-users", USERS)])
    try:
        containers = [start(runner, pod) for pod in PODS]  # each ready before the next
        yield SecureRelease(runner, containers[0], containers[1], ca)
    finally:
        runner.remove()


def scram(release: SecureRelease, user: str, password: str | None = None) -> dict[str, Any]:
    return {"bootstrap.servers": BOOTSTRAP, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(release.ca), "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user, "sasl.password": password or USERS[user]}


def test_users_of_the_secret_log_in_over_sasl_ssl_and_acls_hold(
        release: SecureRelease) -> None:
    admin = AdminClient(scram(release, "admin"))
    topic, group = unique("helm-secure"), unique("alice")
    # replicated on both brokers: acks=all waits for the follower, which fetches over
    # REPLICATION (mutual TLS, as User:sec-odradek-broker)
    admin.create_topics([NewTopic(topic, 2, 2, config={"min.insync.replicas": "2"})]
                        )[topic].result(TIMEOUT)
    outs = [Out(f"k{i}".encode(), f"v{i}".encode(), now_ms(), (), i % 2) for i in range(20)]
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        produce_confluent(BOOTSTRAP, topic, outs[:1], scram(release, "alice"))
    bindings = [AclBinding(kind, name, ResourcePatternType.LITERAL, "User:alice", "*", op,
                           AclPermissionType.ALLOW)
                for kind, name, op in ((ResourceType.TOPIC, topic, AclOperation.WRITE),
                                       (ResourceType.TOPIC, topic, AclOperation.READ),
                                       (ResourceType.GROUP, group, AclOperation.READ))]
    for future in admin.create_acls(bindings).values():
        future.result(TIMEOUT)

    def described() -> bool:  # the broker applies the ACLs after CreateAcls returns
        found = AdminClient(scram(release, "alice")).list_topics(
            topic, timeout=TIMEOUT).topics.get(topic)
        return found is not None and found.error is None

    wait_until(described, TIMEOUT, f"alice may describe {topic}")
    sent = produce_confluent(BOOTSTRAP, topic, outs, {**scram(release, "alice"), "acks": "all"})
    consumer = confluent_consumer(BOOTSTRAP, **scram(release, "alice"),
                                  **{"group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got = receive(consumer, len(sent), timeout=60)
    finally:
        consumer.close()
    assert sorted((m.partition(), m.value()) for m in got) == sorted(
        (r.partition, r.value) for r in sent)


def test_the_charts_helm_test_pod_passes_over_sasl_ssl(release: SecureRelease) -> None:
    """The `helm test` hook Pod as rendered: it logs in as tests.user (admin) with the
    password of its mounted Secret key and trusts the mounted ca.crt, through the bootstrap
    Service's name (which the certificate names)."""
    result = release.runner.run_to_completion("Pod", "sec-odradek-test-produce-consume",
                                              NAMESPACE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced and consumed" in result.stdout


def test_a_wrong_password_and_plaintext_are_refused(release: SecureRelease) -> None:
    errors: list[KafkaError] = []
    client = AdminClient({**scram(release, "alice", "wrong"), "error_cb": errors.append})
    wait_until(lambda: client.poll(0.2) is not None and any(
        e.code() == KafkaError._AUTHENTICATION for e in errors), 30, "an authentication error")
    raw = RawClient(f"localhost:{NODE_PORT}")
    try:
        raw.send_raw(frame(header_v1(18, 0, 1)))
        assert raw.closed_by_peer()
    finally:
        raw.close()
    admin = AdminClient(scram(release, "admin"))
    assert set(admin.list_topics(timeout=TIMEOUT).brokers) == {0, 1}


def test_the_secrets_are_files_not_variables(release: SecureRelease) -> None:
    for container in (release.controller, release.broker):
        environment = json.loads(docker("inspect", "--format", "{{json .Config.Env}}",
                                        container).stdout)
        assert not any(password in variable for password in USERS.values()
                       for variable in environment)
    listing = docker("exec", release.controller, "sh", "-c",
                     "stat -c '%a %g %n' /etc/odradek/users/* /etc/odradek/tls/*").stdout
    assert sorted(listing.split("\n")[:-1]) == sorted(
        f"440 10001 {directory}/{key}" for directory, keys in (
            ("/etc/odradek/users", USERS), ("/etc/odradek/tls", ("ca.crt", "tls.crt",
                                                                 "tls.key")))
        for key in keys)
    assert "No such file" in docker("exec", release.broker, "ls", "/etc/odradek/users",
                                    check=False).stderr  # users: the controllers only
    logs = docker("logs", release.controller)
    log = logs.stdout + logs.stderr
    assert "Formatting metadata directory /var/lib/odradek/data." in log, log[-3000:]
    assert "wrote 4 bootstrap record(s)" in log, log[-3000:]  # 2 users x 2 mechanisms
