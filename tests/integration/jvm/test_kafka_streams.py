"""Kafka Streams, exactly-once (`exactly_once_v2`), on a 3-broker Odradek cluster: the
`ClickStreams` application (a repartition, a changelogged tumbling-window sum, a KTable-KTable
join and a KTable re-grouped by a new key) runs as two instances while input is produced;
mid-run a broker leading the app's partitions is killed with kill -9 (and restarted later)
and one instance is killed with kill -9 and restarted, so that its tasks move and their
stores are restored from their changelogs. Every output, read with read_committed, must
equal what `click_dataset` computes from the input: no click missing or twice, no wrong
aggregate.

One run of the scenario is shared by the module; each test checks one of its outcomes."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, NewTopic

from tests.integration.broker_process import ODRADEK
from tests.integration.cluster import TIMEOUT, Cluster, admin, partitions, running_cluster
from tests.integration.jvm import click_dataset
from tests.integration.jvm.click_dataset import Click
from tests.integration.jvm.streams_app import OutputReader, StreamsInstance, committed_reader
from tests.waiting import wait_until

APP = "clicks-app"
PARTITIONS = 3
CLICKS = 3000
CHUNKS = 5
SLICE = 50  # clicks fed at a time until an instance is caught inside a transaction
INPUTS = ["clicks", "users"]
OUTPUTS = ["clicks-by-user", "window-sums", "user-regions", "region-totals"]
REPARTITIONS = [f"{APP}-by-user-repartition", f"{APP}-by-region-repartition"]
CHANGELOGS = [f"{APP}-window-sums-store-changelog", f"{APP}-user-totals-store-changelog",
              f"{APP}-users-store-changelog", f"{APP}-region-totals-store-changelog"]
WAIT = 180.0  # the machine is shared: rebalances, restores and JVM starts are slow

CLUSTER_OVERRIDES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


@dataclass
class Run:
    """What the scenario did and saw."""

    expected: click_dataset.Expected
    outputs: dict[str, list[tuple[str, str]]]
    instances: dict[str, StreamsInstance]
    reports: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    exits: dict[str, int] = field(default_factory=dict)
    killed_broker: int = -1
    topics: dict[str, tuple[int, dict[str, str]]] = field(default_factory=dict)
    log_start: dict[str, list[int]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    killed_transaction: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def reached(self, step: str) -> None:
        self.timings[step] = round(time.monotonic() - self.started, 1)


class InputProducer:
    """An idempotent acks=all producer of the input topics; each chunk is flushed and every
    record acknowledged. It partitions keys as the Java client does (murmur2), so that the
    users table is co-partitioned with the repartition topic Streams writes by user."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5,
                                  "partitioner": "murmur2_random"})
        self.errors: list[KafkaError] = []

    def _delivered(self, error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            self.errors.append(error)

    def users(self, regions: dict[str, str]) -> None:
        for user, region in regions.items():
            self.producer.produce("users", region.encode(), user.encode(),
                                  on_delivery=self._delivered)
        self.flush()

    def clicks(self, chunk: list[Click]) -> None:
        for click in chunk:
            self.producer.produce("clicks", click.value.encode(), click.click_id.encode(),
                                  timestamp=click.timestamp, on_delivery=self._delivered)
        self.flush()

    def flush(self) -> None:
        assert self.producer.flush(120) == 0
        assert self.errors == []


def create_topics(bootstrap: str) -> None:
    client = admin(bootstrap)
    futures = client.create_topics([NewTopic(name, PARTITIONS, 3, config={
        "min.insync.replicas": "2"}) for name in INPUTS + OUTPUTS])
    for future in futures.values():
        future.result(TIMEOUT)


def describe_topics(bootstrap: str, names: list[str]) -> dict[str, tuple[int, dict[str, str]]]:
    """Each topic's replication factor and its topic configs set explicitly."""
    client = admin(bootstrap)
    resources = {name: ConfigResource(ConfigResource.Type.TOPIC, name) for name in names}
    configs = client.describe_configs(list(resources.values()))
    described = {}
    for name, resource in resources.items():
        entries = configs[resource].result(TIMEOUT)
        explicit = {key: entry.value for key, entry in entries.items()
                    if entry.source == 1}  # DYNAMIC_TOPIC_CONFIG
        replicas = {len(p.replicas) for p in partitions(bootstrap, name).values()}
        assert len(replicas) == 1, (name, replicas)
        described[name] = (replicas.pop(), explicit)
    return described


def log_start_offsets(bootstrap: str, topic: str) -> list[int]:
    consumer = committed_reader(bootstrap)
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[0]
                for p in range(PARTITIONS)]
    finally:
        consumer.close()


