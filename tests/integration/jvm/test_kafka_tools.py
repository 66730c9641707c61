"""Kafka's own command-line tools (kafka-topics, kafka-configs, kafka-consumer-groups, ...,
the main classes of Kafka 4.3.1's bin/ scripts) against a 3-broker Odradek cluster with an
authorizer. Each tool's output is parsed and held against what the cluster holds (read with
confluent-kafka), and the same script runs against Apache Kafka itself, whose output must
match Odradek's modulo ids, hosts and timings.

The script runs in two batches (`kafka_tools.run_tools`: one JVM each), the second once the
first's reassignment is done; Odradek's and Kafka's batches run side by side."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from odradek.security.authorizer import STANDARD_AUTHORIZER
from tests.integration.apache_kafka import ApacheKafka
from tests.integration.clients import confluent_consumer
from tests.integration.cluster import TIMEOUT, Cluster, admin, partitions, running_cluster
from tests.integration.jvm.kafka_tools import (
    ACLS,
    CONFIGS,
    CONSOLE_CONSUMER,
    CONSOLE_PRODUCER,
    CONSUMER_GROUPS,
    CONSUMER_PERF,
    DELETE_RECORDS,
    FEATURES,
    GET_OFFSETS,
    LEADER_ELECTION,
    LOG_DIRS,
    METADATA_QUORUM,
    PRODUCER_PERF,
    REASSIGN,
    TOPICS,
    TRANSACTIONS,
    Outcome,
    Step,
    run_tools,
)

TOPIC = "tools-main"
COMPACTED = "tools-compacted"
PERF = "tools-perf"
TXN_PERF = "tools-txn-perf"
GROUP = "tools-group"
TXN_ID = "tools-txn"
RECORDS = [(f"k{i}", f"v{i}") for i in range(12)]
PERF_RECORDS = 2000
AUTHORIZER = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}


@dataclass
class Target:
    """A cluster the script runs against, and what the script did there."""
    bootstrap: str
    replication: int
    first: dict[str, Outcome]
    second: dict[str, Outcome]

    def out(self, name: str) -> Outcome:
        return {**self.first, **self.second}[name]


def first_batch(bootstrap: str, replication: int, scratch: Path) -> list[Step]:
    """Everything but what waits for the reassignment (one JVM)."""
    bs = ["--bootstrap-server", bootstrap]
    rf = str(replication)
    delete = scratch / "delete-records.json"
    delete.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "offset": 1}]}))
    return [
        Step("topics-create", TOPICS, [*bs, "--create", "--topic", TOPIC, "--partitions", "3",
                                       "--replication-factor", rf,
                                       "--config", "retention.ms=3600000"]),
        Step("topics-create-compacted", TOPICS, [
            *bs, "--create", "--topic", COMPACTED, "--partitions", "1",
            "--replication-factor", rf, "--config", "cleanup.policy=compact"]),
        Step("topics-create-perf", TOPICS, [*bs, "--create", "--topic", PERF, "--partitions",
                                            "2", "--replication-factor", rf]),
        Step("topics-create-txn", TOPICS, [*bs, "--create", "--topic", TXN_PERF,
                                           "--partitions", "1", "--replication-factor", rf]),
        Step("topics-alter", TOPICS, [*bs, "--alter", "--topic", TOPIC, "--partitions", "4"]),
        Step("topics-list", TOPICS, [*bs, "--list", "--exclude-internal"]),
        Step("topics-describe", TOPICS, [*bs, "--describe", "--topic", TOPIC]),
        Step("configs-alter-topic", CONFIGS, [
            *bs, "--alter", "--entity-type", "topics", "--entity-name", TOPIC,
            "--add-config", "max.message.bytes=2000000,segment.ms=7200000",
            "--delete-config", "retention.ms"]),
        Step("configs-describe-topic", CONFIGS, [*bs, "--describe", "--entity-type", "topics",
                                                 "--entity-name", TOPIC]),
        Step("configs-alter-broker", CONFIGS, [
            *bs, "--alter", "--entity-type", "brokers", "--entity-default",
            "--add-config", "log.cleaner.threads=2"]),
        Step("configs-describe-broker", CONFIGS, [*bs, "--describe", "--entity-type",
                                                  "brokers", "--entity-default"]),
        Step("configs-alter-quota", CONFIGS, [
            *bs, "--alter", "--entity-type", "clients", "--entity-name", "tools-client",
            "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152"]),
        Step("configs-describe-quota", CONFIGS, [*bs, "--describe", "--entity-type",
                                                 "clients", "--entity-name", "tools-client"]),
        Step("configs-alter-scram", CONFIGS, [
            *bs, "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"]),
        Step("configs-describe-scram", CONFIGS, [*bs, "--describe", "--entity-type", "users",
                                                 "--entity-name", "alice"]),
        Step("console-producer", CONSOLE_PRODUCER, [
            *bs, "--topic", TOPIC, "--reader-property", "parse.key=true",
            "--reader-property", "key.separator=:", "--command-property", "acks=all"],
            stdin="".join(f"{key}:{value}\n" for key, value in RECORDS)),
        Step("console-consumer", CONSOLE_CONSUMER, [
            *bs, "--topic", TOPIC, "--from-beginning", "--max-messages", str(len(RECORDS)),
            "--group", GROUP, "--timeout-ms", "60000",
            "--formatter-property", "print.key=true",
            "--formatter-property", "print.partition=true",
            "--formatter-property", "print.offset=true"]),
        Step("groups-list", CONSUMER_GROUPS, [*bs, "--list"]),
        Step("groups-describe", CONSUMER_GROUPS, [*bs, "--describe", "--group", GROUP]),
        Step("groups-reset-earliest", CONSUMER_GROUPS, [
            *bs, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
            "--execute"]),
        Step("groups-reset-offset", CONSUMER_GROUPS, [
            *bs, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1",
            "--to-offset", "1", "--execute"]),
        Step("groups-describe-reset", CONSUMER_GROUPS, [*bs, "--describe", "--group", GROUP]),
        Step("acls-add", ACLS, [*bs, "--add", "--allow-principal", "User:alice",
                                "--operation", "Read", "--operation", "Describe",
                                "--topic", TOPIC, "--group", GROUP]),
        Step("acls-add-prefixed", ACLS, [*bs, "--add", "--deny-principal", "User:bob",
                                         "--operation", "Write", "--topic", "tools-",
                                         "--resource-pattern-type", "prefixed"]),
        Step("acls-list", ACLS, [*bs, "--list", "--topic", TOPIC]),
        Step("acls-remove", ACLS, [*bs, "--remove", "--force", "--allow-principal",
                                   "User:alice", "--operation", "Describe", "--topic", TOPIC]),
        Step("acls-list-after", ACLS, [*bs, "--list", "--principal", "User:alice"]),
        Step("get-offsets-latest", GET_OFFSETS, [*bs, "--topic", TOPIC]),
        Step("delete-records", DELETE_RECORDS, [*bs, "--offset-json-file", str(delete)]),
        Step("get-offsets-earliest", GET_OFFSETS, [*bs, "--topic", TOPIC, "--time", "-2"]),
        Step("log-dirs", LOG_DIRS, [*bs, "--describe", "--topic-list", TOPIC]),
        Step("quorum-status", METADATA_QUORUM, [*bs, "describe", "--status"]),
        Step("quorum-replication", METADATA_QUORUM, [*bs, "describe", "--replication"]),
        Step("features", FEATURES, [*bs, "describe"]),
        Step("producer-perf", PRODUCER_PERF, [
            "--topic", PERF, "--num-records", str(PERF_RECORDS), "--record-size", "100",
            "--throughput", "-1", "--command-property", f"bootstrap.servers={bootstrap}",
            "acks=all"]),
        Step("producer-perf-txn", PRODUCER_PERF, [
            "--topic", TXN_PERF, "--num-records", "300", "--record-size", "50",
            "--throughput", "-1", "--transactional-id", TXN_ID,
            "--transaction-duration-ms", "50",
            "--command-property", f"bootstrap.servers={bootstrap}"]),
        Step("consumer-perf", CONSUMER_PERF, [
            *bs, "--topic", PERF, "--num-records", str(PERF_RECORDS), "--timeout", "60000",
            "--group", "tools-perf-group"]),
        Step("transactions-list", TRANSACTIONS, [*bs, "list"]),
        Step("transactions-describe", TRANSACTIONS, [*bs, "describe", "--transactional-id",
                                                     TXN_ID]),
        Step("transactions-producers", TRANSACTIONS, [
            *bs, "describe-producers", "--topic", TXN_PERF, "--partition", "0"]),
    ]


def reassignment(replicas: list[int]) -> dict[str, object]:
    """Partition 0 of TOPIC onto its replicas rotated by one: the same brokers, another
    preferred leader."""
    rotated = replicas[1:] + replicas[:1]
    return {"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": rotated, "log_dirs": ["any"] * len(rotated)}
    ]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tools-cluster"), 1, 3, AUTHORIZER) as up:
        yield up


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[ApacheKafka]]:
    """Apache Kafka with an authorizer, for kafka-acls (conftest's has none), starting in the
    background while the Odradek cluster comes up."""
    root = tmp_path_factory.mktemp("tools-kafka")
    kafka = ApacheKafka(root / "data", root / "kafka.log", overrides=AUTHORIZER)

    def start() -> ApacheKafka:
        kafka.start()
        return kafka

    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(start)
    if kafka.alive():
        kafka.stop()


@pytest.fixture(scope="module")
def targets(reference: Future[ApacheKafka], cluster: Cluster,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Target]:
    """The first batch on Odradek and on Kafka, side by side; the second (a reassignment
    among three brokers) on Odradek only."""
    scratch = tmp_path_factory.mktemp("tools-scratch")
    kafka = reference.result()
    sides = {"odradek": (cluster.bootstrap.split(",")[0], 3), "kafka": (kafka.bootstrap, 1)}
    for name in sides:
        (scratch / name).mkdir()
    with ThreadPoolExecutor(2) as pool:
        firsts = {name: pool.submit(run_tools, first_batch(bootstrap, rf, scratch / name))
                  for name, (bootstrap, rf) in sides.items()}
        done = {name: future.result() for name, future in firsts.items()}
    odradek_bootstrap = sides["odradek"][0]
    second = run_tools(second_batch(odradek_bootstrap, scratch / "odradek"))
    return {"odradek": Target(odradek_bootstrap, 3, done["odradek"], second),
            "kafka": Target(kafka.bootstrap, 1, done["kafka"], {})}


def second_batch(bootstrap: str, scratch: Path) -> list[Step]:
    """The reassignment, its verification and the preferred election it calls for."""
    bs = ["--bootstrap-server", bootstrap]
    replicas = partitions(bootstrap, TOPIC)[0].replicas
    plan = scratch / "reassign.json"
    plan.write_text(json.dumps(reassignment(replicas)))
    topics = scratch / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
    return [
        Step("reassign-generate", REASSIGN, [*bs, "--generate", "--topics-to-move-json-file",
                                             str(topics), "--broker-list", "1,2,3"]),
        Step("reassign-execute", REASSIGN, [*bs, "--execute", "--reassignment-json-file",
                                            str(plan)]),
        Step("reassign-verify", REASSIGN, [*bs, "--verify", "--reassignment-json-file",
                                           str(plan)]),
        Step("leader-election", LEADER_ELECTION, [*bs, "--election-type", "preferred",
                                                  "--topic", TOPIC, "--partition", "0"]),
        Step("topics-describe-after", TOPICS, [*bs, "--describe", "--topic", TOPIC]),
    ]


@pytest.fixture(scope="module")
def odradek(targets: dict[str, Target]) -> Target:
    return targets["odradek"]


@pytest.fixture(scope="module")
def kafka(targets: dict[str, Target]) -> Target:
    return targets["kafka"]



def same_output(name: str, odradek: Target, kafka: Target) -> list[str]:
    """The tool's output lines, once Odradek's equal Kafka's (whitespace runs as one)."""
    ours, theirs = ([" ".join(line.split()) for line in side.out(name).ok().lines]
                    for side in (odradek, kafka))
    assert ours == theirs, name
    return ours


def blocks(out: Outcome) -> set[frozenset[str]]:
    """The output as blocks, each a line and the indented lines under it, all in no order:
    the tools print some from hash maps, whose order changes from JVM to JVM."""
    found: list[set[str]] = []
    for line in out.ok().lines:
        if line.strip():
            if not line[0].isspace() or not found:
                found.append(set())
            found[-1].add(" ".join(line.split()))
    return {frozenset(block) for block in found}


def same_blocks(name: str, odradek: Target, kafka: Target) -> set[frozenset[str]]:
    """The tool's blocks, once Odradek's equal Kafka's."""
    ours = blocks(odradek.out(name))
    assert ours == blocks(kafka.out(name)), name
    return ours


def test_topics_create_list_alter_and_describe(odradek: Target, kafka: Target) -> None:
    for side in (odradek, kafka):
        assert side.out("topics-create").lines == [f"Created topic {TOPIC}."]
        assert side.out("topics-alter").ok().stdout == ""
    assert same_output("topics-list", odradek, kafka) == sorted(
        [COMPACTED, PERF, TOPIC, TXN_PERF])
    header, *rows = odradek.out("topics-describe").ok().lines
    assert re.fullmatch(rf"Topic: {TOPIC}\tTopicId: [\w-]{{22}}\tPartitionCount: 4\t"
                        r"ReplicationFactor: 3\tConfigs: retention.ms=3600000", header)
    held = partitions(odradek.bootstrap, TOPIC)
    # partition 0 was reassigned since (see the last test): it held its rollback's replicas
    original = json.loads(odradek.out("reassign-execute").ok().lines[2])["partitions"][0]
    held[0].replicas = held[0].isrs = original["replicas"]
    held[0].leader = original["replicas"][0]
    assert [row.split("\t")[1:] for row in rows] == [
        [f"Topic: {TOPIC}", f"Partition: {p}", f"Leader: {held[p].leader}",
         f"Replicas: {','.join(map(str, held[p].replicas))}",
         f"Isr: {','.join(map(str, held[p].isrs))}", "Elr: ", "LastKnownElr: "]
        for p in range(4)]
    kafka_rows = kafka.out("topics-describe").lines[1:]
    assert [row.split("\t")[:3] for row in rows] == [row.split("\t")[:3] for row in kafka_rows]


def test_configs_of_topics_brokers_clients_and_users(odradek: Target, kafka: Target) -> None:
    """Kafka answers a describe from its metadata cache, which may not have caught up with the
    alteration just made; so Odradek's answers are held to Kafka's as a caught-up Kafka
    gives them."""
    ours = odradek.out("configs-describe-topic").ok().lines
    assert ours[:2] == [
        f"Dynamic configs for topic {TOPIC} are:",
        "  max.message.bytes=2000000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "max.message.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}"]
    # as Kafka: log.roll.ms has no default of its own, log.roll.hours's is not listed
    assert ours[2] == ("  segment.ms=7200000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                       "segment.ms=7200000}")
    assert len(ours) == 3, "retention.ms was deleted"
    resource = ConfigResource("topic", TOPIC)
    client = admin(odradek.bootstrap)
    held = client.describe_configs([resource])[resource].result(TIMEOUT)
    assert (held["max.message.bytes"].value, held["retention.ms"].value,
            held["retention.ms"].is_default) == ("2000000", "604800000", True)
    assert odradek.out("configs-describe-broker").ok().lines == [
        "Default configs for brokers in the cluster are:",
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "log.cleaner.threads=2}"]
    assert odradek.out("configs-describe-quota").ok().lines == [
        "Quota configs for client-id 'tools-client' are consumer_byte_rate=2097152.0, "
        "producer_byte_rate=1048576.0"]
    assert odradek.out("configs-describe-scram").ok().lines == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192"]
    for name in ("configs-alter-topic", "configs-alter-broker", "configs-alter-quota",
                 "configs-alter-scram"):
        same_output(name, odradek, kafka)
    users = client.describe_user_scram_credentials(["alice"])
    (info,) = users["alice"].result(TIMEOUT).scram_credential_infos
    assert (info.mechanism.name, info.iterations) == ("SCRAM_SHA_512", 8192)


def consumed(side: Target) -> set[tuple[int, int, str, str]]:
    """The console consumer's lines: partition, offset, key and value."""
    out = side.out("console-consumer").ok()
    assert f"Processed a total of {len(RECORDS)} messages" in out.stderr
    rows = [line.split("\t") for line in out.lines]
    return {(int(p.removeprefix("Partition:")), int(o.removeprefix("Offset:")), k, v)
            for p, o, k, v in rows}


def test_console_producer_and_consumer(odradek: Target, kafka: Target) -> None:
    ours = consumed(odradek)
    assert {(k, v) for _, _, k, v in ours} == set(RECORDS)
    assert ours == consumed(kafka), "the same partitioner puts each key where Kafka does"
    consumer = confluent_consumer(odradek.bootstrap, **{"group.id": "tools-check"})
    try:
        for partition in range(4):
            low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition),
                                                       TIMEOUT)
            assert high == len([r for r in ours if r[0] == partition])
    finally:
        consumer.close()


