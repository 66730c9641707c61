"""`odradek delete-records`, the counterpart of kafka-delete-records.sh: advance partitions'
log start offsets to the offsets of a JSON file (-1: the high watermark)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any, TypeGuard

from odradek.cli.tools.admin_client import admin_client
from odradek.cli.tools.common import (
    ToolError,
    add_client_options,
    describe_kafka_error,
    read_json_file,
    runs,
)


def add_delete_records_parser(commands: Any) -> None:
    tool = commands.add_parser("delete-records", help="delete partitions' records below "
                               "given offsets")
    add_client_options(tool, tabular=False)
    tool.add_argument("--offset-json-file", type=Path, required=True, metavar="FILE",
                      help='{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], '
                           '"version": 1} (offset -1: the high watermark)')
    tool.set_defaults(run=runs("delete-records", delete_records))


def parse_offsets(data: Any) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of an --offset-json-file, each partition once."""
    if not isinstance(data, dict):
        raise ToolError("the offset JSON must be an object")
    version = data.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    if "partitions" not in data:
        raise ToolError("Missing partitions field")
    if not isinstance(data["partitions"], list):
        raise ToolError("\"partitions\" must be a list")
    offsets = []
    for entry in data["partitions"]:
        topic, partition, offset = (entry.get(k) if isinstance(entry, dict) else None
                                    for k in ("topic", "partition", "offset"))
        if not isinstance(topic, str) or not _integer(partition) or not _integer(offset):
            raise ToolError("expected {\"topic\": string, \"partition\": integer, "
                            f"\"offset\": integer}}, got {entry!r}")
        offsets.append((topic, partition, offset))
    duplicates = sorted(k for k, n in Counter((t, p) for t, p, _ in offsets).items() if n > 1)
    if duplicates:
        raise ToolError("Offset json file contains duplicate topic partitions: "
                        + ",".join(f"{t}-{p}" for t, p in duplicates))
    return offsets


def _integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def delete_records(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException, TopicPartition

    offsets = parse_offsets(read_json_file(args.offset_json_file))
    client = admin_client(args)
    client.list_topics(timeout=args.timeout)  # an unreachable cluster fails here, once
    print("Executing records delete operation", flush=True)
    futures = client.delete_records([TopicPartition(t, p, o) for t, p, o in offsets],
                                    request_timeout=args.timeout)
    print("Records delete operation completed:")
    failed = 0
    for partition, future in sorted(futures.items(), key=lambda i: (i[0].topic, i[0].partition)):
        name = f"{partition.topic}-{partition.partition}"
        try:
            print(f"partition: {name}\tlow_watermark: "
                  f"{future.result(timeout=args.timeout + 5).low_watermark}")
        except (KafkaException, TimeoutError) as error:
            failed += 1
            print(f"partition: {name}\terror: {describe_kafka_error(error)}")
    if failed:
        raise ToolError(f"{failed} of {len(futures)} partition(s) failed")
    return 0
