"""Kafka's own MirrorMaker 2 and `odradek mirror`, both ways, between two `odradek dev`
clusters (east -> west), on one MM2 properties file.

Three phases share the clusters, the topics and the groups:
1. real MM2 (dedicated mode) mirrors topic A, emits heartbeats, offset syncs and
   checkpoints, and syncs group GA's offsets to west;
2. MM2 stopped, `odradek mirror` on the same file continues A from MM2's progress and
   mirrors a new topic B; MM2's own client (RemoteClusterUtils, MirrorClient, and the
   Checkpoint/Heartbeat/OffsetSync decoders) reads what it wrote;
3. `odradek mirror` stopped, MM2 again continues A and B from our progress.
Each phase ends with a snapshot that the tests assert one by one.

Duplicates allowed in phase 2 (MM2's at-least-once): the remote partition is
`source[:k] + source[N+1:]`, k the records MM2 had copied and N the last offset it committed
to `mm2-offsets.east.internal`; after MM2's graceful stop N + 1 = k, so none.
`plugin.discovery=service_load` saves a 15-25 s classpath scan per herder and start. Not
differences: MM2 logs "invalid full fetch response with extraIds" at close (a client race
with the session-close request; Odradek keeps no fetch sessions), and a checkpoint-task
restart race in MM2 itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from odradek.mirror import formats
from tests.integration import mm2_codec
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic
from tests.integration.jvm.mirrormaker2 import MirrorMaker2, Mm2View, mm2_view
from tests.integration.mirror_process import FAST, MirrorProcess
from tests.integration.test_mirror_mm2 import committed_on, dev_broker, read_all
from tests.waiting import wait_until

pytestmark = pytest.mark.mirror
TIMEOUT = 180.0
PARTITIONS = 2
PER_PHASE = 10
TOPIC_A, TOPIC_B = "mm2t-a", "mm2t-b"
GROUP_A, GROUP_B = "mm2g-a", "mm2g-b"
REMOTE_A, REMOTE_B = f"east.{TOPIC_A}", f"east.{TOPIC_B}"
PROGRESS_TOPIC = "mm2-offsets.east.internal"

Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...], int]
"""(key, value, headers, CreateTime) of one record."""


@dataclass
class Phase:
    """What one mirror left behind: the records of each topic per partition on both sides
    (remote with their offsets), MM2's view, the progress and the groups' offsets."""
    mirror: str
    view: Mm2View
    source: dict[str, dict[int, list[Record]]] = field(default_factory=dict)
    remote: dict[str, dict[int, list[tuple[int, Record]]]] = field(default_factory=dict)
    progress: dict[tuple[str, int], int] = field(default_factory=dict)
    progress_keys: dict[tuple[str, int], set[tuple[int, bytes]]] = field(default_factory=dict)
    upstream: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    synced: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    resumed: dict[str, dict[int, Record | None]] = field(default_factory=dict)
    ours_decoded: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """The internal topics decoded by odradek/mirror/formats.py, in Mm2View's shape."""


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "east")


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from dev_broker(tmp_path_factory, "west")


@pytest.fixture(scope="module")
def config(east: BrokerProcess, west: BrokerProcess) -> dict[str, str]:
    """One MM2 file for both mirrors: short intervals, replication factor 1, every record
    synced (offset.lag.max 0), MM2's worker flushing its offsets each second."""
    return {
        "clusters": "east, west", "east.bootstrap.servers": east.bootstrap,
        "west.bootstrap.servers": west.bootstrap, "east->west.enabled": "true",
        "topics": "mm2t-.*", "groups": "mm2g-.*", **FAST,
        "config.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "sync.group.offsets.enabled": "true", "emit.heartbeats.interval.seconds": "1",
        "offset.lag.max": "0", "sync.topic.acls.enabled": "false",
        "west.offset.flush.interval.ms": "1000", "metrics.port": "0",
        # MM2 and each herder scan the classpath for Connect plugins (15-25 s each here)
        # unless told that they all have ServiceLoader manifests, as MM2 logs
        "plugin.discovery": "service_load", "east.plugin.discovery": "service_load",
        "west.plugin.discovery": "service_load"}


