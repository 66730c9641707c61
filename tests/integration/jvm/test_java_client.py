"""Kafka's own Java client (the pinned kafka-clients) against a 3-broker Odradek cluster with an
authorizer, over PLAINTEXT, SSL with a client certificate (mutual TLS) and SASL_SSL with
SCRAM-SHA-512: the producer, the consumer with both group protocols, consume-transform-produce
transactions and every Admin API Odradek serves.

One JVM per listener (`odradek.jvm.client.ClientChecks`) runs the checks and reports each as a
JSON line; each check is one test here. The whole set runs on PLAINTEXT, a representative part
on the secured listeners (6 checks: idempotence and zstd were left to PLAINTEXT to save
time). The three JVMs run side by side; the PLAINTEXT one's ~67 s of checks is the module's
floor on 2 cores, and splitting it over two JVMs would trade CPU for wall time.

Checks first written wrongly, corrected to Kafka's behaviour: `abortTransaction` drops unsent
records (flush first); KRaft refuses two SCRAM changes of one user in one request; a producer
with no marker on a partition has no coordinator epoch. `admin_reassign_and_elect_leaders`
asserts ListPartitionReassignments' adding/removing replicas only when it catches the
reassignment in progress (`details.listed_while_ongoing` says which happened)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.certificates import Authority
from tests.integration.cluster import Cluster, running_cluster
from tests.integration.secured_broker import (
    ADMIN_PASSWORD,
    kafka_sasl_properties,
    kafka_ssl_properties,
    security_overrides,
    write_properties,
)
from tests.jvm_toolchain import java_command

pytestmark = pytest.mark.timeout(900)

LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
RUN_TIMEOUT = 600.0

SECURED_CHECKS = [
    "admin_describe_cluster", "admin_topics", "producer_acks_all",
    "consumer_subscribe_list_consumer", "consumer_read_committed",
    "transaction_consume_transform_produce_classic",
]
FULL_CHECKS = [
    "admin_describe_cluster",
    "producer_acks_0", "producer_acks_1", "producer_acks_all", "producer_idempotent_in_flight_5",
    *(f"producer_codec_{codec}" for codec in ("none", "gzip", "snappy", "lz4", "zstd")),
    "consumer_subscribe_list_classic", "consumer_subscribe_pattern_classic",
    "consumer_subscribe_list_consumer", "consumer_subscribe_pattern_consumer",
    "consumer_subscribe_regex_consumer", "consumer_assign_seek_offset", "consumer_seek_timestamp",
    "consumer_read_committed",
    "transaction_consume_transform_produce_classic",
    "transaction_consume_transform_produce_consumer",
    "admin_topics", "admin_create_partitions", "admin_describe_configs",
    "admin_incremental_alter_configs", "admin_incremental_alter_broker_configs",
    "admin_alter_configs_legacy", "admin_delete_records", "admin_reassign_and_elect_leaders",
    "admin_describe_metadata_quorum", "admin_describe_log_dirs", "admin_describe_features",
    "admin_acls", "admin_scram_credentials", "admin_client_quotas",
    "admin_list_groups", "admin_describe_consumer_groups", "admin_list_consumer_group_offsets",
    "admin_alter_consumer_group_offsets", "admin_delete_consumer_group_offsets",
    "admin_delete_consumer_groups",
    "admin_list_transactions", "admin_describe_transactions", "admin_describe_producers",
    "admin_abort_transaction", "admin_fence_producers",
]
EXPECTED = {"PLAINTEXT": FULL_CHECKS, "SSL": SECURED_CHECKS, "SASL_SSL": SECURED_CHECKS}


@dataclass
class Runs:
    """The JVMs, one per listener, started together; each one's checks read when first asked."""
    cluster: Cluster
    root: Path
    processes: dict[str, subprocess.Popen[bytes]]
    reports: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def report(self, listener: str) -> dict[str, dict[str, Any]]:
        if listener not in self.reports:
            process = self.processes[listener]
            try:
                process.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            stdout = (self.root / f"{listener}.out").read_text()
            stderr = (self.root / f"{listener}.err").read_text()
            lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
            self.reports[listener] = {line["name"]: line for line in lines}
            self.outputs[listener] = (f"exit {process.returncode}\n{stdout[-3000:]}\n"
                                      f"{stderr[-5000:]}")
        return self.reports[listener]


def _bootstrap(cluster: Cluster, listener: str) -> str:
    return ",".join(f"127.0.0.1:{node['listeners'][listener]}"
                    for node in cluster.layout["nodes"] if node["role"] == "broker")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("java-client")
    ca = Authority()
    truststore = ca.write(root / "ca.pem")
    keystore = ca.issue("admin", OU="clients", O="Odradek").write(root / "admin.pem")
    properties = {
        "PLAINTEXT": {},
        "SSL": kafka_ssl_properties(truststore, keystore),
        "SASL_SSL": kafka_sasl_properties(truststore),
    }
    with running_cluster(root / "cluster", 1, 3, {
        **security_overrides(root, ca, truststore), "group.initial.rebalance.delay.ms": "0"},
                         listeners=list(LISTENERS),
                         add_scram=[f"SCRAM-SHA-512=[name=admin,password={ADMIN_PASSWORD}]"]
                         ) as cluster:
        processes = {}
        for listener in LISTENERS:
            config = write_properties(root / f"{listener}.properties", properties[listener])
            mode = "full" if listener == "PLAINTEXT" else "subset"
            with (open(root / f"{listener}.out", "wb") as out,
                  open(root / f"{listener}.err", "wb") as err):
                processes[listener] = subprocess.Popen(
                    java_command("odradek.jvm.client.ClientChecks",
                                 _bootstrap(cluster, listener), str(config), mode),
                    stdout=out, stderr=err)
        state = Runs(cluster, root, processes)
        try:
            yield state
        finally:
            for process in processes.values():
                if process.poll() is None:
                    process.kill()
                    process.wait()


@pytest.mark.parametrize(("listener", "check"), [
    (listener, check) for listener in LISTENERS for check in EXPECTED[listener]])
def test_java_client(runs: Runs, listener: str, check: str) -> None:
    report = runs.report(listener)
    assert check in report, (f"{listener}: no report of {check}\n{runs.outputs[listener]}")
    result = report[check]
    assert result["ok"], (f"{listener} {check}: {json.dumps(result['details'], indent=1)}\n"
                          f"{runs.outputs[listener]}")


@pytest.mark.parametrize("listener", LISTENERS)
def test_every_check_is_expected(runs: Runs, listener: str) -> None:
    """The program reports exactly the checks listed here, and ends cleanly."""
    assert sorted(runs.report(listener)) == sorted(EXPECTED[listener]), runs.outputs[listener]
    assert runs.processes[listener].returncode == 0, runs.outputs[listener]
