"""`odradek transactions list|describe|describe-producers|abort`, in the spirit of Kafka's
kafka-transactions.sh. The Kafka protocol is spoken directly (ListTransactions,
DescribeTransactions, DescribeProducers, WriteTxnMarkers): the Python clients have no admin
calls for transactions."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from odradek.cli.tools.common import ToolError, add_client_options, print_rows, runs
from odradek.cli.tools.wire import WireClient, check
from odradek.net.kafka_client.request_versions import (
    DESCRIBE_PRODUCERS,
    DESCRIBE_TRANSACTIONS,
    FIND_COORDINATOR,
    LIST_TRANSACTIONS,
    WRITE_TXN_MARKERS,
)

TRANSACTION_KEY = 1
CLIENT_ID = "odradek-transactions"


def add_transactions_parser(commands: Any) -> None:
    tool = commands.add_parser("transactions", help="list, describe and abort transactions")
    add_client_options(tool)
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


Rows = tuple[Sequence[str], Sequence[Sequence[Any]]]
"""A table's header and rows."""


def _runs(command: Callable[[WireClient, argparse.Namespace], Awaitable[Rows | str]]
          ) -> Callable[[argparse.Namespace], int]:
    """A command as a subcommand: tables printed as tables or JSON, messages as they are."""
    async def call(args: argparse.Namespace) -> Rows | str:
        async with WireClient(args, CLIENT_ID) as client:
            return await command(client, args)

    def run(args: argparse.Namespace) -> None:
        output = asyncio.run(call(args))
        if isinstance(output, str):
            print(output)
        else:
            print_rows(args, *output)

    return runs("transactions", run)


async def list_transactions(client: WireClient, args: argparse.Namespace) -> Rows:
    rows = []
    for node_id in sorted(await client.brokers()):
        response = await client.send_to_broker(node_id, LIST_TRANSACTIONS, {
            "state_filters": [], "producer_id_filters": [], "duration_filter": -1,
        })
        rows += [(t.transactional_id, node_id, t.producer_id, t.transaction_state)
                 for t in response.transaction_states]
    return ("TransactionalId", "Coordinator", "ProducerId", "TransactionState"), sorted(rows)


async def describe_transaction(client: WireClient, args: argparse.Namespace) -> Rows:
    found = await client.send(FIND_COORDINATOR, {
        "key_type": TRANSACTION_KEY, "coordinator_keys": [args.transactional_id]})
    (coordinator,) = found.coordinators
    check(coordinator.error_code, f"no coordinator for {args.transactional_id}")
    response = await client.send_to((coordinator.host, coordinator.port), DESCRIBE_TRANSACTIONS,
                                    {"transactional_ids": [args.transactional_id]})
    (state,) = response.transaction_states
    check(state.error_code, args.transactional_id)
    start_ms = round(state.transaction_start_time.timestamp() * 1000)
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    return (
        ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
         "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TopicPartitions"),
        [(coordinator.node_id, state.transactional_id, state.producer_id,
          state.producer_epoch, state.transaction_state,
          int(state.transaction_timeout.total_seconds() * 1000), start_ms, partitions)])


async def _producers(client: WireClient, args: argparse.Namespace) -> tuple[int, list[Any]]:
    """The partition's leader and the producers it keeps state for."""
    metadata = await client.metadata([args.topic])
    (topic,) = metadata.topics
    check(topic.error_code, args.topic)
    leader = next((p.leader_id for p in topic.partitions
                   if p.partition_index == args.partition), None)
    if leader is None or leader not in await client.brokers():
        raise ToolError(f"{args.topic}-{args.partition} has no leader")
    response = await client.send_to_broker(leader, DESCRIBE_PRODUCERS, {"topics": [
        {"name": args.topic, "partition_indexes": [args.partition]}]})
    (partition,) = response.topics[0].partitions
    check(partition.error_code, f"{args.topic}-{args.partition}")
    return leader, list(partition.active_producers)


async def describe_producers(client: WireClient, args: argparse.Namespace) -> Rows:
    _, producers = await _producers(client, args)
    return (("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
             "LastTimestamp", "CurrentTransactionStartOffset"),
            [(p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
              p.last_timestamp, p.current_txn_start_offset) for p in producers])


async def abort_transaction(client: WireClient, args: argparse.Namespace) -> str:
    leader, producers = await _producers(client, args)
    matching = [p for p in producers if p.current_txn_start_offset == args.start_offset]
    if not matching:
        raise ToolError(f"no open transaction starts at offset {args.start_offset} "
                                f"of {args.topic}-{args.partition}")
    producer = matching[0]
    response = await client.send_to_broker(leader, WRITE_TXN_MARKERS, {"markers": [{
        "producer_id": producer.producer_id, "producer_epoch": producer.producer_epoch,
        "transaction_result": False, "coordinator_epoch": producer.coordinator_epoch,
        "topics": [{"name": args.topic, "partition_indexes": [args.partition]}],
    }]})
    check(response.markers[0].topics[0].partitions[0].error_code, "the abort marker was refused")
    return (f"Aborted the transaction of producer {producer.producer_id} starting at offset "
            f"{args.start_offset} of {args.topic}-{args.partition}")
