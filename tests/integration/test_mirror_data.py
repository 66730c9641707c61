"""The mirror's data path between two `odradek dev` clusters, east -> west, through
`odradek mirror` (its topic sync creating each `east.<topic>` on west): compacted and
compressed topics, at-least-once mode, two processes sharing a flow, the metrics."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, NewTopic

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.cluster import admin
from tests.integration.mirror_process import MirrorProcess, properties
from tests.integration.mirroring import produce, read_all
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.mirror]

FAST_CLEANER = {"log.cleaner.backoff.ms": "100"}


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess,
                                                                           BrokerProcess]]:
    root = tmp_path_factory.mktemp("mirror")
    east = BrokerProcess(root / "east", root / "east.log", FAST_CLEANER)
    west = BrokerProcess(root / "west", root / "west.log")
    east.start()
    west.start()
    yield east, west
    east.stop()
    west.stop()


def topics(bootstrap: str, *specs: NewTopic) -> None:
    client = admin(bootstrap)
    for future in client.create_topics(list(specs)).values():
        future.result(30)


def source_topic(east: BrokerProcess, name: str, partitions: int,
                 config: dict[str, str] | None = None) -> None:
    topics(east.bootstrap, NewTopic(name, partitions, 1, config=config or {}))


def mirror_of(east: BrokerProcess, west: BrokerProcess, directory: Path, name: str,
              **settings: str) -> MirrorProcess:
    """`odradek mirror` copying the topic `name` from east to west (not yet started)."""
    return MirrorProcess(directory, properties(
        {"east": east.bootstrap, "west": west.bootstrap},
        **{"east->west.enabled": "true", "east->west.topics": name, **settings}))


def stop_cleaning(bootstrap: str, topic: str) -> None:
    """No more cleaning, so that the source stays as the mirror reads it."""
    client = admin(bootstrap)
    resource = ConfigResource("topic", topic, set_config={"cleanup.policy": "delete"})
    for future in client.alter_configs([resource]).values():
        future.result(30)


def copied(west: BrokerProcess, name: str, partition: int, count: int) -> bool:
    """West's `east.<name>` (created by the mirror's topic sync) holds `count` records."""
    try:
        return len(read_all(west.bootstrap, f"east.{name}", [partition])[partition]) >= count
    except KafkaException:  # not created yet
        return False


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_compacted_compressed_topic_mirrors_every_surviving_record(
        clusters: tuple[BrokerProcess, BrokerProcess], tmp_path: Path, codec: str) -> None:
    east, west = clusters
    name = f"compacted-{codec}"
    source_topic(east, name, 1, {
        "cleanup.policy": "compact", "segment.bytes": "16384", "segment.ms": "500",
        "min.cleanable.dirty.ratio": "0.01"})
    rows = [(0, b"key-%d" % (i % 50), b"%d-" % i + b"x" * 200) for i in range(2000)]
    produce(east.bootstrap, name, rows, **{"compression.type": codec, "batch.size": 8000})
    time.sleep(0.6)  # segment.ms is an age: the active segment rolls only once it passed
    produce(east.bootstrap, name, [(0, b"roll", b"roll")])

    def compacted() -> bool:
        return len(read_all(east.bootstrap, name, [0])[0]) < len(rows) // 2

    wait_until(compacted, 60, "the source's cleaner compacting the topic")
    stop_cleaning(east.bootstrap, name)
    seen: list[object] = []

    def settled() -> bool:  # a cleaning under way when the policy changed has finished
        seen.append(read_all(east.bootstrap, name, [0])[0])
        return len(seen) > 1 and seen[-1] == seen[-2]

    wait_until(settled, 30, "the source log settling", interval=1)
    source = read_all(east.bootstrap, name, [0])[0]
    mirror = mirror_of(east, west, tmp_path, name).start()
    try:
        wait_until(lambda: copied(west, name, 0, len(source)), 60,
                   lambda: f"the compacted records on west\n{mirror.logs()}")
        assert read_all(west.bootstrap, f"east.{name}", [0])[0] == source
    finally:
        mirror.stop()


def test_at_least_once_mode_copies_without_transactions(
        clusters: tuple[BrokerProcess, BrokerProcess], tmp_path: Path) -> None:
    east, west = clusters
    source_topic(east, "plain", 2)
    rows = [(i % 2, b"%d" % i, b"value-%d" % i) for i in range(500)]
    produce(east.bootstrap, "plain", rows)
    mirror = mirror_of(east, west, tmp_path, "plain",
                       **{"exactly.once.support": "disabled"}).start()
    try:
        wait_until(lambda: all(copied(west, "plain", p, 250) for p in (0, 1)), 60,
                   lambda: f"every record on west\n{mirror.logs()}")
        assert read_all(west.bootstrap, "east.plain", [0, 1]) == read_all(
            east.bootstrap, "plain", [0, 1])
    finally:
        assert mirror.stop() == 0
    listed = subprocess.run([*ODRADEK, "transactions", "--bootstrap-server", west.bootstrap,
                             "list"], capture_output=True, text=True, check=True).stdout
    assert "mirror-east->west-plain-" not in listed


def test_two_processes_share_a_flow_and_the_survivor_takes_over_exactly_once(
        clusters: tuple[BrokerProcess, BrokerProcess], tmp_path: Path) -> None:
    east, west = clusters
    source_topic(east, "shared", 4)
    first = mirror_of(east, west, tmp_path / "first", "shared").start()
    second = mirror_of(east, west, tmp_path / "second", "shared").start()
    sent = 0

    def send(count: int) -> None:
        nonlocal sent
        produce(east.bootstrap, "shared", [(i % 4, b"%d" % i, b"v%d" % i)
                                           for i in range(sent, sent + count)])
        sent += count

    def owned(mirror: MirrorProcess) -> set[int]:
        return {partition for _, partition in mirror.owned()}

    try:
        send(400)

        def split() -> bool:
            a, b = owned(first), owned(second)
            return bool(a) and bool(b) and not a & b and a | b == {0, 1, 2, 3}

        wait_until(split, 60, lambda: f"both processes owning partitions\n{first.logs()}\n"
                   f"{second.logs()}", ignoring=OSError)
        send(400)
        first.kill()
        send(400)
        wait_until(lambda: owned(second) == {0, 1, 2, 3}, 60,
                   lambda: f"the survivor taking every partition\n{second.logs()}")
        send(400)
        wait_until(lambda: all(copied(west, "shared", p, sent // 4) for p in range(4)), 90,
                   lambda: f"every record on west\n{second.logs()}")
        assert read_all(west.bootstrap, "east.shared", range(4)) == read_all(
            east.bootstrap, "shared", range(4))
    finally:
        second.stop()


def test_source_metrics_appear_with_mm2s_labels_and_move(
        clusters: tuple[BrokerProcess, BrokerProcess], tmp_path: Path) -> None:
    east, west = clusters
    source_topic(east, "metered", 1)
    mirror = mirror_of(east, west, tmp_path, "metered").start()
    prefix = "kafka_connect_mirror_mirrorsourceconnector_"
    labels = (("partition", "0"), ("source", "east"), ("target", "west"),
              ("topic", "east.metered"))
    try:
        wait_until(lambda: labels in mirror.samples(prefix + "record_count"), 60,
                   lambda: f"the partition's metrics\n{mirror.logs()}", ignoring=OSError)
        assert mirror.samples(prefix + "record_count")[labels] == 0
        produce(east.bootstrap, "metered", [(0, b"k", b"v" * 100)] * 300)
        wait_until(lambda: mirror.samples(prefix + "record_count")[labels] == 300, 60,
                   "the record count moving")
        for name in ("byte_count", "byte_rate", "record_rate", "record_age_ms",
                     "record_age_ms_min", "record_age_ms_max", "record_age_ms_avg",
                     "replication_latency_ms", "replication_latency_ms_min",
                     "replication_latency_ms_max", "replication_latency_ms_avg"):
            value = mirror.samples(prefix + name)[labels]
            assert value >= 0 and value == value, name  # not NaN: it has samples
        assert mirror.samples(prefix + "byte_count")[labels] > 300 * 100
        assert mirror.samples("odradek_mirror_lag_records")[labels] == 0
        assert labels in mirror.samples("odradek_mirror_lag_seconds")
    finally:
        mirror.stop()
