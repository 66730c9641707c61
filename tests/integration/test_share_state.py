"""The share coordinator's state APIs against a real `odradek dev`, over a raw socket with a
codec written here from Kafka's JSON schemas (independent of the broker's kio): share-group
state is initialized, written, fenced, read back after the broker is killed with SIGKILL
(through snapshots and updates in `__share_group_state`), summarized and deleted. The
topic is pruned below the oldest of the share-partitions' last snapshots
(`share.coordinator.state.topic.prune.interval.ms`), and the state loads from what is left
after a kill -9."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ConfigResource
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kio.schema.errors import ErrorCode

from tests.integration.broker_metrics import scrape
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic
from tests.integration.cluster import admin
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

GROUP = "queue-group"
TOPIC = "share-orders"
INITIALIZE, READ, WRITE, DELETE, SUMMARY = 83, 84, 85, 86, 87
ACKNOWLEDGED, AVAILABLE, ARCHIVED = 2, 0, 4


class Writer:
    """A flexible-version request body: compact lengths, empty tagged fields."""

    def __init__(self) -> None:
        self.out = bytearray()

    def pack(self, fmt: str, *values: object) -> Writer:
        self.out += struct.pack(">" + fmt, *values)
        return self

    def uvarint(self, value: int) -> Writer:
        while value >= 0x80:
            self.out.append(value & 0x7F | 0x80)
            value >>= 7
        self.out.append(value)
        return self

    def string(self, value: str) -> Writer:
        data = value.encode()
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def tags(self) -> Writer:
        return self.uvarint(0)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> int:
        (value,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return int(value)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def nullable_string(self) -> str | None:
        size = self.uvarint() - 1
        if size < 0:
            return None
        text = self.data[self.pos:self.pos + size].decode()
        self.pos += size
        return text

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


@dataclass
class PartitionAnswer:
    error: int
    fields: dict[str, object]


def call(client: RawClient, api_key: int, version: int, group: str, topic_id: str,
         partition: int, body: Callable[[Writer], object],
         answer: Callable[[Reader], dict[str, object]]) -> PartitionAnswer:
    """One request about one share-partition (header v2), its one partition's answer."""
    correlation_id = client.next_correlation_id()
    w = Writer().pack("hhih", api_key, version, correlation_id, 3)
    w.out += b"raw"
    w.tags().string(group).uvarint(2).pack("16s", uuid.UUID(topic_id).bytes)
    w.uvarint(2).pack("i", partition)
    body(w)
    w.tags().tags().tags()  # partition, topic, request
    client.send_raw(struct.pack(">i", len(w.out)) + w.out)
    r = Reader(client.recv_frame())
    assert r.unpack("i") == correlation_id
    r.tags()
    assert r.uvarint() == 2  # one topic
    assert str(uuid.UUID(bytes=r.data[r.pos:r.pos + 16])) == topic_id
    r.pos += 16
    assert r.uvarint() == 2  # one partition
    assert r.unpack("i") == partition
    error = r.unpack("h")
    r.nullable_string()
    fields = answer(r)
    for _ in range(3):  # partition, topic, response
        r.tags()
    assert r.pos == len(r.data)
    return PartitionAnswer(error, fields)


def no_fields(r: Reader) -> dict[str, object]:
    return {}


def initialize(client: RawClient, topic_id: str, partition: int, state_epoch: int,
               start_offset: int) -> PartitionAnswer:
    return call(client, INITIALIZE, 0, GROUP, topic_id, partition,
                lambda w: w.pack("iq", state_epoch, start_offset), no_fields)


def write(client: RawClient, topic_id: str, partition: int, state_epoch: int, leader_epoch: int,
          start_offset: int, batches: list[tuple[int, int, int, int]]) -> PartitionAnswer:
    def body(w: Writer) -> None:
        w.pack("iiqi", state_epoch, leader_epoch, start_offset, -1).uvarint(len(batches) + 1)
        for batch in batches:
            w.pack("qqbh", *batch).tags()

    return call(client, WRITE, 1, GROUP, topic_id, partition, body, no_fields)


def read(client: RawClient, topic_id: str, partition: int, leader_epoch: int) -> PartitionAnswer:
    def answer(r: Reader) -> dict[str, object]:
        state_epoch, start_offset = r.unpack("i"), r.unpack("q")
        batches = []
        for _ in range(r.uvarint() - 1):
            batches.append((r.unpack("q"), r.unpack("q"), r.unpack("b"), r.unpack("h")))
            r.tags()
        return {"state_epoch": state_epoch, "start_offset": start_offset, "batches": batches}

    return call(client, READ, 0, GROUP, topic_id, partition,
                lambda w: w.pack("i", leader_epoch), answer)


