"""`odradek transactions list|describe|describe-producers|abort`, in the spirit of Kafka's
kafka-transactions.sh. The Kafka protocol is spoken directly (ListTransactions,
DescribeTransactions, DescribeProducers, WriteTxnMarkers): the Python clients have no admin
calls for transactions."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.client import BrokerConnection, BrokerConnectionError
from odradek.protocol.codec import build_request

METADATA = (3, 12)
FIND_COORDINATOR = (10, 4)
DESCRIBE_PRODUCERS = (61, 0)
DESCRIBE_TRANSACTIONS = (65, 0)
LIST_TRANSACTIONS = (66, 1)
WRITE_TXN_MARKERS = (27, 1)
TRANSACTION_KEY = 1
CLIENT_ID = "odradek-transactions"


class TransactionsError(Exception):
    """A failure to report on stderr (exit status 1)."""


def add_transactions_parser(commands: Any) -> None:
    tool = commands.add_parser("transactions", help="list, describe and abort transactions")
    tool.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    tool.add_argument("--timeout", type=float, default=10.0,
                      help="seconds to wait for each broker answer (default 10)")
    tools = tool.add_subparsers(dest="tool", required=True)
    tools.add_parser("list", help="every transactional id the brokers coordinate"
                     ).set_defaults(run=_runs(list_transactions))
    describe = tools.add_parser("describe", help="one transaction's state and partitions")
    describe.add_argument("--transactional-id", required=True)
    describe.set_defaults(run=_runs(describe_transaction))
    producers = tools.add_parser("describe-producers",
                                 help="the producers a partition's leader keeps state for")
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    producers.set_defaults(run=_runs(describe_producers))
    abort = tools.add_parser("abort", help="abort a hanging transaction by writing an abort "
                             "marker to its partition")
    abort.add_argument("--topic", required=True)
    abort.add_argument("--partition", type=int, required=True)
    abort.add_argument("--start-offset", type=int, required=True,
                       help="the first offset of the transaction to abort")
    abort.set_defaults(run=_runs(abort_transaction))


def _runs(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            print(asyncio.run(command(args)))
        except TransactionsError as error:
            print(f"odradek transactions: {error}", file=sys.stderr)
            return 1
        return 0
    return run


async def _call(host: str, port: int, api: tuple[int, int], body: dict[str, Any],
                timeout: float) -> Any:
    try:
        connection = await BrokerConnection.connect(host, port, CLIENT_ID, timeout)
        try:
            return await connection.send(build_request(*api, body), timeout)
        finally:
            connection.close()
    except BrokerConnectionError as error:
        raise TransactionsError(f"{host}:{port}: {error}") from None


async def _metadata(args: argparse.Namespace, topics: list[str] | None) -> Any:
    host, port = args.bootstrap_server.rsplit(":", 1)
    return await _call(host, int(port), METADATA, {
        "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False,
    }, args.timeout)


def _brokers(metadata: Any) -> dict[int, tuple[str, int]]:
    return {b.node_id: (b.host, b.port) for b in metadata.brokers}


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, as Kafka's tools print them."""
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in cells)


async def list_transactions(args: argparse.Namespace) -> str:
    brokers = _brokers(await _metadata(args, []))
    rows = []
    for node_id, (host, port) in sorted(brokers.items()):
        response = await _call(host, port, LIST_TRANSACTIONS, {
            "state_filters": [], "producer_id_filters": [], "duration_filter": -1,
        }, args.timeout)
        rows += [(t.transactional_id, node_id, t.producer_id, t.transaction_state)
                 for t in response.transaction_states]
    return table(("TransactionalId", "Coordinator", "ProducerId", "TransactionState"),
                 sorted(rows))


async def describe_transaction(args: argparse.Namespace) -> str:
    host, port = args.bootstrap_server.rsplit(":", 1)
    found = await _call(host, int(port), FIND_COORDINATOR, {
        "key_type": TRANSACTION_KEY, "coordinator_keys": [args.transactional_id]},
        args.timeout)
    (coordinator,) = found.coordinators
    if coordinator.error_code != ErrorCode.none:
        raise TransactionsError(f"no coordinator for {args.transactional_id}: "
                                f"{ErrorCode(coordinator.error_code).name}")
    response = await _call(coordinator.host, coordinator.port, DESCRIBE_TRANSACTIONS, {
        "transactional_ids": [args.transactional_id]}, args.timeout)
    (state,) = response.transaction_states
    if state.error_code != ErrorCode.none:
        raise TransactionsError(f"{args.transactional_id}: {ErrorCode(state.error_code).name}")
    start_ms = round(state.transaction_start_time.timestamp() * 1000)
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    return table(
        ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
         "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TopicPartitions"),
        [(coordinator.node_id, state.transactional_id, state.producer_id,
          state.producer_epoch, state.transaction_state,
          int(state.transaction_timeout.total_seconds() * 1000), start_ms, partitions)])


async def _producers(args: argparse.Namespace) -> tuple[tuple[str, int], list[Any]]:
    metadata = await _metadata(args, [args.topic])
    brokers = _brokers(metadata)
    (topic,) = metadata.topics
    if topic.error_code != ErrorCode.none:
        raise TransactionsError(f"{args.topic}: {ErrorCode(topic.error_code).name}")
    leader = next((p.leader_id for p in topic.partitions
                   if p.partition_index == args.partition), None)
    if leader is None or leader not in brokers:
        raise TransactionsError(f"{args.topic}-{args.partition} has no leader")
    response = await _call(*brokers[leader], DESCRIBE_PRODUCERS, {"topics": [
        {"name": args.topic, "partition_indexes": [args.partition]}]}, args.timeout)
    (partition,) = response.topics[0].partitions
    if partition.error_code != ErrorCode.none:
        raise TransactionsError(f"{args.topic}-{args.partition}: "
                                f"{ErrorCode(partition.error_code).name}")
    return brokers[leader], list(partition.active_producers)


async def describe_producers(args: argparse.Namespace) -> str:
    _, producers = await _producers(args)
    return table(("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                  "LastTimestamp", "CurrentTransactionStartOffset"),
                 [(p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
                   p.last_timestamp, p.current_txn_start_offset) for p in producers])


async def abort_transaction(args: argparse.Namespace) -> str:
    leader, producers = await _producers(args)
    matching = [p for p in producers if p.current_txn_start_offset == args.start_offset]
    if not matching:
        raise TransactionsError(f"no open transaction starts at offset {args.start_offset} "
                                f"of {args.topic}-{args.partition}")
    producer = matching[0]
    response = await _call(*leader, WRITE_TXN_MARKERS, {"markers": [{
        "producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch,
        "transaction_result": False, "coordinator_epoch": producer.coordinator_epoch,
        "topics": [{"name": args.topic, "partition_indexes": [args.partition]}],
    }]}, args.timeout)
    code = ErrorCode(response.markers[0].topics[0].partitions[0].error_code)
    if code != ErrorCode.none:
        raise TransactionsError(f"the abort marker was refused: {code.name}")
    return (f"Aborted the transaction of producer {producer.producer_id} starting at offset "
            f"{args.start_offset} of {args.topic}-{args.partition}")
