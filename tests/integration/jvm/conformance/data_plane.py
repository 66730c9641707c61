"""Scenarios of the data plane: ApiVersions, Metadata, Produce (invalid records, idempotence,
fenced epochs), Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords."""

from __future__ import annotations

from typing import Any

from tests.integration.jvm.conformance.scenario import (
    API_VERSIONS,
    DELETE_RECORDS,
    FETCH,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    Scenario,
    create_topic,
    find_coordinator,
    no_error,
    topic_id,
)
from tests.integration.jvm.conformance.steps import Batch, Name, Ref, Step

THREE = Batch(((b"a", b"1"), (None, b"2"), (b"c", None)))


def produce(topic: str, batch: Any, partition: int = 0, acks: int = 1,
            version: int | None = None, transactional_id: Any = None, name: str = "") -> Step:
    return Step(PRODUCE, {"transactional_id": transactional_id, "acks": acks, "timeout": 10_000,
                          "topic_data": [{"name": Name(topic), "partition_data": [
                              {"index": partition, "records": batch}]}]},
                version=version, name=name)


def fetch(topic: str, offset: int, partition: int = 0, leader_epoch: int = -1,
          known_topic: bool = True, session: tuple[int, int] = (0, -1),
          version: int | None = None) -> Step:
    return Step(FETCH, {
        "replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session[0], "session_epoch": session[1],
        "topics": [{"topic": Name(topic),
                    "topic_id": topic_id(topic) if known_topic else
                    "00000000-0000-0000-0000-00000000abcd",
                    "partitions": [{"partition": partition, "current_leader_epoch": leader_epoch,
                                    "fetch_offset": offset, "last_fetched_epoch": -1,
                                    "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""}, version=version)


def list_offsets(topic: str, timestamp: Any, partition: int = 0, leader_epoch: int = -1,
                 isolation: int = 0, version: int | None = None) -> Step:
    return Step(LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": isolation, "timeout": 10_000,
        "topics": [{"name": Name(topic), "partitions": [{
            "partition_index": partition, "current_leader_epoch": leader_epoch,
            "timestamp": timestamp, "max_num_offsets": 1}]}]}, version=version)


def leader_epoch(topic: str, epoch: int, current: int = -1, partition: int = 0) -> Step:
    return Step(OFFSET_FOR_LEADER_EPOCH, {"replica_id": -1, "topics": [{
        "topic": Name(topic), "partitions": [{"partition": partition,
                                              "current_leader_epoch": current,
                                              "leader_epoch": epoch}]}]})


def metadata(*topics: str, auto_create: bool = False) -> Step:
    return Step(METADATA, {"topics": [{"name": Name(t)} for t in topics],
                           "allow_auto_topic_creation": auto_create,
                           "include_cluster_authorized_operations": True,
                           "include_topic_authorized_operations": True})


def init_producer_id(transactional_id: str | None = None, name: str = "pid") -> Step:
    return Step(INIT_PRODUCER_ID, {
        "transactional_id": None if transactional_id is None else Name(transactional_id),
        "transaction_timeout": 60_000, "producer_id": -1, "producer_epoch": -1},
        version=5, name=name, until=no_error)


PID, EPOCH = Ref("pid", "producer_id"), Ref("pid", "producer_epoch")

SCENARIOS = [
    Scenario("api_versions", API_VERSIONS, (
        Step(API_VERSIONS, {"client_software_name": "conformance",
                            "client_software_version": "1.0"}),)),
    Scenario("metadata", METADATA, (
        *create_topic("t", partitions=2),
        metadata("t", "unknown"),
        metadata("bad name!"),
    )),
    Scenario("metadata_auto_create", METADATA, (metadata("auto", auto_create=True),
                                                 metadata("auto"))),
    Scenario("produce", PRODUCE, (
        *create_topic("t"),
        produce("t", THREE),
        produce("t", Batch()),
        produce("t", Batch(), partition=3),
        produce("missing", Batch()),
        produce("t", Batch(), acks=2),
        produce("t", Batch(), acks=-1),
    )),
    Scenario("produce_invalid_records", PRODUCE, (
        *create_topic("t"),
        produce("t", Batch(damage="crc")),
        produce("t", Batch(damage="magic")),
        produce("t", Batch(compression=1)),
        produce("t", Batch(records=((None, b"x" * 2000),), compression=4)),
    )),
    Scenario("produce_compressed_garbage", PRODUCE, (
        *create_topic("t"),
        produce("t", Batch(damage="garbage")),
    )),
    Scenario("produce_idempotent", PRODUCE, (
        *create_topic("t"),
        init_producer_id(),
        produce("t", Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=0)),
        produce("t", Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=0)),
        produce("t", Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=5)),
        produce("t", Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=1)),
        produce("t", Batch(producer_id=123456789, producer_epoch=0, base_sequence=3)),
    )),
    Scenario("produce_fenced_epoch", PRODUCE, (
        *create_topic("t"),
        find_coordinator("txn", 1),
        init_producer_id("txn", name="first"),
        init_producer_id("txn", name="pid"),
        produce("t", Batch(producer_id=PID, producer_epoch=Ref("first", "producer_epoch"),
                           base_sequence=0, transactional=True), transactional_id=Name("txn")),
        produce("t", Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=0,
                           transactional=True), transactional_id=Name("txn")),
    )),
    Scenario("fetch", FETCH, (
        *create_topic("t"),
        produce("t", THREE, version=9),
        produce("t", Batch(compression=2), version=9),
        fetch("t", 0),
        fetch("t", 3),
        fetch("t", 4),
        fetch("t", 100),
        fetch("t", -5),
        fetch("t", 0, partition=7),
        fetch("missing", 0, known_topic=False),
        fetch("t", 0, leader_epoch=5),
        fetch("t", 0, leader_epoch=0),
        fetch("t", 0, session=(123456, 1)),
    )),
    Scenario("list_offsets", LIST_OFFSETS, (
        # records from 1970: without retention.ms=-1, Kafka's retention check (every 5 min)
        # may delete them between the produce and the lists
        *create_topic("t", configs={"retention.ms": "-1"}),
        produce("t", Batch(timestamp=1_000), version=9),
        produce("t", Batch(((b"k", b"v"), (b"k", b"w")), timestamp=2_000), version=9),
        list_offsets("t", -2),
        list_offsets("t", -1),
        list_offsets("t", -3),
        list_offsets("t", -4),
        list_offsets("t", -5),
        list_offsets("t", -6),
        list_offsets("t", 1_500),
        list_offsets("t", 5_000),
        list_offsets("t", -1, isolation=1),
        list_offsets("t", -1, leader_epoch=3),
        list_offsets("t", -1, leader_epoch=0),
        list_offsets("t", -1, partition=4),
        list_offsets("missing", -1),
    )),
    Scenario("offset_for_leader_epoch", OFFSET_FOR_LEADER_EPOCH, (
        *create_topic("t"),
        produce("t", THREE, version=9),
        leader_epoch("t", 0),
        leader_epoch("t", 0, current=0),
        leader_epoch("t", 4),
        leader_epoch("t", 0, current=2),
        leader_epoch("t", -1),
        leader_epoch("t", 0, partition=3),
        leader_epoch("missing", 0),
    )),
    Scenario("delete_records", DELETE_RECORDS, (
        *create_topic("t"),
        produce("t", THREE, version=9),
        *(Step(DELETE_RECORDS, {"timeout": 10_000, "topics": [{"name": Name(topic), "partitions": [
            {"partition_index": partition, "offset": offset}]}]})
          for topic, partition, offset in (("t", 0, 2), ("t", 0, 1), ("t", 0, -1), ("t", 0, 10),
                                           ("t", 2, 0), ("missing", 0, 0))),
        list_offsets("t", -2, version=7),
        fetch("t", 0, version=12),
    )),
]