@pytest.fixture(scope="module")
def phases(east: BrokerProcess, west: BrokerProcess, config: dict[str, str],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Phase]]:
    root = tmp_path_factory.mktemp("mirrors")
    # MirrorProcess writes the file both mirrors read
    ours = MirrorProcess(root / "odradek", config)
    done: list[Phase] = []
    create_topic(east.bootstrap, TOPIC_A, PARTITIONS)
    mm2 = MirrorMaker2(ours.config_path, root / "mm2-1.log").start()
    try:
        done.append(_phase(1, "mm2", east, west, [TOPIC_A], {GROUP_A: PER_PHASE}))
    finally:
        _stop(mm2)
    create_topic(east.bootstrap, TOPIC_B, PARTITIONS)
    ours.start()
    try:
        done.append(_phase(2, "odradek", east, west, [TOPIC_A, TOPIC_B],
                           {GROUP_A: 2 * PER_PHASE - 3, GROUP_B: PER_PHASE - 3}))
    finally:
        assert ours.stop() == 0
    mm2 = MirrorMaker2(ours.config_path, root / "mm2-3.log").start()
    try:
        done.append(_phase(3, "mm2", east, west, [TOPIC_A, TOPIC_B],
                           {GROUP_A: 3 * PER_PHASE, GROUP_B: 2 * PER_PHASE}))
    finally:
        _stop(mm2)
    yield done


def _stop(mm2: MirrorMaker2) -> None:
    """SIGTERM: MM2's shutdown hook stops the herders, whose tasks commit their offsets;
    the JVM then exits with 128 + SIGTERM."""
    assert mm2.stop() == 143
    assert "Kafka MirrorMaker stopped." in mm2.logs()


def _phase(number: int, mirror: str, east: BrokerProcess, west: BrokerProcess,
           topics: list[str], commits: dict[str, int]) -> Phase:
    """Produce PER_PHASE records to each partition of `topics`, wait for them on west,
    commit each group (GROUP_A on A, GROUP_B on B) at `commits` on every partition, wait
    for the offsets synced to west, then snapshot."""
    producer = Producer({"bootstrap.servers": east.bootstrap, "linger.ms": 5})
    for topic in topics:
        for i in range(PER_PHASE):
            for partition in range(PARTITIONS):
                producer.produce(topic, f"{number}-{partition}-{i}".encode(),
                                 f"k{i}".encode(), partition=partition,
                                 headers=[("phase", str(number).encode())])
    assert producer.flush(60) == 0
    for topic in topics:
        ends = {p: len(v) for p, v in _records(east.bootstrap, topic).items()}
        wait_until(lambda t=topic, e=ends: _mirrored(west.bootstrap, t, e), TIMEOUT,
                   f"{topic} mirrored by {mirror} in phase {number}")
    for group, offset in commits.items():
        topic = TOPIC_A if group == GROUP_A else TOPIC_B
        _commit(east.bootstrap, group, {(topic, p): offset for p in range(PARTITIONS)})
        wait_until(lambda g=group, t=topic, o=offset: _synced(west.bootstrap, g, t, o),
                   TIMEOUT, lambda g=group: f"{g} synced to west by {mirror}: "
                   f"{committed_on(west.bootstrap, g)}")
    view = mm2_view(west.bootstrap, east.bootstrap, "east", "west", sorted(commits))
    phase = Phase(mirror, view)
    for topic in (TOPIC_A, TOPIC_B):
        if topic in topics:
            phase.source[topic] = _records(east.bootstrap, topic)
            phase.remote[topic] = _remote(west.bootstrap, f"east.{topic}")
    phase.progress, phase.progress_keys = _progress(west.bootstrap)
    phase.ours_decoded = _decode_with_ours(east.bootstrap, west.bootstrap)
    for group in commits:
        phase.upstream[group] = committed_on(east.bootstrap, group)
        phase.synced[group] = committed_on(west.bootstrap, group)
        topic = REMOTE_A if group == GROUP_A else REMOTE_B
        phase.resumed[group] = _resume(west.bootstrap, group, topic)
    return phase


def _record(message: Message) -> Record:
    return (message.key(), message.value(), tuple(message.headers() or ()),
            message.timestamp()[1])


def _records(bootstrap: str, topic: str) -> dict[int, list[Record]]:
    return {p: [r for _, r in rows] for p, rows in _remote(bootstrap, topic).items()}


def _remote(bootstrap: str, topic: str) -> dict[int, list[tuple[int, Record]]]:
    rows: dict[int, list[tuple[int, Record]]] = {p: [] for p in range(PARTITIONS)}
    for message in read_all(bootstrap, topic, PARTITIONS):
        rows[message.partition()].append((message.offset(), _record(message)))
    return rows


def _mirrored(bootstrap: str, topic: str, ends: dict[int, int]) -> bool:
    """Every source record is on west (MM2 may have written some twice)."""
    remote = f"east.{topic}"
    if remote not in _topics(bootstrap):
        return False
    rows = _records(bootstrap, remote)
    return all(len(rows[p]) >= ends[p] for p in ends)


