"""The Spark jobs against a secured broker: the audit and the compaction snapshot read (and
the audit publishes) over SASL_SSL with the command configs the operator tools take, in
Kafka's spelling for one cluster and librdkafka's for the other."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from odradek.spark import audit, compaction
from odradek.spark.cut import client_config
from tests.helm.chart import MATRIX, one, render
from tests.integration.clients import Out, create_topic, now_ms, produce_confluent, unique
from tests.integration.secured_broker import ADMIN_PASSWORD, Secured, running_secured

BUCKET_MS = 10 * 60_000


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    yield from running_secured(tmp_path_factory.mktemp("spark-secured"))


def parsed(add_arguments: Callable[[argparse.ArgumentParser], None], flags: list[str]
           ) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(flags)


def test_the_audit_and_the_snapshot_run_over_sasl_ssl(spark: SparkSession, secured: Secured,
                                                      tmp_path: Path) -> None:
    topic = create_topic(secured.broker.bootstrap, unique("secured"))
    start = now_ms() // BUCKET_MS * BUCKET_MS - 2 * BUCKET_MS
    produce_confluent(secured.broker.bootstrap, topic,
                      [Out(f"k{i % 3}".encode(), f"v{i}".encode(), start + i) for i in range(5)])
    kafka = secured.command_config(secured.kafka_properties())
    librdkafka = secured.command_config(secured.librdkafka_config())
    bootstrap = secured.bootstrap("SASL_SSL")

    code = audit.run(parsed(audit.add_arguments, [
        "--source-bootstrap", bootstrap, "--target-bootstrap", bootstrap,
        "--source-command-config", str(kafka), "--target-command-config", str(librdkafka),
        "--source-alias", "east", "--replication-policy", "identity", "--topics", topic,
        "--from", str(start), "--to", str(start + BUCKET_MS), "--bucket", "10m",
        "--output", str(tmp_path / "audit")]), spark)
    summary = json.loads((tmp_path / "audit" / "summary.json").read_text())
    assert code == 0 and summary["complete"], summary
    assert [(b["source_count"], b["target_count"]) for b in summary["buckets"]] == [(5, 5)]

    code = compaction.run(parsed(compaction.add_arguments, [
        "--bootstrap", bootstrap, "--command-config", str(kafka), "--topics", topic,
        "--verify", "--output", str(tmp_path / "snapshot")]), spark)
    assert code == 0
    assert json.loads((tmp_path / "snapshot" / "verify.json").read_text())["differences"] == []
    live = spark.read.parquet(str(tmp_path / "snapshot" / "snapshot")).collect()
    assert sorted((bytes(r["key"]), bytes(r["value"])) for r in live) == [
        (b"k0", b"v3"), (b"k1", b"v4"), (b"k2", b"v2")]


@pytest.mark.parametrize(("properties", "message"), [
    ({"security.protocol": "SSL", "ssl.truststore.location": "/etc/truststore.jks"},
     "ssl.truststore.type=JKS is not supported: use a PEM trust store "
     "(ssl.truststore.type=PEM, KIP-651) or librdkafka's ssl.ca.location"),
    (None, "SASL SCRAM-SHA-512 login as admin failed"),
])
def test_a_bad_command_config_is_one_line(secured: Secured, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          properties: dict[str, str] | None,
                                          message: str) -> None:
    config = secured.command_config(properties or secured.kafka_properties(password="wrong"))
    code = audit.run(parsed(audit.add_arguments, [
        "--source-bootstrap", secured.bootstrap("SASL_SSL"), "--target-bootstrap",
        secured.bootstrap("SASL_SSL"), "--source-command-config", str(config),
        "--source-alias", "east", "--output", str(tmp_path)]))
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("audit: ") and message in line, line


@pytest.mark.parametrize(("password", "error"), [
    (ADMIN_PASSWORD, None), ("wrong", "SASL SCRAM-SHA-512 login as admin failed")])
def test_the_charts_client_properties_log_in_as_its_spark_user(
        secured: Secured, tmp_path: Path, password: str, error: str | None) -> None:
    """The chart's client.properties for the Spark jobs of a release with TLS and SCRAM
    (deploy/helm, rendered with spark.user=admin), its /etc/odradek mounts (ca.crt, the
    user's password file as a Secret volume holds it) under tmp_path: the jobs' command
    config resolves the password through the DirectoryConfigProvider and logs in over
    SASL_SSL; a wrong password in the Secret fails in one line."""
    values = {**MATRIX["spark-submit-secured"],
              "spark": {**MATRIX["spark-submit"]["spark"], "user": "admin"}}
    rendered = one(render(values), "ConfigMap", "east-odradek-spark-client")["data"][
        "client.properties"]
    mounts = tmp_path / "etc-odradek"
    (mounts / "tls").mkdir(parents=True)
    (mounts / "user").mkdir()
    shutil.copy(secured.truststore, mounts / "tls" / "ca.crt")
    (mounts / "user" / "password").write_text(password)
    properties = tmp_path / "client.properties"
    properties.write_text(rendered.replace("/etc/odradek/", f"{mounts}/"))
    if error is None:
        config = client_config(properties, secured.bootstrap("SASL_SSL"))
        assert (config["sasl.username"], config["sasl.password"]) == ("admin", ADMIN_PASSWORD)
    else:
        with pytest.raises(ValueError, match=error) as raised:
            client_config(properties, secured.bootstrap("SASL_SSL"))
        assert "\n" not in str(raised.value)
