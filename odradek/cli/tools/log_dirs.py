"""`odradek log-dirs describe`, the counterpart of kafka-log-dirs.sh --describe: each broker's
log directories and the size of every partition replica in them, as Kafka's JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.cli.tools.common import ToolError, add_client_options, print_json, runs
from odradek.cli.tools.wire import WireClient, check
from odradek.net.kafka_client.request_versions import DESCRIBE_LOG_DIRS

CLIENT_ID = "log-dirs-tool"


def add_log_dirs_parser(commands: Any) -> None:
    tool = commands.add_parser("log-dirs", help="describe the brokers' log directories")
    tools = tool.add_subparsers(dest="tool", required=True)
    describe = tools.add_parser("describe", help="the log directories of brokers and the "
                                "partition replicas they hold, as JSON")
    add_client_options(describe)
    describe.add_argument("--broker-list", default="", metavar="1,2,3",
                          help="the brokers to query (default: every broker)")
    describe.add_argument("--topic-list", default="", metavar="a,b",
                          help="the topics to show (default: every topic)")
    describe.set_defaults(run=runs("log-dirs", describe_command))


async def describe_log_dirs(client: WireClient, broker: int,
                            partitions: Mapping[str, Sequence[int]] | None = None) -> Any:
    """The DescribeLogDirs results of one broker: every replica, or just these partitions."""
    topics = None if partitions is None else [
        {"topic": topic, "partitions": list(indexes)} for topic, indexes in partitions.items()]
    response = await client.send_to_broker(broker, DESCRIBE_LOG_DIRS, {"topics": topics})
    check(response.error_code, f"describing the log dirs of broker {broker}")
    return response.results


def log_dirs_json(results: Mapping[int, Any], topics: set[str]) -> dict[str, Any]:
    """Kafka's log-dirs document for these brokers' results, limited to `topics` (if any)."""
    return {"version": 1, "brokers": [
        {"broker": broker, "logDirs": [
            {"logDir": result.log_dir,
             "error": None if result.error_code == ErrorCode.none
             else ErrorCode(result.error_code).name.upper(),
             "partitions": [
                 {"partition": f"{topic.name}-{p.partition_index}", "size": p.partition_size,
                  "offsetLag": p.offset_lag, "isFuture": p.is_future_key}
                 for topic in result.topics if not topics or topic.name in topics
                 for p in topic.partitions]}
            for result in results[broker]]}
        for broker in sorted(results)]}


def _ids(text: str) -> list[int]:
    try:
        return sorted({int(item) for item in text.split(",") if item})
    except ValueError:
        raise ToolError(f"--broker-list must be comma-separated broker ids, got {text!r}"
                        ) from None


async def _describe(args: argparse.Namespace) -> tuple[list[int], dict[str, Any]]:
    wanted = _ids(args.broker_list)
    topics = {t for t in args.topic_list.split(",") if t}
    async with WireClient(args, CLIENT_ID) as client:
        existing = sorted(await client.brokers())
        missing = [b for b in wanted if b not in existing]
        if missing:
            raise ToolError(
                f"The given brokers do not exist from --broker-list: "
                f"{','.join(map(str, missing))}. Current existent brokers: "
                f"{','.join(map(str, existing))}")
        queried = wanted or existing
        answers = await asyncio.gather(*(describe_log_dirs(client, b) for b in queried))
    return queried, log_dirs_json(dict(zip(queried, answers, strict=True)), topics)


def describe_command(args: argparse.Namespace) -> None:
    if args.json:
        print_json(asyncio.run(_describe(args))[1])
        return
    print("Querying brokers for log directories information", flush=True)
    brokers, document = asyncio.run(_describe(args))
    print(f"Received log directory information from brokers {','.join(map(str, brokers))}")
    print(json.dumps(document, separators=(",", ":")))