def test_consumer_groups_describe_and_reset_offsets(odradek: Target, kafka: Target) -> None:
    assert same_output("groups-list", odradek, kafka) == [GROUP]
    before = same_output("groups-describe", odradek, kafka)
    assert before[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                 "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    for name in ("groups-reset-earliest", "groups-reset-offset"):
        assert same_blocks(name, odradek, kafka)
    after = same_output("groups-describe-reset", odradek, kafka)
    current = {int(row.split()[2]): int(row.split()[3]) for row in after[2:]}
    assert current == {0: 0, 1: 1, 2: 0, 3: 0}
    consumer = confluent_consumer(odradek.bootstrap, **{"group.id": GROUP})
    try:
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(4)], TIMEOUT)
        assert {tp.partition: tp.offset for tp in committed} == current
    finally:
        consumer.close()


def test_acls_add_list_and_remove(odradek: Target, kafka: Target) -> None:
    for name in ("acls-add", "acls-add-prefixed", "acls-list", "acls-remove",
                 "acls-list-after"):
        same_blocks(name, odradek, kafka)
    assert describe_acls(odradek.bootstrap) == {
                    ("TOPIC", TOPIC, "LITERAL", "User:alice", "READ", "ALLOW"),
                    ("GROUP", GROUP, "LITERAL", "User:alice", "READ", "ALLOW"),
                    ("GROUP", GROUP, "LITERAL", "User:alice", "DESCRIBE", "ALLOW"),
                    ("TOPIC", "tools-", "PREFIXED", "User:bob", "WRITE", "DENY")}