def summary(client: RawClient, topic_id: str, partition: int) -> PartitionAnswer:
    def answer(r: Reader) -> dict[str, object]:
        return {"state_epoch": r.unpack("i"), "leader_epoch": r.unpack("i"),
                "start_offset": r.unpack("q"), "delivery_complete_count": r.unpack("i")}

    return call(client, SUMMARY, 1, GROUP, topic_id, partition, lambda w: w.pack("i", -1), answer)


def delete(client: RawClient, topic_id: str, partition: int) -> PartitionAnswer:
    return call(client, DELETE, 0, GROUP, topic_id, partition, lambda w: None, no_fields)


def topic_id_of(client: RawClient, topic: str) -> str:
    (found,) = client.metadata([topic]).topics
    return str(uuid.UUID(str(found.topic_id)))


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap)  # held: the futures fail once it is destroyed
    entries = client.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in entries.items()}


def find_share_coordinator(client: RawClient, key: str) -> FindCoordinatorResponse:
    request = FindCoordinatorRequest[6](key_type=2, coordinator_keys=[key])
    (coordinator,) = client.request(request, FindCoordinatorResponse, 6).coordinators
    return coordinator


def running_broker(path: Path, overrides: dict[str, str]) -> Iterator[BrokerProcess]:
    """A broker with TOPIC (two partitions) and a snapshot every third record of a
    share-partition."""
    process = BrokerProcess(path / "data", path / "broker.log", {
        "share.coordinator.snapshot.update.records.per.snapshot": "2", **overrides})
    process.start()
    create_topic(process.bootstrap, TOPIC, 2, replication=1)
    yield process
    if process.alive():
        process.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running_broker(tmp_path_factory.mktemp("share-state"),
                              {"share.coordinator.state.topic.num.partitions": "3"})


def served(broker: BrokerProcess, topic_id: str, partition: int) -> PartitionAnswer:
    """A read once the (restarted) coordinator has loaded its state."""
    answers: list[PartitionAnswer] = []

    def loaded() -> bool:
        with RawClient(broker.bootstrap) as client:
            answers.append(read(client, topic_id, partition, -1))
        return answers[-1].error not in (ErrorCode.not_coordinator,
                                         ErrorCode.coordinator_not_available,
                                         ErrorCode.coordinator_load_in_progress)

    wait_until(loaded, 60, lambda: f"the share coordinator loaded: {answers[-1:]}",
               ignoring=OSError)
    return answers[-1]