def _topics(bootstrap: str) -> set[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm2-test-topics"})
    try:
        return set(consumer.list_topics(timeout=30).topics)
    finally:
        consumer.close()


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        committed = consumer.commit(offsets=[CTopicPartition(t, p, o)
                                             for (t, p), o in offsets.items()],
                                    asynchronous=False)
        assert committed is not None and all(tp.error is None for tp in committed)
    finally:
        consumer.close()
    assert committed_on(bootstrap, group) == offsets


def _synced(bootstrap: str, group: str, topic: str, upstream: int) -> bool:
    """West has an offset for every partition of the group's remote topic, translated
    from a checkpoint of `upstream` (read with our codec only to know when to look)."""
    synced = committed_on(bootstrap, group)
    if len(synced) < PARTITIONS:
        return False
    latest = _latest_checkpoints(bootstrap, group)
    return all(latest.get((f"east.{topic}", p), (None, None))[0] == upstream
               and synced.get((f"east.{topic}", p)) == latest[(f"east.{topic}", p)][1]
               for p in range(PARTITIONS))


def _latest_checkpoints(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    latest = {}
    for message in read_all(bootstrap, "east.checkpoints.internal", 1):
        checkpoint = mm2_codec.checkpoint(message.key(), message.value())
        if checkpoint.group == group:
            latest[(checkpoint.topic, checkpoint.partition)] = (checkpoint.upstream,
                                                                checkpoint.downstream)
    return latest


def _decode_with_ours(east: str, west: str) -> dict[str, list[dict[str, Any]]]:
    """The heartbeats, checkpoints and offset syncs as the mirror's own codec reads them."""
    beats = [formats.Heartbeat.decode(m.key(), m.value())
             for m in read_all(west, "heartbeats", 1)]
    checkpoints = [formats.Checkpoint.decode(m.key(), m.value())
                   for m in read_all(west, "east.checkpoints.internal", 1)]
    syncs = [formats.OffsetSync.decode(m.key(), m.value())
             for m in read_all(east, "mm2-offset-syncs.west.internal", 1)]
    return {
        "heartbeats": [{"source": b.source, "target": b.target, "timestamp": b.timestamp_ms}
                       for b in beats],
        "checkpoints": [{"group": c.group, "topic": c.topic, "partition": c.partition,
                         "upstream": c.upstream, "downstream": c.downstream,
                         "metadata": c.metadata} for c in checkpoints],
        "offset_syncs": [{"topic": s.topic, "partition": s.partition, "upstream": s.upstream,
                          "downstream": s.downstream} for s in syncs]}


def _progress(bootstrap: str) -> tuple[dict[tuple[str, int], int],
                                       dict[tuple[str, int], set[tuple[int, bytes]]]]:
    """Connect's offsets topic for flows from east, read as KafkaOffsetBackingStore reads
    it (the last value of each key wins): the last upstream offset copied per source
    partition, and every (partition, key bytes) that held each source partition's offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm2-test-progress",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    metadata = consumer.list_topics(PROGRESS_TOPIC, timeout=30).topics[PROGRESS_TOPIC]
    partitions = sorted(metadata.partitions)
    consumer.assign([CTopicPartition(PROGRESS_TOPIC, p, 0) for p in partitions])
    ends = {p: consumer.get_watermark_offsets(CTopicPartition(PROGRESS_TOPIC, p), 30)[1]
            for p in partitions}
    last: dict[bytes, int | None] = {}
    keys: dict[tuple[str, int], set[tuple[int, bytes]]] = {}
    at_end = {p for p, end in ends.items() if end == 0}

    def poll() -> None:
        for message in consumer.consume(500, 0.2):
            if message.error() is not None:
                if message.offset() >= ends[message.partition()]:
                    at_end.add(message.partition())
                continue
            connector, partition = json.loads(message.key())
            if connector != "MirrorSourceConnector":
                continue  # the heartbeat and checkpoint connectors' own offsets
            source = (partition["topic"], partition["partition"])
            keys.setdefault(source, set()).add((message.partition(), message.key()))
            value = message.value()
            last[message.key()] = None if value is None else json.loads(value)["offset"]

    try:
        wait_until(lambda: len(at_end) == len(partitions), 60, "the offsets topic read",
                   between=poll)
    finally:
        consumer.close()
    progress = {}
    for key, offset in last.items():
        if offset is not None:
            _, partition = json.loads(key)
            progress[(partition["topic"], partition["partition"])] = offset
    return progress, keys


def _resume(bootstrap: str, group: str, topic: str) -> dict[int, Record | None]:
    """The first record the group reads on west from its committed offsets, per partition
    (None: it is at the end); it commits nothing and joins no group, so the group stays
    idle for the next offset sync."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "error",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([CTopicPartition(topic, p) for p in range(PARTITIONS)])
    first: dict[int, Record | None] = {}

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is None or message.partition() in first:
            return
        if message.error() is None:
            first[message.partition()] = _record(message)
        elif message.error().code() == -191:  # _PARTITION_EOF
            first[message.partition()] = None
        else:
            raise AssertionError(message.error())

    try:
        wait_until(lambda: len(first) == PARTITIONS, 60, f"{group} resuming on {topic}",
                   between=poll)
    finally:
        consumer.close()
    return first


# -- (a) real MM2 between two Odradek clusters ----------------------------------------------

def test_mm2_mirrors_every_record_in_order(phases: list[Phase]) -> None:
    first = phases[0]
    for partition, records in first.source[TOPIC_A].items():
        assert len(records) == PER_PHASE
        assert [r for _, r in first.remote[TOPIC_A][partition]] == records


def test_mm2_names_remote_and_internal_topics(phases: list[Phase]) -> None:
    view = phases[0].view
    assert view.remote_topics == ["east.heartbeats", REMOTE_A]
    assert view.remote_topics_of_source == ["east.heartbeats", REMOTE_A]
    assert view.heartbeat_topics == ["east.heartbeats", "heartbeats"]
    assert view.checkpoint_topics == ["east.checkpoints.internal"]
    # from the remote heartbeats topic: east's heartbeats (of the west->east pair) on west
    assert view.upstream_clusters == ["east"]
    assert view.replication_hops == 1


def test_mm2_heartbeats(phases: list[Phase]) -> None:
    beats = phases[0].view.heartbeats
    assert len(beats) >= 2
    assert {(b["source"], b["target"]) for b in beats} == {("east", "west")}
    stamps = [b["timestamp"] for b in beats]
    assert stamps == sorted(stamps) and stamps[0] > 0


def test_mm2_offset_syncs_and_checkpoints(phases: list[Phase]) -> None:
    view = phases[0].view
    for partition in range(PARTITIONS):
        syncs = [(s["upstream"], s["downstream"]) for s in view.offset_syncs
                 if (s["topic"], s["partition"]) == (TOPIC_A, partition)]
        assert syncs and all(u == d for u, d in syncs)  # one to one: nothing else wrote
    assert view.latest_checkpoints(GROUP_A) == {
        (REMOTE_A, p): (PER_PHASE, PER_PHASE) for p in range(PARTITIONS)}


def test_mm2_syncs_group_offsets_to_the_target(phases: list[Phase]) -> None:
    first = phases[0]
    assert first.upstream[GROUP_A] == {(TOPIC_A, p): PER_PHASE for p in range(PARTITIONS)}
    assert first.synced[GROUP_A] == {(REMOTE_A, p): PER_PHASE for p in range(PARTITIONS)}
    assert first.view.translated[GROUP_A] == first.synced[GROUP_A]
    assert first.resumed[GROUP_A] == {p: None for p in range(PARTITIONS)}  # all consumed


@pytest.mark.parametrize("index", [0, 1, 2], ids=["mm2", "odradek", "mm2-again"])
def test_the_mirrors_codec_reads_the_internal_topics_as_mm2_does(
        phases: list[Phase], index: int) -> None:
    """odradek/mirror/formats.py and MM2's deserializeRecord agree on every record, those
    MM2 wrote and ours (the topics hold both after the first phase)."""
    phase = phases[index]
    for topic in ("heartbeats", "checkpoints", "offset_syncs"):
        mm2_decoded = getattr(phase.view, topic)
        assert mm2_decoded, topic
        # the snapshots were taken one after the other: a heartbeat may have come between
        assert phase.ours_decoded[topic][:len(mm2_decoded)] == mm2_decoded, topic


# -- (b) MM2's client reads odradek mirror's checkpoints --------------------------------------

@pytest.mark.parametrize(("group", "topic"), [(GROUP_A, TOPIC_A), (GROUP_B, TOPIC_B)])
def test_mm2_client_translates_odradek_checkpoints_exactly(
        phases: list[Phase], group: str, topic: str) -> None:
    ours = phases[1]
    remote = f"east.{topic}"
    upstream = ours.upstream[group]
    exact = {}
    for partition in range(PARTITIONS):
        # the downstream offset of the record the group would read next on east
        following = ours.source[topic][partition][upstream[(topic, partition)]]
        exact[(remote, partition)] = next(
            offset for offset, r in ours.remote[topic][partition] if r == following)
    assert ours.synced[group] == exact
    assert ours.view.translated[group] == exact
    assert ours.view.latest_checkpoints(group) == {
        (remote, p): (upstream[(topic, p)], exact[(remote, p)]) for p in range(PARTITIONS)}


def test_odradek_heartbeats_and_syncs_decode_with_mm2s_classes(phases: list[Phase]) -> None:
    before, ours = phases[0].view, phases[1].view
    assert len(ours.heartbeats) > len(before.heartbeats)
    assert {(b["source"], b["target"]) for b in ours.heartbeats} == {("east", "west")}
    assert ours.heartbeats[-1]["timestamp"] > before.heartbeats[-1]["timestamp"]
    ours_b = {(s["partition"], s["upstream"]) for s in ours.offset_syncs
              if s["topic"] == TOPIC_B}
    assert {(p, 0) for p in range(PARTITIONS)} <= ours_b
    assert ours.remote_topics == ["east.heartbeats", REMOTE_A, REMOTE_B]


# -- (c) failover between MM2 and odradek mirror ----------------------------------------------

def _continued(phase: Phase, topic: str, resumed_at: dict[int, int],
               copied_before: dict[int, int]) -> None:
    """The remote partition holds the source's records in order, those at upstream
    offsets [resumed_at, copied_before) twice: what the previous mirror copied after
    its last progress commit (at-least-once), copied again by the next one."""
    for partition, records in phase.source[topic].items():
        again = resumed_at[partition]
        before = copied_before[partition]
        assert again <= before
        expected = records[:before] + records[again:]
        assert [r for _, r in phase.remote[topic][partition]] == expected, (
            partition, again, before)


def test_odradek_mirror_continues_where_mm2_committed(phases: list[Phase]) -> None:
    mm2, ours = phases[0], phases[1]
    copied = {p: len(rows) for p, rows in mm2.remote[TOPIC_A].items()}
    resumed_at = {p: mm2.progress[(TOPIC_A, p)] + 1 for p in range(PARTITIONS)}
    _continued(ours, TOPIC_A, resumed_at, copied)
    # MM2 stopped gracefully and flushed its offsets: nothing was copied twice
    assert resumed_at == copied


def test_mm2_continues_where_odradek_mirror_committed(phases: list[Phase]) -> None:
    ours, mm2 = phases[1], phases[2]
    for topic in (TOPIC_A, TOPIC_B):
        copied = {p: len(rows) for p, rows in ours.source[topic].items()}
        resumed_at = {p: ours.progress[(topic, p)] + 1 for p in range(PARTITIONS)}
        # exactly-once: the progress committed with the records, no record twice
        assert resumed_at == copied
        _continued(mm2, topic, resumed_at, copied)


def test_both_mirrors_keep_progress_under_the_same_key(phases: list[Phase]) -> None:
    """MM2's and our progress records for a source partition have the same key bytes in
    the same partition of Connect's offsets topic, so each reads the other's."""
    keys = phases[2].progress_keys
    for topic in (TOPIC_A, TOPIC_B):
        for partition in range(PARTITIONS):
            assert len(keys[(topic, partition)]) == 1, keys[(topic, partition)]


@pytest.mark.parametrize("index", [1, 2], ids=["mm2-then-odradek", "odradek-then-mm2"])
def test_group_resumes_on_the_target_right_after_its_translated_offset(
        phases: list[Phase], index: int) -> None:
    phase = phases[index]
    for group, topic in ((GROUP_A, TOPIC_A), (GROUP_B, TOPIC_B)):
        remote = f"east.{topic}"
        for partition in range(PARTITIONS):
            upstream = phase.upstream[group][(topic, partition)]
            records = phase.source[topic][partition]
            expected = records[upstream] if upstream < len(records) else None
            assert phase.resumed[group][partition] == expected
            synced = phase.synced[group][(remote, partition)]
            assert phase.view.translated[group][(remote, partition)] == synced


def test_checkpoints_continue_across_mirrors(phases: list[Phase]) -> None:
    """Each mirror's checkpoints for GROUP_A follow the previous one's, never back."""
    seen = [phase.view.latest_checkpoints(GROUP_A) for phase in phases]
    upstream = [{k: u for k, (u, _) in latest.items()} for latest in seen]
    downstream = [{k: d for k, (_, d) in latest.items()} for latest in seen]
    for partition in range(PARTITIONS):
        key = (REMOTE_A, partition)
        assert [u[key] for u in upstream] == [PER_PHASE, 2 * PER_PHASE - 3, 3 * PER_PHASE]
        assert downstream[0][key] < downstream[1][key] < downstream[2][key]
    assert downstream[2] == phases[2].synced[GROUP_A]