def describe_acls(bootstrap: str) -> set[tuple[str, ...]]:
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    client = admin(bootstrap)  # held: the future fails once its client is collected
    bindings: list[AclBinding] = client.describe_acls(everything).result(TIMEOUT)
    return {(b.restype.name, b.name, b.resource_pattern_type.name, b.principal,
             b.operation.name, b.permission_type.name) for b in bindings}


def test_get_offsets_and_delete_records(odradek: Target, kafka: Target) -> None:
    latest = same_output("get-offsets-latest", odradek, kafka)
    ends = {int(line.split(":")[1]): int(line.split(":")[2]) for line in latest}
    assert sum(ends.values()) == len(RECORDS)
    assert same_output("delete-records", odradek, kafka)[-1] == (
        f"partition: {TOPIC}-0 low_watermark: 1")
    assert same_output("get-offsets-earliest", odradek, kafka) == [
        f"{TOPIC}:{p}:{1 if p == 0 else 0}" for p in range(4)]
    consumer = confluent_consumer(odradek.bootstrap, **{"group.id": "tools-check"})
    try:
        watermarks = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), TIMEOUT)
                      for p in range(4)]
    finally:
        consumer.close()
    assert watermarks == [(1 if p == 0 else 0, ends[p]) for p in range(4)]


