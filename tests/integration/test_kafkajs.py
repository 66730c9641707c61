"""kafkajs (the Node.js client, pinned in tests/integration/kafkajs/package.json) against a real
broker: its producer (acks -1, 1 and 0, GZIP), its admin client, and its consumer, which reads
only through a consumer group. What it produces is read back with confluent-kafka and compared
exactly (partition, offset, key, value, timestamp, headers).

Each test runs `node client.js` once with a list of steps (see the script's header) and checks
the JSON it prints. kafkajs 2.2.4 quirks the steps work around, both on the client side:
a header value of null makes its record encoder throw a TypeError, and deleteTopicRecords
fails with KafkaJSTopicMetadataNotLoaded unless topic metadata was loaded first in the process.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient
from kafka.partitioner.default import murmur2

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import (
    TIMEOUT,
    Out,
    Rec,
    confluent_consumer,
    now_ms,
    produce_confluent,
    read_confluent,
    stored,
    stored_codecs,
    unique,
)
from tests.integration.kafkajs_client import CLIENT_DIR, INSTALLED, NODE, NPM, run_kafkajs

NODE_ID = 1
GZIP = 1
"""Kafka's codec id for gzip, the low three bits of a batch's attributes."""
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
TOPIC_RESOURCE = 2
UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS = 3, 37

pytestmark = pytest.mark.skipif(
    NODE is None or (NPM is None and not INSTALLED.exists()),
    reason="node/npm not found: the kafkajs tests need Node.js >= 14 with npm, "
           "then scripts/bootstrap.sh --dev")


# --- running client.js ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def kafkajs_installed() -> None:
    """With node at hand, a missing or stale kafkajs is a setup error, not a reason to skip."""
    pinned = json.loads((CLIENT_DIR / "package.json").read_text())["dependencies"]["kafkajs"]
    installed = json.loads(INSTALLED.read_text())["version"] if INSTALLED.exists() else None
    if installed != pinned:
        pytest.fail(f"kafkajs {installed} installed, {pinned} pinned: "
                    "run scripts/bootstrap.sh --dev")


@pytest.fixture(autouse=True)
def quiet_broker(broker: BrokerProcess) -> Iterator[None]:
    """A request the broker could not serve shows in its log even when kafkajs retries past it."""
    seen = len(broker.logs())
    yield
    complaints = [line for line in broker.logs()[seen:].splitlines()
                  if re.search(r" (WARNING|ERROR|CRITICAL) |Traceback", line)]
    assert not complaints, "\n".join(complaints)


def run_steps(broker: BrokerProcess, *steps: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    return run_kafkajs(broker.bootstrap, *steps)


def ok(broker: BrokerProcess, *steps: dict[str, Any]) -> list[Any]:
    """Every step's value; fails on any step's error and on anything kafkajs logged (its
    log level is WARN: an error it retried past, a response it could not match)."""
    results, log = run_steps(broker, *steps)
    errors = [(step, result["error"]) for step, result in zip(steps, results, strict=True)
              if "error" in result]
    assert not errors, errors
    assert not log, log
    return [result["ok"] for result in results]


def admin(op: str, *args: Any) -> dict[str, Any]:
    return {"op": op, "args": list(args)}


def create(topic: str, partitions: int = 1, config: dict[str, str] | None = None
           ) -> dict[str, Any]:
    entries = [{"name": name, "value": value} for name, value in (config or {}).items()]
    return admin("createTopics", {"topics": [
        {"topic": topic, "numPartitions": partitions, "configEntries": entries}]})


def b64(data: bytes | None) -> dict[str, str] | None:
    return None if data is None else {"base64": base64.b64encode(data).decode()}


def message(out: Out) -> dict[str, Any]:
    """An Out as a kafkajs message; a header repeated must be adjacent (kafkajs takes an object
    of arrays)."""
    headers: dict[str, list[dict[str, str] | None]] = {}
    for name, value in out.headers:
        headers.setdefault(name, []).append(b64(value))
    return {"key": b64(out.key), "value": b64(out.value), "headers": headers,
            "partition": out.partition, "timestamp": out.timestamp}


def produce(topic: str, outs: Sequence[Out], acks: int = -1,
            compression: str | None = None) -> dict[str, Any]:
    return {"op": "produce", "args": {"topic": topic, "messages": [message(o) for o in outs],
                                      "acks": acks, "compression": compression}}


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's (and kafkajs 2's default) partition for a key."""
    return int((murmur2(key) & 0x7FFFFFFF) % partitions)


