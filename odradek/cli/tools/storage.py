"""`odradek storage format|random-uuid`, Kafka's kafka-storage verbs: `format` writes
`meta.properties` in each of the node's log directories (log.dirs, metadata.log.dir) and, in
the metadata log's, the bootstrap records (`--add-scram` credentials, KIP-900) that the first
active controller writes to an empty metadata log. Formatting stays optional: a node whose
directories are not formatted records its cluster id itself on first start."""

from __future__ import annotations

import argparse
import base64
import binascii
import secrets
import sys
from pathlib import Path
from typing import Any

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError, load_properties
from odradek.log.meta_properties import (
    META_PROPERTIES,
    new_cluster_id,
    write_bootstrap,
    write_meta_properties,
)
from odradek.metadata.records import MetadataRecord
from odradek.metadata.scram_bootstrap import FormatterError, parse_add_scram

SALT_BYTES = 26
"""The length of the salt Kafka's ScramFormatter draws."""


def directories(config: BrokerConfig) -> tuple[list[Path], Path]:
    """(every directory to format, sorted, as Kafka's configToLogDirectories; the metadata
    log's)."""
    metadata = config["metadata.log.dir"]
    metadata_dir = Path(metadata) if isinstance(metadata, str) else config.log_dirs()[0]
    return sorted({*config.log_dirs(), metadata_dir}), metadata_dir


def check_cluster_id(cluster_id: str) -> None:
    """Kafka's Uuid.fromString: 16 bytes in URL-safe base64 (22 characters)."""
    try:
        decoded = base64.urlsafe_b64decode(cluster_id + "==")
    except (binascii.Error, ValueError) as error:
        raise FormatterError(f"Cluster ID string {cluster_id} does not appear to be a valid "
                             f"UUID: {error}") from None
    if len(cluster_id) != 22 or len(decoded) != 16:
        raise FormatterError(f"Cluster ID string {cluster_id} does not appear to be a valid "
                             f"UUID: Input string with prefix `{cluster_id[:22]}` is not 22 "
                             "characters long or does not decode to 16 bytes")


def format_storage(config: BrokerConfig, cluster_id: str, scram: list[str],
                   ignore_formatted: bool) -> list[str]:
    """Format the node's directories; the lines to print. Raises FormatterError."""
    check_cluster_id(cluster_id)
    records: list[MetadataRecord] = [
        parse_add_scram(argument, lambda: secrets.token_bytes(SALT_BYTES))
        for argument in scram]
    every, metadata_dir = directories(config)
    formatted = [d for d in every if (d / META_PROPERTIES).exists()]
    if formatted and not ignore_formatted:
        raise FormatterError(f"Log directory {formatted[0]} is already formatted. Use "
                             "--ignore-formatted to ignore this directory and format the "
                             "others.")
    pending = [d for d in every if d not in formatted]
    if not pending:
        return ["All of the log directories are already formatted."]
    node_id = config.integer("node.id")
    lines = []
    for directory in pending:
        try:
            write_meta_properties(directory, cluster_id, node_id)
            if directory == metadata_dir:
                write_bootstrap(directory, records)
        except OSError as error:
            raise FormatterError(f"Error while writing meta.properties file in {directory}: "
                                 f"{error}") from None
        kind = "metadata" if directory == metadata_dir else "data"
        lines.append(f"Formatting {kind} directory {directory}.")
    return lines


def _format(args: argparse.Namespace) -> int:
    try:
        config = BrokerConfig(load_properties(Path(args.config)))
        lines = format_storage(config, args.cluster_id, args.add_scram or [],
                               args.ignore_formatted)
    except (FormatterError, InvalidConfigError, OSError) as error:
        print(error, file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def _random_uuid(args: argparse.Namespace) -> int:
    print(new_cluster_id())
    return 0


def add_storage_parser(commands: Any) -> None:
    tool = commands.add_parser("storage", help="format a node's log directories (kafka-storage)")
    verbs = tool.add_subparsers(dest="verb", required=True)
    formatting = verbs.add_parser("format", help="Format the Kafka log directories on this "
                                  "node.")
    formatting.add_argument("--config", "-c", required=True,
                            help="The Kafka configuration file to use.")
    formatting.add_argument("--cluster-id", "-t", required=True, help="The cluster ID to use.")
    formatting.add_argument("--add-scram", "-S", action="append", metavar="SCRAM_CREDENTIAL",
                            help="A SCRAM_CREDENTIAL to add to the __cluster_metadata log e.g. "
                            "'SCRAM-SHA-256=[name=alice,password=alice-secret]' "
                            "'SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"N3E=\","
                            "saltedpassword=\"YCE=\"]'")
    formatting.add_argument("--ignore-formatted", "-g", action="store_true")
    formatting.set_defaults(run=_format)
    verbs.add_parser("random-uuid", help="Print a random UUID.").set_defaults(run=_random_uuid)