def describe_transaction(bootstrap: str, transactional_id: str) -> dict[str, Any]:
    """The transaction's state at its coordinator (`odradek transactions describe`)."""
    result = subprocess.run(
        [*ODRADEK, "transactions", "--bootstrap-server", bootstrap, "--json", "describe",
         "--transactional-id", transactional_id],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert isinstance(row, dict)
    return row


def freeze_inside_a_transaction(bootstrap: str, instance: StreamsInstance,
                                producer: InputProducer, chunk: list[Click]
                                ) -> tuple[dict[str, Any], int]:
    """Feeds `chunk` in slices and freezes `instance` after each (from the second on: after
    an idle spell Streams commits its first batch at once) until its coordinator shows it
    inside a transaction; the transaction and how many clicks of `chunk` were fed."""
    transactional_id = instance.transactional_id()
    seen = []
    for start in range(0, len(chunk), SLICE):
        producer.clicks(chunk[start:start + SLICE])
        if start == 0:
            continue
        instance.freeze()
        transaction = describe_transaction(bootstrap, transactional_id)
        if transaction["TransactionState"] == "Ongoing" and transaction["TopicPartitions"]:
            return transaction, start + SLICE
        seen.append(transaction)
        instance.thaw()
    raise AssertionError(f"{transactional_id} never caught inside a transaction: {seen}")


def distinct_clicks(reader: OutputReader) -> int:
    return len({click_id for _, click_id in reader.records["clicks-by-user"]})


def wait_for_clicks(reader: OutputReader, count: int, instances: list[StreamsInstance]) -> None:
    wait_until(lambda: distinct_clicks(reader) >= count, WAIT,
               lambda: (f"{count} clicks through the app, {distinct_clicks(reader)} seen; "
                        + "; ".join(f"{i.state_dir.name}: {i.states()} {i.logs()[-1500:]}"
                                    for i in instances)),
               between=reader.poll)


def outputs_final(reader: OutputReader, expected: click_dataset.Expected) -> bool:
    return (reader.last_values("window-sums") == expected.window_sums
            and reader.last_values("user-regions") == expected.user_regions
            and reader.last_values("region-totals") == expected.region_totals)


def differences(reader: OutputReader, expected: click_dataset.Expected) -> str:
    """What the outputs' last values lack, get wrong or have too many, for a failure."""
    lines = [f"clicks-by-user: {distinct_clicks(reader)} distinct of {CLICKS}"]
    for topic, want in (("window-sums", expected.window_sums),
                        ("user-regions", expected.user_regions),
                        ("region-totals", expected.region_totals)):
        got = reader.last_values(topic)
        wrong = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
        extra = sorted(set(got) - set(want))
        lines.append(f"{topic}: {len(got)} keys of {len(want)}, (got, want) differ for "
                     f"{dict(list(wrong.items())[:10])} ({len(wrong)}), extra {extra[:10]}")
    return "\n".join(lines)


def play(cluster: Cluster, root: Path) -> Run:
    bootstrap = cluster.bootstrap
    create_topics(bootstrap)
    base = (int(time.time() * 1000) // click_dataset.WINDOW_MS) * click_dataset.WINDOW_MS
    all_clicks = click_dataset.clicks(CLICKS, base)
    regions = {**click_dataset.FIRST_REGIONS, **click_dataset.MOVES}
    chunk = CLICKS // CHUNKS
    chunks = [all_clicks[i:i + chunk] for i in range(0, CLICKS, chunk)]
    expected = click_dataset.expected(all_clicks, regions)

    producer = InputProducer(bootstrap)
    instances = {name: StreamsInstance(bootstrap, APP, root / f"state-{name}",
                                       root / f"streams-{name}.log") for name in ("a", "b")}
    reader = OutputReader(bootstrap, OUTPUTS, PARTITIONS)
    run = Run(expected, reader.records, instances)
    try:
        producer.users(click_dataset.FIRST_REGIONS)
        producer.clicks(chunks[0])
        for instance in instances.values():
            instance.start()
        wait_for_clicks(reader, chunk, list(instances.values()))
        run.reached("first chunk through")

        # A broker leading a partition of the app's repartition topic dies mid-processing.
        run.killed_broker = partitions(bootstrap, REPARTITIONS[0])[0].leader
        producer.clicks(chunks[1])
        cluster.stop(f"broker-{run.killed_broker}", kill=True)
        producer.clicks(chunks[2])
        wait_for_clicks(reader, 3 * chunk, list(instances.values()))
        run.reached("through the broker kill")

        # An instance dies inside a transaction and restarts: its transaction is aborted;
        # its state directory lost its checkpoints, so under EOS it wipes its stores and
        # restores them from the changelogs; meanwhile the other takes its tasks over,
        # restoring them too.
        run.killed_transaction, fed = freeze_inside_a_transaction(
            bootstrap, instances["b"], producer, chunks[3])
        instances["b"].kill()
        producer.clicks(chunks[3][fed:])
        run.reports["b-killed"] = instances["b"].reports
        producer.users(click_dataset.MOVES)
        cluster.start(f"broker-{run.killed_broker}")
        instances["b"].start()
        wait_for_clicks(reader, 4 * chunk, list(instances.values()))
        wait_until(lambda: all(i.running() for i in instances.values()), WAIT,
                   lambda: f"both instances running: {[i.states() for i in instances.values()]}")
        run.reached("through the instance kill")

        producer.clicks(chunks[4])
        wait_until(lambda: outputs_final(reader, expected), WAIT,
                   lambda: "the outputs' last values equal the expected:\n"
                   + differences(reader, expected), between=reader.poll)
        run.reached("outputs final")

        for instance in instances.values():
            instance.begin_close()
        for name, instance in instances.items():
            run.exits[name] = instance.exited()
            run.reports[name] = instance.reports
        run.reached("closed")
        reader.read_to_end()
        run.topics = describe_topics(bootstrap, REPARTITIONS + CHANGELOGS)
        run.log_start = {topic: log_start_offsets(bootstrap, topic) for topic in REPARTITIONS}
        run.reached("checked")
        print(f"\nstreams scenario timings (s): {run.timings}")
        return run
    finally:
        reader.close()
        for instance in instances.values():
            instance.stop_if_alive()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("streams")
    with running_cluster(root / "cluster", 1, 3, CLUSTER_OVERRIDES) as cluster:
        yield play(cluster, root)


def test_every_click_comes_out_exactly_once(run: Run) -> None:
    seen = Counter(run.outputs["clicks-by-user"])
    assert seen == run.expected.clicks_by_user


def test_the_killed_instance_was_inside_a_transaction(run: Run) -> None:
    """Instance b was killed while its coordinator showed it inside a transaction: the
    restarted instance's InitProducerId (same transactional.id) or the transaction timeout
    aborts it, and the exact outputs show nobody read what it had written."""
    assert run.killed_transaction["TransactionState"] == "Ongoing"
    assert run.killed_transaction["TopicPartitions"], run.killed_transaction


def test_windowed_sums_are_exact(run: Run) -> None:
    final = dict(run.outputs["window-sums"])
    assert final == run.expected.window_sums


def test_table_join_is_exact(run: Run) -> None:
    assert dict(run.outputs["user-regions"]) == run.expected.user_regions


def test_regrouped_table_is_exact(run: Run) -> None:
    assert dict(run.outputs["region-totals"]) == run.expected.region_totals


def test_instances_ran_without_errors_and_closed_cleanly(run: Run) -> None:
    assert run.exits == {"a": 0, "b": 0}
    for name, reports in run.reports.items():
        assert [r for r in reports if "uncaught" in r] == [], name
        assert "ERROR" not in [r.get("state") for r in reports], name
    for name in ("a", "b"):
        assert {"closed": True, "final": "NOT_RUNNING"} in run.reports[name]
        states = [r["state"] for r in run.reports[name] if "state" in r]
        if states[-1] == "NOT_RUNNING":
            states.pop()  # its listener runs on Streams' daemon close thread: maybe not at all
        assert states[-2:] == ["RUNNING", "PENDING_SHUTDOWN"], name


def test_stores_were_restored_from_their_changelogs(run: Run) -> None:
    restored: Counter[str] = Counter()
    for reports in (run.reports["a"], run.reports["b"]):
        for report in reports:
            if "restored" in report:
                restored[report["restored"]] += report["records"]
    # The survivor took the killed instance's tasks over with no standby replica: it read
    # their stores back from the changelogs.
    assert restored["window-sums-store"] > 0, run.reports
    assert restored["user-totals-store"] > 0, run.reports


def test_internal_topics_are_created_as_streams_asks(run: Run) -> None:
    for topic in REPARTITIONS + CHANGELOGS:
        replicas, configs = run.topics[topic]
        assert replicas == 3, topic
        assert configs["min.insync.replicas"] == "2", topic
    for topic in REPARTITIONS:
        configs = run.topics[topic][1]
        assert configs["cleanup.policy"] == "delete"
        assert configs["retention.ms"] == "-1"
    window_changelog = run.topics[CHANGELOGS[0]][1]
    assert window_changelog["cleanup.policy"] == "compact,delete"
    for topic in CHANGELOGS[1:]:
        assert run.topics[topic][1]["cleanup.policy"] == "compact"


def test_repartition_topics_are_purged(run: Run) -> None:
    """Streams deletes the records of its repartition topics that it has committed past
    (DeleteRecords)."""
    for topic in REPARTITIONS:
        assert any(offset > 0 for offset in run.log_start[topic]), (topic, run.log_start)