def test_state_survives_kill_and_is_fenced_summarized_and_deleted(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as client:
        topic_id = topic_id_of(client, TOPIC)
        coordinator = find_share_coordinator(client, f"{GROUP}:{topic_id}:0")
        assert (coordinator.error_code, coordinator.node_id) == (ErrorCode.none, 1)
        assert find_share_coordinator(client, "not-a-key").error_code == ErrorCode.invalid_request
        (internal,) = client.metadata(["__share_group_state"]).topics
        assert internal.is_internal and len(internal.partitions) == 3
        configs = topic_configs(broker.bootstrap, "__share_group_state")
        assert (configs["cleanup.policy"], configs["retention.ms"]) == ("delete", "-1")

        assert write(client, topic_id, 0, 0, 0, 0, []).error == ErrorCode.invalid_request
        assert read(client, topic_id, 0, 0).error == ErrorCode.invalid_request
        assert initialize(client, topic_id, 0, 1, 0).error == ErrorCode.none
        assert initialize(client, topic_id, 1, 1, 40).error == ErrorCode.none
        first = read(client, topic_id, 0, 1)
        assert (first.error, first.fields) == (ErrorCode.none, {
            "state_epoch": 1, "start_offset": 0, "batches": []})
        # Four writes: two updates, then a snapshot, then an update after it.
        for start, batches in [(0, [(0, 4, ACKNOWLEDGED, 1), (5, 9, AVAILABLE, 1)]),
                               (0, [(5, 6, ARCHIVED, 5)]),
                               (3, [(10, 12, AVAILABLE, 2)]),
                               (5, [(7, 7, ACKNOWLEDGED, 2)])]:
            assert write(client, topic_id, 0, 1, 1, start, batches).error == ErrorCode.none
        assert write(client, topic_id, 0, 1, 0, 9, []).error == ErrorCode.fenced_leader_epoch
        assert write(client, topic_id, 0, 0, 1, 9, []).error == ErrorCode.fenced_state_epoch
        unknown = str(uuid.uuid4())
        assert (initialize(client, unknown, 0, 1, 0).error
                == ErrorCode.unknown_topic_or_partition)

    broker.kill()
    broker.start()
    expected = {"state_epoch": 1, "start_offset": 5, "batches": [
        (5, 6, ARCHIVED, 5), (7, 7, ACKNOWLEDGED, 2), (8, 9, AVAILABLE, 1),
        (10, 12, AVAILABLE, 2)]}
    after_kill = served(broker, topic_id, 0)
    assert (after_kill.error, after_kill.fields) == (ErrorCode.none, expected)
    with RawClient(broker.bootstrap) as client:
        assert read(client, topic_id, 0, 2).error == ErrorCode.none  # a new leader epoch
        assert read(client, topic_id, 0, 1).error == ErrorCode.fenced_leader_epoch
        state = summary(client, topic_id, 0)
        assert (state.error, state.fields) == (ErrorCode.none, {
            "state_epoch": 1, "leader_epoch": 2, "start_offset": 5,
            "delivery_complete_count": -1})
        assert delete(client, topic_id, 1).error == ErrorCode.none
        assert summary(client, topic_id, 1).fields["start_offset"] == -1

    broker.kill()
    broker.start()
    assert served(broker, topic_id, 1).error == ErrorCode.invalid_request  # deleted for good
    with RawClient(broker.bootstrap) as client:
        assert read(client, topic_id, 0, 2).fields == expected
        assert write(client, topic_id, 0, 1, 1, 9, []).error == ErrorCode.fenced_leader_epoch


STATE_TOPIC = "__share_group_state"


@pytest.fixture(scope="module")
def pruning_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One `__share_group_state` partition in segments of a few records, pruned every half
    second, its share-partitions snapshotted once their last snapshot is a second old."""
    yield from running_broker(tmp_path_factory.mktemp("share-state-pruning"), {
        "share.coordinator.state.topic.num.partitions": "1",
        "share.coordinator.state.topic.segment.bytes": "512",
        "share.coordinator.state.topic.prune.interval.ms": "500",
        "share.coordinator.cold.partition.snapshot.interval.ms": "1000"})


def watermarks(broker: BrokerProcess) -> tuple[int, int]:
    """The log start and end offsets of `__share_group_state`-0."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(STATE_TOPIC, 0), timeout=30)
    finally:
        consumer.close()
    return int(low), int(high)


def pruned_to_last_snapshots(broker: BrokerProcess) -> bool:
    """The two share-partitions' last snapshots are the last two records, the log starts at
    the first of them, and Kafka's last-pruned-offset metric says so."""
    low, high = watermarks(broker)
    gauge = ("kafka_server_share_coordinator_metrics_last_pruned_offset",
             frozenset({"topic": STATE_TOPIC, "partition": "0"}.items()))
    return high >= 16 and low == high - 2 and scrape(broker).get(gauge) == low


def test_the_state_topic_is_pruned_below_the_oldest_last_snapshot(
        pruning_broker: BrokerProcess) -> None:
    broker = pruning_broker
    with RawClient(broker.bootstrap) as client:
        topic_id = topic_id_of(client, TOPIC)
        assert initialize(client, topic_id, 0, 1, 0).error == ErrorCode.none  # 0: snapshot
        assert initialize(client, topic_id, 1, 1, 10).error == ErrorCode.none  # 1: snapshot
        # Six writes each, alternating: partition 0's snapshots land at offsets 6 and 12,
        # partition 1's at 7 and 13; then, written to no more, each is snapshotted again
        # (cold, at 14 and 15 unless a second passed during the writes). Everything below the
        # first of the last two snapshots is overridden.
        for i in range(6):
            assert write(client, topic_id, 0, 1, 0, i, [(i, i, ACKNOWLEDGED, 1)]).error == 0
            assert write(client, topic_id, 1, 1, 0, 10 + i,
                         [(10 + i, 11 + i, AVAILABLE, 1)]).error == 0
    wait_until(lambda: pruned_to_last_snapshots(broker), 60,
               lambda: f"{STATE_TOPIC}-0 pruned (log from/to {watermarks(broker)})")
    before_kill = watermarks(broker)
    expected = {0: {"state_epoch": 1, "start_offset": 5, "batches": [(5, 5, ACKNOWLEDGED, 1)]},
                1: {"state_epoch": 1, "start_offset": 15, "batches": [(15, 16, AVAILABLE, 1)]}}

    broker.kill()
    broker.start()
    for partition, state in expected.items():
        answer = served(broker, topic_id, partition)
        assert (answer.error, answer.fields) == (ErrorCode.none, state)
    # The segments wholly below the log start are gone: the state was loaded from what was
    # left.
    assert 0 < watermarks(broker)[0] <= before_kill[0]
    # Loaded from there, the shard finds the same redundant offset again, and makes no more
    # cold snapshots (each share-partition had one).
    wait_until(lambda: pruned_to_last_snapshots(broker), 60,
               lambda: f"{STATE_TOPIC}-0 pruned again (log from/to {watermarks(broker)})")
    assert watermarks(broker) == before_kill