def test_log_dirs(odradek: Target, kafka: Target) -> None:
    out = odradek.out("log-dirs").ok()
    assert out.lines[:2] == ["Querying brokers for log directories information",
                             "Received log directory information from brokers 1,2,3"]
    assert kafka.out("log-dirs").lines[0] == out.lines[0]
    report = json.loads(out.lines[2])
    assert report["version"] == 1 and [b["broker"] for b in report["brokers"]] == [1, 2, 3]
    sizes = []
    for broker in report["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["error"] is None and log_dir["logDir"].endswith(f"broker-{broker['broker']}")
        sizes.append({p["partition"]: p["size"] for p in log_dir["partitions"]
                      if not p["isFuture"] and p["offsetLag"] == 0})
    assert sizes[0] == sizes[1] == sizes[2], "replicas hold the same bytes"
    assert set(sizes[0]) == {f"{TOPIC}-{p}" for p in range(4)}
    assert all((size > 0) == (f"{TOPIC}-3" != name) for name, size in sizes[0].items())


def test_metadata_quorum_describe(odradek: Target, kafka: Target, cluster: Cluster) -> None:
    status = dict(line.split(":", 1) for line in odradek.out("quorum-status").ok().lines)
    assert list(status) == [line.split(":", 1)[0] for line in kafka.out("quorum-status").lines]
    assert status["ClusterId"].strip() == cluster.layout["cluster_id"]
    controller = cluster.node("controller-1")
    assert status["LeaderId"].strip() == str(controller["id"])
    assert json.loads(status["CurrentVoters"]) == [
        {"id": controller["id"], "endpoints": [f"CONTROLLER://127.0.0.1:{controller['port']}"]}]
    assert json.loads(status["CurrentObservers"]) == [{"id": 1}, {"id": 2}, {"id": 3}]
    header, *rows = (line.split() for line in odradek.out("quorum-replication").ok().lines)
    assert header == kafka.out("quorum-replication").lines[0].split()
    assert [(row[0], row[-1]) for row in rows] == [
        (str(controller["id"]), "Leader"), ("1", "Observer"), ("2", "Observer"),
        ("3", "Observer")]


def features(side: Target) -> dict[str, list[str]]:
    return {line.split()[1]: line.split()[3::2] for line in side.out("features").ok().lines}


def test_features_describe(odradek: Target, kafka: Target) -> None:
    ours = features(odradek)
    assert ours == {
        "group.version": ["0", "1", "1", ours["group.version"][3]],
        "kraft.version": ["0", "0", "0", ours["group.version"][3]],
        "metadata.version": ["3.3-IV3", "4.0-IV3", "4.0-IV3", ours["group.version"][3]],
        "share.version": ["0", "1", "1", ours["group.version"][3]],
        "transaction.version": ["0", "1", "1", ours["group.version"][3]]}
    theirs = features(kafka)
    assert {name: values[0] for name, values in ours.items()} == {
        name: theirs[name][0] for name in ours}, "the same minimum versions"


def test_producer_and_consumer_perf(odradek: Target, kafka: Target) -> None:
    for side in (odradek, kafka):
        produced = side.out("producer-perf").ok().lines[-1]
        assert produced.startswith(f"{PERF_RECORDS} records sent, ")
        header, row = side.out("consumer-perf").ok().lines[-2:]
        report = dict(zip(header.split(", "), row.split(", "), strict=True))
        assert int(report["data.consumed.in.nMsg"]) == PERF_RECORDS
    consumer = confluent_consumer(odradek.bootstrap, **{"group.id": "tools-check"})
    try:
        assert sum(consumer.get_watermark_offsets(TopicPartition(PERF, p), TIMEOUT)[1]
                   for p in range(2)) == PERF_RECORDS
    finally:
        consumer.close()


def table(out: Outcome) -> list[dict[str, str]]:
    header, *rows = (line.split("\t") for line in out.ok().lines)
    return [dict(zip((h.strip() for h in header), (c.strip() for c in row), strict=False))
            for row in rows]


def test_transactions_list_describe_and_producers(odradek: Target, kafka: Target) -> None:
    for side in (odradek, kafka):
        assert side.out("producer-perf-txn").ok().lines[-1].startswith("300 records sent, ")
    for name in ("transactions-list", "transactions-describe", "transactions-producers"):
        assert odradek.out(name).lines[0].split() == kafka.out(name).lines[0].split()
    (listed,) = table(odradek.out("transactions-list"))
    assert (listed["TransactionalId"], listed["TransactionState"]) == (TXN_ID, "CompleteCommit")
    (described,) = table(odradek.out("transactions-describe"))
    assert (described["ProducerId"], described["CoordinatorId"], described["TopicPartitions"]
            ) == (listed["ProducerId"], listed["Coordinator"], "")
    (producer,) = table(odradek.out("transactions-producers"))
    assert producer["ProducerId"] == listed["ProducerId"]
    # At transaction.version 1 the epoch stays and the sequence runs on (Kafka, at 2, bumps
    # the epoch at each commit and so restarts it).
    assert (producer["LastSequence"], producer["CurrentTransactionStartOffset"]) == (
        "299", "None")


def test_reassign_partitions_and_preferred_leader_election(odradek: Target) -> None:
    generated = odradek.out("reassign-generate").ok().lines
    assert generated[0] == "Current partition replica assignment"
    proposed = json.loads(generated[generated.index("Proposed partition reassignment "
                                                    "configuration") + 1])
    assert sorted(p["partition"] for p in proposed["partitions"]) == [0, 1, 2, 3]
    assert all(sorted(p["replicas"]) == [1, 2, 3] for p in proposed["partitions"])
    execute = odradek.out("reassign-execute").ok().lines
    assert execute[-1] == f"Successfully started partition reassignment for {TOPIC}-0"
    rollback = json.loads(execute[2])["partitions"][0]["replicas"]
    rotated = rollback[1:] + rollback[:1]
    assert odradek.out("reassign-verify").ok().lines[:2] == [
        "Status of partition reassignment:",
        f"Reassignment of partition {TOPIC}-0 is completed."]
    assert odradek.out("leader-election").ok().lines == [
        f"Successfully completed leader election (PREFERRED) for partitions {TOPIC}-0"]
    held = partitions(odradek.bootstrap, TOPIC)[0]
    assert (held.replicas, held.leader) == (rotated, rotated[0])
    row = odradek.out("topics-describe-after").ok().lines[1].split("\t")
    assert row[3:5] == [f"Leader: {rotated[0]}", f"Replicas: {','.join(map(str, rotated))}"]
