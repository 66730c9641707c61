"""What the differential conformance suite (tests/integration/jvm/conformance) found Odradek
answering differently from Apache Kafka 4.3.1, pinned on one `odradek dev` without the JVM:
each expected value is the one Kafka answered."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.integration.broker_process import BrokerProcess
from tests.integration.jvm.conformance.plain import plain
from tests.integration.jvm.conformance.runner import Target, run
from tests.integration.jvm.conformance.scenario import create_topic, topic_id
from tests.integration.jvm.conformance.steps import Batch, Context, Name, Ref, Step
from tests.integration.jvm.conformance.wire import Wire

TOPIC_OPERATIONS = 3576
"""READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS."""


def partition(tree: dict[str, Any], topics: str = "topics", partitions: str = "partitions"
              ) -> dict[str, Any]:
    result: dict[str, Any] = tree[topics][0][partitions][0]
    return result


def fetch(offset: int, topic: Any = None) -> Step:
    return Step(1, {"replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [{
                        "topic_id": topic or topic_id("t"), "partitions": [{
                            "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                            "last_fetched_epoch": -1, "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20}]}],
                    "forgotten_topics_data": [], "rack_id": ""}, version=13)


def list_offsets(timestamp: int, version: int, epoch: int = -1) -> Step:
    return Step(2, {"replica_id": -1, "isolation_level": 0, "timeout": 10_000, "topics": [{
        "name": Name("t"), "partitions": [{"partition_index": 0, "current_leader_epoch": epoch,
                                           "timestamp": timestamp}]}]}, version=version)


def produce(batch: Batch) -> Step:
    return Step(0, {"transactional_id": None, "acks": 1, "timeout": 10_000, "topic_data": [{
        "name": Name("t"), "partition_data": [{"index": 0, "records": batch}]}]}, version=9)


def run_steps(broker: BrokerProcess, *steps: Step) -> list[Any]:
    target = Target("odradek", broker.bootstrap, broker.bootstrap)
    context = Context(f"fixes.{uuid.uuid4().hex[:8]}.", time.time_ns() // 1_000_000)
    return [outcome.tree for outcome in run([*create_topic("t"), *steps], target, context, 0)
            ][len(create_topic("t")):]


def test_metadata_gives_the_operations_of_a_missing_topic(broker: BrokerProcess) -> None:
    wire = Wire(broker.bootstrap)
    answer = plain(wire.call(3, 12, {"topics": [{"name": "no-such-topic"}],
                                     "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": True}))
    (topic,) = answer["topics"]
    assert topic["error_code"] == "unknown_topic_or_partition"
    assert topic["topic_authorized_operations"] == TOPIC_OPERATIONS


def test_fetch_errors_carry_no_offsets(broker: BrokerProcess) -> None:
    out_of_range, unknown_id = run_steps(
        broker, fetch(5), fetch(0, topic="00000000-0000-0000-0000-00000000abcd"))
    refused = partition(out_of_range, "responses")
    assert [refused[field] for field in ("error_code", "high_watermark", "last_stable_offset",
                                         "log_start_offset", "aborted_transactions")] == [
        "offset_out_of_range", -1, -1, -1, None]
    unknown = partition(unknown_id, "responses")
    assert (unknown["error_code"], unknown["aborted_transactions"]) == ("unknown_topic_id", [])


def test_list_offsets_versions_epochs_and_tiers(broker: BrokerProcess) -> None:
    answers = run_steps(
        broker, produce(Batch(timestamp=1_000)),
        list_offsets(-3, version=6), list_offsets(-4, version=7), list_offsets(-5, version=8),
        list_offsets(-5, version=9), list_offsets(5_000, version=7), list_offsets(1_000, 7),
        list_offsets(-1, version=7, epoch=3), list_offsets(-1, version=7, epoch=0))
    found = [(p["error_code"], p["offset"], p["leader_epoch"])
             for p in (partition(a) for a in answers[1:])]
    assert found == [("unsupported_version", -1, -1), ("unsupported_version", -1, -1),
                     ("unsupported_version", -1, -1), ("none", -1, -1), ("none", -1, -1),
                     ("none", 0, 0), ("unknown_leader_epoch", -1, -1), ("none", 1, 0)]


def test_produce_reports_log_start_and_duplicate_append_time(broker: BrokerProcess) -> None:
    pid, epoch = Ref("pid", "producer_id"), Ref("pid", "producer_epoch")
    init = Step(22, {"transactional_id": None, "transaction_timeout": 60_000,
                     "producer_id": -1, "producer_epoch": -1}, version=5, name="pid")
    first, duplicate, gap = (
        produce(Batch(producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                      timestamp=1_234_567))
        for sequence in (0, 0, 5))
    answers = run_steps(broker, init, first, duplicate, gap)
    stored, again, refused = (partition(a, "responses", "partition_responses")
                              for a in answers[1:])
    assert (stored["base_offset"], stored["log_append_time"]) == (0, None)
    assert (again["base_offset"], again["log_append_time"]) == (0, 1_234_567)
    assert (refused["error_code"], refused["log_start_offset"]) == (
        "out_of_order_sequence_number", 0)


def test_refusals_of_topics_and_groups(broker: BrokerProcess) -> None:
    wire = Wire(broker.bootstrap)
    created = plain(wire.call(19, 7, {"topics": [{
        "name": "bad name!", "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": []}], "timeout": 30_000, "validate_only": False}))
    (refused,) = created["topics"]
    assert (refused["error_code"], refused["configs"]) == ("invalid_topic_exception", [])
    coordinator = Step(10, {"key_type": 0, "coordinator_keys": [Name("g")]}, version=4,
                       until=lambda tree: tree["coordinators"][0]["error_code"] == "none")
    commit = Step(8, {"group_id": Name("g"), "generation_id_or_member_epoch": -1,
                      "member_id": "", "group_instance_id": None, "topics": [{
                          "name": Name("t"), "partitions": [{
                              "partition_index": 0, "committed_offset": 1,
                              "committed_leader_epoch": -1, "committed_metadata": None}]}]},
                  version=8)
    delete = Step(47, {"group_id": Name("g"), "topics": [
        {"name": Name("t"), "partitions": [{"partition_index": 0}]},
        {"name": Name("missing"), "partitions": [{"partition_index": 0}]}]}, version=0)
    *_, deleted = run_steps(broker, coordinator, commit, delete)
    assert [t["partitions"][0]["error_code"] for t in deleted["topics"]] == [
        "none", "unknown_topic_or_partition"]
    described = plain(wire.call(69, 0, {"group_ids": ["no-such-group"],
                                        "include_authorized_operations": False}))
    (group,) = described["groups"]
    assert (group["error_code"], group["group_epoch"], group["assignment_epoch"]) == (
        "group_id_not_found", 0, 0)


def test_old_transactional_versions_see_invalid_producer_epoch(broker: BrokerProcess) -> None:
    init = {"transactional_id": Name("txn"), "transaction_timeout": 60_000,
            "producer_id": -1, "producer_epoch": -1}
    ready = Step(10, {"key_type": 1, "coordinator_keys": [Name("txn")]}, version=4,
                 until=lambda tree: tree["coordinators"][0]["error_code"] == "none")
    first = Step(22, init, version=5, name="first")
    second = Step(22, init, version=5)

    def stale(version: int) -> Step:
        return Step(26, {"transactional_id": Name("txn"), "producer_id": Ref("first",
                    "producer_id"), "producer_epoch": Ref("first", "producer_epoch"),
                    "committed": False}, version=version)

    missing = Step(65, {"transactional_ids": [Name("missing")]}, version=0)
    *_, old, new, described = run_steps(broker, ready, first, second, stale(1), stale(2),
                                        missing)
    assert (old["error_code"], new["error_code"]) == ("invalid_producer_epoch",
                                                      "producer_fenced")
    (state,) = described["transaction_states"]
    assert (state["error_code"], state["producer_epoch"], state["transaction_start_time"]) == (
        "transactional_id_not_found", 0, 0)