def placed(outs: Sequence[Out], partitions: int) -> list[Out]:
    """Outs with their partition filled in where the keyed partitioner chooses it."""
    return [o if o.partition is not None
            else o._replace(partition=java_partition(o.key or b"", partitions)) for o in outs]


def acknowledged(outs: Sequence[Out], metadata: Sequence[dict[str, Any]]) -> list[Rec]:
    """The stored records that producer.send's RecordMetadata (a base offset per partition)
    stands for: each partition's records take consecutive offsets in send order."""
    next_offset = {m["partition"]: int(m["baseOffset"]) for m in metadata}
    records = []
    for out in outs:
        assert out.partition is not None
        records.append(stored(out, out.partition, next_offset[out.partition]))
        next_offset[out.partition] += 1
    return records


def watermarks(broker: BrokerProcess, topic: str, partition: int) -> tuple[int, int]:
    consumer = confluent_consumer(broker.bootstrap)
    try:
        low, high = consumer.get_watermark_offsets(CTopicPartition(topic, partition), TIMEOUT)
        return low, high
    finally:
        consumer.close()


def offsets(topic_offsets: Sequence[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """fetchTopicOffsets' answer as {partition: (low, high)}, checking `offset` is `high`."""
    assert all(p["offset"] == p["high"] for p in topic_offsets), topic_offsets
    return {p["partition"]: (int(p["low"]), int(p["high"])) for p in topic_offsets}


# --- producer ---------------------------------------------------------------------------------


def outs_for_three_partitions(base_ms: int) -> list[Out]:
    """Keys, values and headers of every shape kafkajs can send (null key, null value, empty
    bytes, binary, a repeated header), on explicit partitions and on keyed ones."""
    return [
        Out(b"alpha", b"one", base_ms, (("trace", b"t-1"),), partition=0),
        Out(b"beta", bytes(range(256)), base_ms + 1,
            (("h", b"a"), ("h", b"b"), ("empty", b"")), partition=2),
        Out(None, b"no key", base_ms + 2, (), partition=1),
        Out(b"gamma", None, base_ms + 3, (("tomb", b"stone"),), partition=0),
        Out(b"", b"", base_ms + 4, (("été", "ça".encode()),), partition=1),
        *(Out(f"user-{n}".encode(), f"event {n}".encode(), base_ms + 10 + n,
              (("n", str(n).encode()),)) for n in range(8)),
    ]


@pytest.mark.parametrize(("acks", "compression"), [(-1, None), (1, None), (-1, "GZIP")],
                         ids=["acks-all", "acks-1", "gzip"])
def test_produce_reads_back_exactly(broker: BrokerProcess, acks: int,
                                    compression: str | None) -> None:
    topic = unique("kafkajs-produce")
    outs = placed(outs_for_three_partitions(now_ms()), 3)
    _, first, second = ok(broker, create(topic, 3), produce(topic, outs, acks, compression),
                          produce(topic, outs, acks, compression))

    for metadata in (first, second):
        assert sorted(m["partition"] for m in metadata) == [0, 1, 2]
        assert all(m["topicName"] == topic and m["errorCode"] == 0 for m in metadata)
        assert all(m["logAppendTime"] == "-1" and m["logStartOffset"] == "0" for m in metadata)
    assert {m["partition"]: int(m["baseOffset"]) for m in first} == {0: 0, 1: 0, 2: 0}
    per_partition = {p: sum(o.partition == p for o in outs) for p in range(3)}
    assert {m["partition"]: int(m["baseOffset"]) for m in second} == per_partition

    expected = sorted(acknowledged(outs, first) + acknowledged(outs, second),
                      key=lambda r: (r.partition, r.offset))
    assert read_confluent(broker.bootstrap, topic, partitions=range(3)) == expected
    codec = GZIP if compression else 0
    assert all(stored_codecs(broker.data_dir, topic, p) == [codec, codec] for p in range(3))


def test_produce_acks_zero_reads_back_exactly(broker: BrokerProcess) -> None:
    """acks=0: the broker must not answer (kafkajs would log a response without match). A
    marker record per partition, produced after them with acks=-1 on the same connection,
    gets the offset that proves every acks=0 record was stored before it."""
    topic = unique("kafkajs-acks0")
    outs = placed(outs_for_three_partitions(now_ms()), 3)
    markers = [Out(b"marker", b"after acks=0", now_ms(), partition=p) for p in range(3)]
    _, unanswered, answered = ok(broker, create(topic, 3), produce(topic, outs, acks=0),
                                 produce(topic, markers))
    assert unanswered == []
    counts = {p: sum(o.partition == p for o in outs) for p in range(3)}
    assert {m["partition"]: int(m["baseOffset"]) for m in answered} == counts

    expected = acknowledged(outs, [{"partition": p, "baseOffset": "0"} for p in range(3)])
    expected += acknowledged(markers, answered)
    assert read_confluent(broker.bootstrap, topic, partitions=range(3)) == sorted(
        expected, key=lambda r: (r.partition, r.offset))


# --- admin ------------------------------------------------------------------------------------


def test_create_topics_and_fetch_topic_metadata(broker: BrokerProcess) -> None:
    topic, other = unique("kafkajs-create"), unique("kafkajs-create")
    created, metadata, listed = ok(
        broker,
        admin("createTopics", {"topics": [{"topic": topic, "numPartitions": 3},
                                          {"topic": other, "numPartitions": 1}]}),
        admin("fetchTopicMetadata", {"topics": [topic, other]}),
        admin("listTopics"),
    )
    assert created is True
    [again], _ = run_steps(broker, create(topic, 3))
    assert again == {"ok": False}  # kafkajs' answer when every topic got TOPIC_ALREADY_EXISTS
    partition = {"partitionErrorCode": 0, "leader": NODE_ID, "replicas": [NODE_ID],
                 "isr": [NODE_ID], "offlineReplicas": []}
    assert sorted(metadata["topics"], key=lambda t: t["name"] != topic) == [
        {"name": topic, "partitions": [{**partition, "partitionId": p} for p in range(3)]},
        {"name": other, "partitions": [{**partition, "partitionId": 0}]},
    ]
    assert {topic, other} <= set(listed)


def test_describe_configs_shows_configs_set_at_creation(broker: BrokerProcess) -> None:
    topic = unique("kafkajs-configs")
    config = {"retention.ms": "123456", "max.message.bytes": "2000000"}
    names = [*config, "segment.bytes"]
    _, described = ok(broker, create(topic, 1, config), admin("describeConfigs", {
        "resources": [{"type": "TOPIC", "name": topic, "configNames": names}],
        "includeSynonyms": False}))

    [resource] = described["resources"]
    assert (resource["errorCode"], resource["resourceType"], resource["resourceName"]) == (
        0, TOPIC_RESOURCE, topic)
    entries = {e["configName"]: e for e in resource["configEntries"]}
    assert sorted(entries) == sorted(names)
    for name, value in config.items():
        assert entries[name] == {"configName": name, "configValue": value, "readOnly": False,
                                 "isDefault": False, "configSource": DYNAMIC_TOPIC_CONFIG,
                                 "isSensitive": False, "configSynonyms": []}
    segment = entries["segment.bytes"]
    assert (segment["isDefault"], segment["configSource"]) == (True, DEFAULT_CONFIG)


def test_fetch_topic_offsets_after_producing(broker: BrokerProcess) -> None:
    topic = unique("kafkajs-offsets")
    base_ms = now_ms()
    outs = [Out(b"k", b"%d" % n, base_ms + n, partition=n % 2) for n in range(5)]
    _, before, _, after = ok(broker, create(topic, 3), admin("fetchTopicOffsets", topic),
                             produce(topic, outs), admin("fetchTopicOffsets", topic))
    assert offsets(before) == {0: (0, 0), 1: (0, 0), 2: (0, 0)}
    assert offsets(after) == {0: (0, 3), 1: (0, 2), 2: (0, 0)}


def test_fetch_topic_offsets_by_timestamp(broker: BrokerProcess) -> None:
    """The first offset whose timestamp is at least the one asked for; where none is, kafkajs
    answers the high watermark in place of the broker's -1."""
    topic = unique("kafkajs-times")
    base_ms = now_ms() - 60_000
    outs = [Out(b"a", b"0", base_ms, partition=0), Out(b"a", b"1", base_ms + 10, partition=0),
            Out(b"a", b"2", base_ms + 20, partition=0), Out(b"b", b"0", base_ms + 5, partition=1)]
    results = ok(broker, create(topic, 2), produce(topic, outs), *(
        admin("fetchTopicOffsetsByTimestamp", topic, base_ms + delta)
        for delta in (-1, 0, 5, 6, 20, 21)))
    found = [{p["partition"]: int(p["offset"]) for p in answer} for answer in results[2:]]
    assert found == [{0: 0, 1: 0}, {0: 0, 1: 0}, {0: 1, 1: 0}, {0: 1, 1: 1}, {0: 2, 1: 1},
                     {0: 3, 1: 1}]


def test_create_partitions(broker: BrokerProcess) -> None:
    topic = unique("kafkajs-grow")
    grow = admin("createPartitions", {"topicPartitions": [{"topic": topic, "count": 4}]})
    out = Out(b"late", b"to partition 3", now_ms(), (("h", b"v"),), partition=3)
    _, grown, metadata, [sent] = ok(broker, create(topic, 1), grow,
                                    admin("fetchTopicMetadata", {"topics": [topic]}),
                                    produce(topic, [out]))
    assert grown is None
    assert [p["partitionId"] for p in metadata["topics"][0]["partitions"]] == [0, 1, 2, 3]
    assert (sent["partition"], sent["baseOffset"]) == (3, "0")
    assert read_confluent(broker.bootstrap, topic, partitions=[3]) == [stored(out, 3, 0)]

    [shrink], _ = run_steps(broker, admin(
        "createPartitions", {"topicPartitions": [{"topic": topic, "count": 2}]}))
    assert shrink["error"]["type"] == "INVALID_PARTITIONS"
    assert shrink["error"]["code"] == INVALID_PARTITIONS


def test_delete_topic_records_moves_the_low_watermark(broker: BrokerProcess) -> None:
    topic = unique("kafkajs-trim")
    base_ms = now_ms()
    outs = [Out(b"k", b"%d" % n, base_ms + n, partition=n % 2) for n in range(9)]
    results = ok(
        broker, create(topic, 2), produce(topic, outs),
        admin("fetchTopicMetadata", {"topics": [topic]}),
        admin("deleteTopicRecords", {"topic": topic, "partitions": [{"partition": 0,
                                                                      "offset": "3"}]}),
        admin("fetchTopicOffsets", topic),
        admin("deleteTopicRecords", {"topic": topic, "partitions": [{"partition": 1,
                                                                      "offset": "-1"}]}),
        admin("fetchTopicOffsets", topic),
    )
    assert results[3] is None and results[5] is None
    assert offsets(results[4]) == {0: (3, 5), 1: (0, 4)}
    assert offsets(results[6]) == {0: (3, 5), 1: (4, 4)}
    assert watermarks(broker, topic, 0) == (3, 5)
    even = [o for o in outs if o.partition == 0]
    assert read_confluent(broker.bootstrap, topic, partitions=[0]) == [
        stored(out, 0, offset) for offset, out in enumerate(even) if offset >= 3]


def test_delete_topics(broker: BrokerProcess) -> None:
    topic, kept = unique("kafkajs-delete"), unique("kafkajs-keep")
    _, _, _, deleted, listed = ok(
        broker, create(topic, 2), create(kept), produce(topic, [Out(b"k", b"v", now_ms(),
                                                                    partition=1)]),
        admin("deleteTopics", {"topics": [topic]}), admin("listTopics"))
    assert deleted is None
    assert kept in listed and topic not in listed

    [gone], _ = run_steps(broker, admin("fetchTopicMetadata", {"topics": [topic]}))
    assert gone["error"]["type"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert gone["error"]["code"] == UNKNOWN_TOPIC_OR_PARTITION
    assert topic not in AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(
        timeout=TIMEOUT).topics

    recreated, fresh = ok(broker, create(topic, 1), admin("fetchTopicOffsets", topic))
    assert recreated is True
    assert offsets(fresh) == {0: (0, 0)}


def test_describe_cluster(broker: BrokerProcess) -> None:
    [cluster] = ok(broker, admin("describeCluster"))
    confluent_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    confluent = confluent_admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert cluster == {"brokers": [{"nodeId": NODE_ID, "host": "127.0.0.1", "port": broker.port}],
                       "controller": NODE_ID, "clusterId": confluent.cluster_id}
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cluster["clusterId"])


def test_a_kafkajs_consumer_group_reads_and_commits(broker: BrokerProcess) -> None:
    topic = unique("kafkajs-group")
    group = unique("g")
    outs = [Out(None, f"v{i}".encode(), now_ms(), partition=i % 2) for i in range(10)]
    ok(broker, create(topic, 2))
    produce_confluent(broker.bootstrap, topic, outs)
    (received,) = ok(broker, {"op": "consume",
                              "args": {"groupId": group, "topic": topic, "count": 10}})
    assert sorted((r["partition"], r["offset"]) for r in received) == [
        (p, o) for p in (0, 1) for o in range(5)]
    consumer = confluent_consumer(broker.bootstrap, **{"group.id": group})
    try:
        committed = consumer.committed([CTopicPartition(topic, p) for p in (0, 1)], TIMEOUT)
    finally:
        consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == {0: 5, 1: 5}
