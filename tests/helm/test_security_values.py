"""The chart's security values (tls, sasl, authorization) rendered: which protocol each
listener speaks, the REPLICATION listener the brokers replicate on once clients need TLS or
SCRAM, the Secrets each pod mounts (certificates on every node, users on the controllers
only) and no password in a variable, the cert-manager Certificates naming every pod, and
the combinations refused with one line. Lint and schema validation of these cases run with
the rest of the matrix (tests/helm/test_chart.py)."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest
import yaml

from odradek.config.env import configs_from_env
from tests.helm.chart import MATRIX, env_of, find, job_arguments, notes, one, render

pytestmark = pytest.mark.helm


def node_pod(objects: list[dict[str, Any]], pool: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(objects, "StatefulSet", f"east-odradek-{pool}")["spec"]
    return spec["template"]["spec"]  # type: ignore[no-any-return]


def values_of(pod: dict[str, Any]) -> dict[str, str]:
    return {name: e["value"] for name, e in env_of(pod["containers"][0]).items()
            if "value" in e}


def secret_mounts(pod: dict[str, Any]) -> dict[str, str]:
    """mount path -> Secret name, of the read-only Secret volumes."""
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    for volume in secrets.values():
        assert volume["defaultMode"] == 0o440
    return {m["mountPath"]: secrets[m["name"]]["secretName"]
            for m in pod["containers"][0]["volumeMounts"] if m["name"] in secrets
            and m.get("readOnly")}


def test_tls_from_a_secret_with_scram_and_acls() -> None:
    objects = render(MATRIX["tls-scram-acls"])
    broker, controller = node_pod(objects, "broker"), node_pod(objects, "controller")
    env = values_of(broker)
    assert env["ODRADEK_LISTENERS"] == "INTERNAL://:9092,REPLICATION://:9091,EXTERNAL://:9094"
    assert env["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == (
        "CONTROLLER:SSL,INTERNAL:SASL_SSL,REPLICATION:SSL,EXTERNAL:SASL_SSL")
    assert env["ODRADEK_INTER_BROKER_LISTENER_NAME"] == "REPLICATION"
    assert env["ODRADEK_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512,SCRAM-SHA-256"
    assert env["ODRADEK_AUTHORIZER_CLASS_NAME"] == (
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    assert env["ODRADEK_SUPER_USERS"] == "User:admin;User:east-odradek-broker"
    assert env["ODRADEK_LISTENER_NAME_REPLICATION_SSL_CLIENT_AUTH"] == "required"
    assert env["ODRADEK_LISTENER_NAME_REPLICATION_SSL_PRINCIPAL_MAPPING_RULES"] == (
        "RULE:^CN=([^,]+)$/$1/,DEFAULT")
    assert env["ODRADEK_TLS_DIR"] == "/etc/odradek/tls"
    assert "ODRADEK_SCRAM_USERS_DIR" not in env
    assert env["REPLICATION_PORT"] == "9091"  # advertised by the entrypoint (image/pod.py)
    assert secret_mounts(broker) == {"/etc/odradek/tls": "east-tls"}
    assert secret_mounts(controller) == {"/etc/odradek/tls": "east-tls",
                                         "/etc/odradek/users": "east-users"}
    assert values_of(controller)["ODRADEK_SCRAM_USERS_DIR"] == "/etc/odradek/users"
    assert values_of(controller)["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == "CONTROLLER:SSL"
    assert values_of(controller)["ODRADEK_LISTENER_NAME_CONTROLLER_SSL_CLIENT_AUTH"] == "required"
    assert "ODRADEK_LISTENER_NAME_CONTROLLER_SSL_CLIENT_AUTH" not in env
    for pod in (broker, controller):  # every variable the image reads as a config is one
        configs_from_env({k: v for k, v in values_of(pod).items()
                          if k not in ("ODRADEK_TLS_DIR", "ODRADEK_SCRAM_USERS_DIR")})
        assert not any("secretKeyRef" in e.get("valueFrom", {}) and
                       e["valueFrom"]["secretKeyRef"]["name"] == "east-users"
                       for e in pod["containers"][0]["env"])
    headless = one(objects, "Service", "east-odradek-broker-headless")["spec"]["ports"]
    assert {"name": "replication", "port": 9091, "targetPort": "replication"} in headless
    bootstrap = one(objects, "Service", "east-odradek-bootstrap")["spec"]["ports"]
    assert [p["port"] for p in bootstrap] == [9092]
    policy = one(objects, "NetworkPolicy", "east-odradek-broker")["spec"]["ingress"]
    replication = next(rule for rule in policy if rule["ports"] == [{"port": "replication"}])
    assert replication["from"] == [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "odradek", "app.kubernetes.io/instance": "east",
        "app.kubernetes.io/component": "broker"}}}]
    assert not find(objects, "Certificate")
    (test_pod,) = find(objects, "Pod")
    test_spec = test_pod["spec"]
    assert values_of(test_spec)["SECURITY_PROTOCOL"] == "SASL_SSL"
    assert values_of(test_spec)["SCRAM_USER"] == "admin"
    assert {v["name"]: v["secret"] for v in test_spec["volumes"] if "secret" in v} == {
        "tls": {"secretName": "east-tls", "defaultMode": 0o440,
                "items": [{"key": "ca.crt", "path": "ca.crt"}]},
        "user": {"secretName": "east-users", "defaultMode": 0o440,
                 "items": [{"key": "admin", "path": "password"}]}}
    text = notes(MATRIX["tls-scram-acls"])
    assert "security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512" in text
    assert "helm test east" in text and "super users: User:admin." in text


def test_cert_manager_certificates_name_every_pod_and_mtls_is_required() -> None:
    objects = render(MATRIX["tls-cert-manager-mtls"])
    certificates = {c["metadata"]["name"]: c["spec"] for c in find(objects, "Certificate")}
    assert set(certificates) == {"east-odradek-controller", "east-odradek-broker"}
    assert certificates["east-odradek-controller"]["dnsNames"] == [
        f"east-odradek-controller-{i}.east-odradek-controller-headless.data.svc.cluster.local"
        for i in range(3)]
    assert certificates["east-odradek-broker"]["dnsNames"] == [
        *(f"east-odradek-broker-{i}.east-odradek-broker-headless.data.svc.cluster.local"
          for i in range(3)),
        "east-odradek-bootstrap", "east-odradek-bootstrap.data",
        "east-odradek-bootstrap.data.svc", "east-odradek-bootstrap.data.svc.cluster.local",
        "b0.kafka.example.com", "b1.kafka.example.com", "b2.kafka.example.com"]
    assert certificates["east-odradek-broker"]["commonName"] == "east-odradek-broker"
    assert values_of(node_pod(objects, "broker"))["ODRADEK_SUPER_USERS"] == (
        "User:admin;User:east-odradek-broker")
    for pool, spec in certificates.items():
        assert spec["secretName"] == f"{pool}-tls"
        assert spec["issuerRef"] == {"name": "odradek-ca", "kind": "Issuer",
                                     "group": "cert-manager.io"}
        assert {"server auth", "client auth"} <= set(spec["usages"])
        pod = node_pod(objects, pool.removeprefix("east-odradek-"))
        assert secret_mounts(pod)["/etc/odradek/tls"] == f"{pool}-tls"
    env = values_of(node_pod(objects, "broker"))
    assert env["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == (
        "CONTROLLER:SSL,INTERNAL:SSL,REPLICATION:SSL,EXTERNAL:SSL")
    assert env["ODRADEK_LISTENER_NAME_INTERNAL_SSL_CLIENT_AUTH"] == "required"
    assert env["ODRADEK_LISTENER_NAME_EXTERNAL_SSL_CLIENT_AUTH"] == "required"
    assert "ODRADEK_SASL_ENABLED_MECHANISMS" not in env
    assert not find(objects, "Pod"), "the helm test Pod has no client certificate"
    assert "helm test" not in notes(MATRIX["tls-cert-manager-mtls"])


def test_a_combined_dev_node_formats_with_the_users_and_serves_sasl_ssl() -> None:
    objects = render(MATRIX["scram-dev"])
    pod = node_pod(objects, "combined")
    env = values_of(pod)
    assert env["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == (
        "CONTROLLER:SSL,INTERNAL:SASL_SSL,REPLICATION:SSL")
    assert env["ODRADEK_LISTENERS"] == (
        "INTERNAL://:9092,REPLICATION://:9091,CONTROLLER://:9093")
    assert "ODRADEK_AUTHORIZER_CLASS_NAME" not in env
    assert secret_mounts(pod) == {"/etc/odradek/tls": "east-odradek-combined-tls",
                                  "/etc/odradek/users": "dev-users"}
    (certificate,) = find(objects, "Certificate")
    assert certificate["spec"]["issuerRef"]["kind"] == "ClusterIssuer"


def test_scram_without_tls_leaves_controller_and_replication_listeners_plaintext() -> None:
    objects = render({"sasl": {"scram": {"enabled": True}, "users": {"existingSecret": "u"}},
                      "authorization": {"enabled": True}})
    env = values_of(node_pod(objects, "broker"))
    assert env["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == (
        "CONTROLLER:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,REPLICATION:PLAINTEXT")
    assert env["ODRADEK_SUPER_USERS"] == "User:ANONYMOUS"  # the brokers on REPLICATION
    assert "ODRADEK_TLS_DIR" not in env
    assert secret_mounts(node_pod(objects, "controller")) == {"/etc/odradek/users": "u"}


def test_without_security_values_nothing_changes() -> None:
    env = values_of(node_pod(render({}), "broker"))
    assert env["ODRADEK_LISTENER_SECURITY_PROTOCOL_MAP"] == (
        "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT")
    assert env["ODRADEK_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    assert not {"ODRADEK_TLS_DIR", "REPLICATION_PORT", "ODRADEK_SUPER_USERS"} & env.keys()


@pytest.mark.parametrize(("values", "message"), [
    ({"tls": {"enabled": True}}, "tls.enabled needs tls.existingSecret"),
    ({"tls": {"enabled": True, "existingSecret": "s", "certManager": {
        "enabled": True, "issuerRef": {"name": "ca"}}}},
     "set tls.existingSecret or tls.certManager.enabled, not both"),
    ({"tls": {"enabled": True, "certManager": {"enabled": True}}},
     "tls.certManager.enabled needs tls.certManager.issuerRef.name"),
    ({"sasl": {"scram": {"enabled": True}}}, "sasl.scram.enabled needs sasl.users.existingSecret"),
    ({"authorization": {"enabled": True}}, "authorization.enabled needs tls.enabled or "
                                           "sasl.scram.enabled"),
    ({"authorization": {"enabled": True}, "tls": {"enabled": True, "existingSecret": "s"}},
     "authorization.enabled with TLS alone needs tls.clientAuth=required"),
    ({**MATRIX["spark-submit"], "tls": {"enabled": True, "existingSecret": "s",
                                        "clientAuth": "required"}},
     "spark jobs with tls.clientAuth=required need sasl.scram.enabled"),
])
def test_values_that_do_not_go_together_are_refused(values: dict[str, Any],
                                                    message: str) -> None:
    with pytest.raises(helm.HelmError, match=message):
        render(values)


CLIENT = "/etc/odradek/client/client.properties"
CLIENT_MOUNTS = [{"name": "client", "mountPath": "/etc/odradek/client", "readOnly": True},
                 {"name": "tls", "mountPath": "/etc/odradek/tls", "readOnly": True},
                 {"name": "user", "mountPath": "/etc/odradek/user", "readOnly": True}]


def client_volumes(volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {v["name"]: v.get("configMap") or v["secret"] for v in volumes
            if v["name"] in ("client", "tls", "user")}


@pytest.mark.parametrize("runner", ["spark-submit", "spark-operator"])
def test_the_spark_jobs_reach_a_secured_release_with_its_security(runner: str) -> None:
    """With TLS and SCRAM, the audit's target and the snapshot's cluster (this release) are
    read with a client.properties trusting the release's ca.crt and logging in as
    spark.user, whose password the driver reads from the users Secret through Kafka's
    DirectoryConfigProvider: the ConfigMap holds no password. The driver and executor pods
    mount the three. Without security, none of it is rendered."""
    objects = render(MATRIX[f"{runner}-secured"])
    properties = one(objects, "ConfigMap", "east-odradek-spark-client")["data"][
        "client.properties"]
    assert properties.splitlines() == [
        "security.protocol=SASL_SSL",
        "ssl.truststore.type=PEM",
        "ssl.truststore.location=/etc/odradek/tls/ca.crt",
        "sasl.mechanism=SCRAM-SHA-512",
        "config.providers=secret",
        "config.providers.secret.class="
        "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="spark" password="${secret:/etc/odradek/user:password}";']
    jobs = job_arguments(objects)
    audit, compaction = jobs["mirror_audit.py"], jobs["compact.py"]
    assert audit[audit.index("--target-command-config") + 1] == CLIENT
    assert compaction[compaction.index("--command-config") + 1] == CLIENT
    assert "--source-command-config" not in audit  # the source is another cluster
    if runner == "spark-submit":
        templates = one(objects, "ConfigMap", "east-odradek-spark-pod-templates")["data"]
        pods = [yaml.safe_load(templates[f"{role}.yaml"])["spec"]
                for role in ("driver", "executor")]
        mounts = [pod["containers"][0]["volumeMounts"][1:] for pod in pods]
        volumes = [client_volumes(pod["volumes"]) for pod in pods]
    else:
        template = find(objects, "ScheduledSparkApplication")[0]["spec"]["template"]
        mounts = [[m for m in template[role]["volumeMounts"] if m["name"] != "tmp"
                   and m["name"] != "output"] for role in ("driver", "executor")]
        volumes = [client_volumes(template["volumes"])] * 2
    assert mounts == [CLIENT_MOUNTS] * 2
    assert volumes == [{
        "client": {"name": "east-odradek-spark-client"},
        "tls": {"secretName": "east-tls", "defaultMode": 0o440,
                "items": [{"key": "ca.crt", "path": "ca.crt"}]},
        "user": {"secretName": "east-users", "defaultMode": 0o440,
                 "items": [{"key": "spark", "path": "password"}]}}] * 2

    plain = render(MATRIX[runner])
    assert not find(plain, "ConfigMap", "east-odradek-spark-client")
    assert "--target-command-config" not in job_arguments(plain)["mirror_audit.py"]
    elsewhere = render({**MATRIX[f"{runner}-secured"], "spark": {
        **MATRIX[runner]["spark"], "audit": {**MATRIX[runner]["spark"]["audit"],
                                             "targetBootstrap": "other:9092"}}})
    assert "--target-command-config" not in job_arguments(elsewhere)["mirror_audit.py"]
