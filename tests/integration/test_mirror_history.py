"""`odradek mirror` across a restart and against clusters too small for its topics: the
checkpoints already written are read back at start and not emitted again (MM2's
CheckpointStore), and a topic whose replication factor a one-broker cluster refuses stops
the mirror at start with one line naming the setting and exit status 2. Two one-broker
`odradek dev` clusters, east and west."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from tests.integration import mm2_codec
from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import create_topic, unique
from tests.integration.mirror_process import MirrorProcess, properties
from tests.integration.test_cluster_admin import admin
from tests.integration.test_mirror_mm2 import dev_broker, read_all
from tests.waiting import wait_until

pytestmark = pytest.mark.mirror
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "east")


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "west")


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit `offsets` (partition -> offset) for `group`, leaving its other partitions;
    retried while the cluster's group coordinators load (the first group of a cluster)."""
    partitions = [CTopicPartition(topic, p, offset) for p, offset in offsets.items()]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    client = admin(bootstrap)

    def committed() -> bool:
        try:
            client.alter_consumer_group_offsets(request)[group].result(15)
        except (KafkaException, TimeoutError):
            return False
        return True

    wait_until(committed, 2 * TIMEOUT, f"{group} committed {offsets}")


def test_a_restarted_mirror_emits_no_checkpoint_again(
        east: BrokerProcess, west: BrokerProcess, tmp_path: Path) -> None:
    topic = create_topic(east.bootstrap, unique("orders"), 2)
    producer = Producer({"bootstrap.servers": east.bootstrap})
    for i in range(40):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(TIMEOUT) == 0
    group = unique("app")
    config = properties({"east": east.bootstrap, "west": west.bootstrap}, **{
        "east->west.enabled": "true", "topics": topic, "groups": group,
        "emit.heartbeats.enabled": "false"})

    def checkpoints() -> list[tuple[int, int, int]]:
        """(partition, upstream, downstream) of the group's checkpoints, in log order."""
        found = (mm2_codec.checkpoint(m.key(), m.value())
                 for m in read_all(west.bootstrap, "east.checkpoints.internal"))
        return [(c.partition, c.upstream, c.downstream) for c in found
                if c.group == group and c.topic == f"east.{topic}"]

    first = MirrorProcess(tmp_path / "first", config).start()
    try:
        commit(east.bootstrap, group, topic, {0: 10})
        wait_until(lambda: len(checkpoints()) == 1, TIMEOUT, lambda: f"{checkpoints()}")
    finally:
        assert first.stop() == 0
    (checkpoint,) = checkpoints()
    assert checkpoint == (0, 10, 10)

    second = MirrorProcess(tmp_path / "second", config).start()
    try:
        # A checkpoint emitted again for partition 0 (offset 10 unchanged) would come in
        # the restarted mirror's first round, before that of partition 1's new commit.
        commit(east.bootstrap, group, topic, {1: 5})
        wait_until(lambda: len(checkpoints()) >= 2, TIMEOUT, lambda: f"{checkpoints()}")
        assert checkpoints() == [(0, 10, 10), (1, 5, 5)]
        assert "east->west: read 1 checkpoints of 1 groups" in second.logs()
        # a new commit of partition 0 is checkpointed again
        commit(east.bootstrap, group, topic, {0: 15})
        wait_until(lambda: len(checkpoints()) >= 3, TIMEOUT, lambda: f"{checkpoints()}")
        assert checkpoints() == [(0, 10, 10), (1, 5, 5), (0, 15, 15)]
    finally:
        assert second.stop() == 0


@pytest.mark.parametrize(("setting", "cluster", "topic"), [
    ("replication.factor", "target", "{source}.{topic}"),
    ("offset-syncs.topic.replication.factor", "source", "mm2-offset-syncs.{target}.internal"),
    ("checkpoints.topic.replication.factor", "target", "{source}.checkpoints.internal"),
    ("heartbeats.topic.replication.factor", "target", "heartbeats"),
    ("offset.storage.replication.factor", "target", "mm2-offsets.{source}.internal"),
])
def test_a_replication_factor_above_the_brokers_stops_the_mirror_at_start(
        east: BrokerProcess, west: BrokerProcess, tmp_path: Path, setting: str, cluster: str,
        topic: str) -> None:
    # aliases of their own, so that no earlier case created the internal topics
    suffix = uuid.uuid4().hex[:6]
    source, target = f"east{suffix}", f"west{suffix}"
    replicated = create_topic(east.bootstrap, unique("rf"))
    config = properties({source: east.bootstrap, target: west.bootstrap}, **{
        f"{source}->{target}.enabled": "true", "topics": replicated,
        "emit.heartbeats.enabled": str(setting.startswith("heartbeats")).lower(),
        setting: "3"})
    mirror = MirrorProcess(tmp_path, config)
    stderr = tmp_path / "stderr"
    with stderr.open("w") as out:
        process = subprocess.Popen([*ODRADEK, "mirror", "--config", str(mirror.config_path)],
                                   stdout=subprocess.DEVNULL, stderr=out)
    try:
        returncode = process.wait(180)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"still running:\n{stderr.read_text()}") from None
    result = subprocess.CompletedProcess(process.args, returncode, "", stderr.read_text())
    assert result.returncode == 2, result.stderr
    alias = source if cluster == "source" else target
    name = topic.format(source=source, target=target, topic=replicated)
    expected = (f"odradek mirror: invalid configuration: {setting} = 3: cluster {alias} "
                f"cannot create topic {name}: INVALID_REPLICATION_FACTOR: ")
    lines = result.stderr.splitlines()
    assert lines[-1].startswith(expected), result.stderr
    assert "only 1 broker" in lines[-1], lines[-1]
    assert [line for line in lines if "replication" in line.lower()] == [lines[-1]], (
        result.stderr)
    assert "unreachable" not in result.stderr
