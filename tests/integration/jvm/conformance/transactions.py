"""Scenarios of transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
TxnOffsetCommit, EndTxn, WriteTxnMarkers and the descriptions of transactions and
producers, with fenced epochs and invalid states."""

from __future__ import annotations

from typing import Any

from tests.integration.jvm.conformance.data_plane import init_producer_id, produce
from tests.integration.jvm.conformance.groups import fetch_offsets
from tests.integration.jvm.conformance.scenario import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    END_TXN,
    INIT_PRODUCER_ID,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
    WRITE_TXN_MARKERS,
    Scenario,
    create_topic,
    find_coordinator,
    no_error,
)
from tests.integration.jvm.conformance.steps import Batch, Name, Ref, Step

PID, EPOCH = Ref("pid", "producer_id"), Ref("pid", "producer_epoch")
BUMPED = Ref("bumped", "producer_epoch")
"""The epoch InitProducerId gives the same transactional id again, after aborting its
ongoing transaction."""


def add_partitions(epoch: Any = EPOCH, topic: str = "t", version: int | None = None,
                   producer_id: Any = PID) -> Step:
    topics = [{"name": Name(topic), "partitions": [0]}]
    return Step(ADD_PARTITIONS_TO_TXN, {
        "v3_and_below_transactional_id": Name("txn"), "v3_and_below_producer_id": producer_id,
        "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topics,
        "transactions": [{"transactional_id": Name("txn"), "producer_id": producer_id,
                          "producer_epoch": epoch, "verify_only": False, "topics": topics}]},
        version=version)


def end_txn(committed: bool, epoch: Any = EPOCH, version: int | None = None) -> Step:
    return Step(END_TXN, {"transactional_id": Name("txn"), "producer_id": PID,
                          "producer_epoch": epoch, "committed": committed}, version=version)


def add_offsets(epoch: Any = EPOCH, version: int | None = None) -> Step:
    return Step(ADD_OFFSETS_TO_TXN, {"transactional_id": Name("txn"), "producer_id": PID,
                                     "producer_epoch": epoch, "group_id": Name("g")},
                version=version)


def txn_commit(epoch: Any = EPOCH, version: int | None = None) -> Step:
    return Step(TXN_OFFSET_COMMIT, {
        "transactional_id": Name("txn"), "group_id": Name("g"), "producer_id": PID,
        "producer_epoch": epoch, "generation_id": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": Name("t"), "partitions": [{
            "partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
            "committed_metadata": None}]}]}, version=version)


SETUP = (*create_topic("t"), find_coordinator("txn", 1), find_coordinator("g", 0),
         init_producer_id("txn"))
TXN_BATCH = Batch(producer_id=PID, producer_epoch=EPOCH, base_sequence=0, transactional=True)

SCENARIOS = [
    Scenario("init_producer_id", INIT_PRODUCER_ID, (
        find_coordinator("txn", 1),
        Step(INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60_000,
                                "producer_id": -1, "producer_epoch": -1}, name="idem",
             until=no_error),
        Step(INIT_PRODUCER_ID, {"transactional_id": Name("txn"), "transaction_timeout": 60_000,
                                "producer_id": -1, "producer_epoch": -1}, name="first",
             until=no_error),
        Step(INIT_PRODUCER_ID, {"transactional_id": Name("txn"), "transaction_timeout": 60_000,
                                "producer_id": Ref("first", "producer_id"),
                                "producer_epoch": Ref("first", "producer_epoch")}),
        Step(INIT_PRODUCER_ID, {"transactional_id": Name("txn"), "transaction_timeout": 60_000,
                                "producer_id": Ref("first", "producer_id"),
                                "producer_epoch": 77}),
        Step(INIT_PRODUCER_ID, {"transactional_id": Name("txn2"),
                                "transaction_timeout": 1_000_000_000, "producer_id": -1,
                                "producer_epoch": -1}),
    )),
    Scenario("add_partitions_to_txn", ADD_PARTITIONS_TO_TXN, (
        *SETUP,
        add_partitions(epoch=9),
        add_partitions(producer_id=424242),
        add_partitions(topic="missing"),
        add_partitions(),
        add_partitions(),
        end_txn(False, version=3),
    ), versions=(0, 3)),
    Scenario("end_txn", END_TXN, (
        *SETUP,
        end_txn(True),
        add_partitions(version=3),
        produce("t", TXN_BATCH, transactional_id=Name("txn"), version=9),
        end_txn(True, epoch=5),
        end_txn(True),
        end_txn(False),
        Step(DESCRIBE_TRANSACTIONS, {"transactional_ids": [Name("txn")]}, version=0),
    )),
    Scenario("add_offsets_to_txn", ADD_OFFSETS_TO_TXN, (
        *SETUP,
        add_offsets(epoch=8),
        add_offsets(),
        end_txn(False, version=3),
    )),
    Scenario("txn_offset_commit", TXN_OFFSET_COMMIT, (
        *SETUP,
        txn_commit(),
        add_offsets(version=3),
        txn_commit(epoch=6),
        txn_commit(),
        end_txn(True, version=3),
    )),
    Scenario("txn_offset_commit_fenced", TXN_OFFSET_COMMIT, (
        # the fault campaign's lost offsets: a TxnOffsetCommit delayed past its transaction's
        # abort must be refused, or the producer's next commit applies its offsets
        *SETUP,
        add_offsets(version=3),
        init_producer_id("txn", name="bumped"),
        txn_commit(),
        add_offsets(epoch=BUMPED, version=3),
        end_txn(True, epoch=BUMPED, version=3),
        fetch_offsets(version=8),
    )),
    Scenario("write_txn_markers", WRITE_TXN_MARKERS, (
        *create_topic("t"),
        Step(WRITE_TXN_MARKERS, {"markers": [{
            "producer_id": 31337, "producer_epoch": 0, "transaction_result": False,
            "topics": [{"name": Name("t"), "partition_indexes": [0, 4]},
                       {"name": Name("missing"), "partition_indexes": [0]}],
            "coordinator_epoch": 0}]}),
    )),
    Scenario("describe_transactions", DESCRIBE_TRANSACTIONS, (
        *SETUP,
        add_partitions(version=3),
        Step(DESCRIBE_TRANSACTIONS, {"transactional_ids": [Name("txn"), Name("missing")]}),
        Step(LIST_TRANSACTIONS, {"state_filters": ["Ongoing"], "producer_id_filters": [PID],
                                 "duration_filter": -1}, version=1),
        end_txn(False, version=3),
    )),
    Scenario("list_transactions", LIST_TRANSACTIONS, (
        Step(LIST_TRANSACTIONS, {"state_filters": ["NoSuchState"], "producer_id_filters": [],
                                 "duration_filter": -1}),
        Step(LIST_TRANSACTIONS, {"state_filters": [], "producer_id_filters": [123456789],
                                 "duration_filter": -1}),
    )),
    Scenario("describe_producers", DESCRIBE_PRODUCERS, (
        *create_topic("t"),
        produce("t", Batch(producer_id=55555, producer_epoch=3, base_sequence=0), version=9),
        Step(DESCRIBE_PRODUCERS, {"topics": [{"name": Name("t"), "partition_indexes": [0, 3]},
                                             {"name": Name("missing"), "partition_indexes": [0]}]}),
    )),
]
