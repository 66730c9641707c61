"""The `odradek` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from odradek.config.kafka_configs import (
    BrokerConfig,
    InvalidConfigError,
    key_value,
    load_properties,
)
from odradek.runtime.service import StartupError

if TYPE_CHECKING:
    from odradek.log.segment_swap import SwapHook

Runner = Callable[[BrokerConfig, bool], None]


DEV_DEFAULTS = {"offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1"}
"""What a one-broker cluster needs that Kafka's defaults (made for three brokers) lack, as in
Kafka's own single-node server.properties."""


def node_config(args: argparse.Namespace) -> BrokerConfig:
    """`odradek dev`'s defaults, the file, dev's --data-dir/--port, then --override: later
    sources win."""
    raw: dict[str, str] = dict(DEV_DEFAULTS) if args.runner == "combined" else {}
    if args.config:
        raw.update(load_properties(Path(args.config)))
    if getattr(args, "data_dir", None):
        raw["log.dir"] = args.data_dir
        raw.pop("log.dirs", None)
    if getattr(args, "port", None) is not None:
        raw["listeners"] = f"PLAINTEXT://{args.host}:{args.port}"
    raw.update(dict(args.override))
    return BrokerConfig(raw)


def _add_node_parser(
    commands: argparse._SubParsersAction, name: str, help_text: str, run: str
) -> argparse.ArgumentParser:
    parser = commands.add_parser(name, help=help_text)
    parser.add_argument("--config", help="a Kafka-style .properties file")
    parser.add_argument("--override", action="append", type=key_value, default=[],
                        metavar="KEY=VALUE", help="set a config (repeatable)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="uvloop (default; falls back to asyncio when missing) or asyncio")
    parser.set_defaults(runner=run)
    return parser


NODE_COMMANDS = ("dev", "broker", "controller")
"""The commands that run a node: they parse without importing the tools' modules, which
would add a few tenths of a second to every start."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; only the node commands' when `command` is one of them."""
    parser = argparse.ArgumentParser(prog="odradek", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    dev = _add_node_parser(commands, "dev", "run a single-node cluster (controller + broker "
                           "in one process)", "combined")
    dev.add_argument("--data-dir", help="log directory (log.dir); default ./data")
    dev.add_argument("--port", type=int, help="Kafka listener port; default 9092")
    dev.add_argument("--host", default="127.0.0.1", help="listener address with --port")
    _add_node_parser(commands, "broker", "run a broker of a multi-node cluster (needs "
                     "controller.quorum.voters)", "broker")
    _add_node_parser(commands, "controller", "run a controller (a Raft voter of "
                     "controller.quorum.voters)", "controller")
    if command in NODE_COMMANDS:
        return parser
    from odradek.cli.cluster.cli import add_cluster_parser
    from odradek.cli.groups.cli import add_groups_parser
    from odradek.cli.mirror import add_mirror_parser
    from odradek.cli.perf import add_perf_parser
    from odradek.cli.spark import add_spark_parsers
    from odradek.cli.tools.acls import add_acls_parser
    from odradek.cli.tools.configs import add_configs_parser
    from odradek.cli.tools.console_consumer import add_consume_parser
    from odradek.cli.tools.console_producer import add_produce_parser
    from odradek.cli.tools.delete_records import add_delete_records_parser
    from odradek.cli.tools.dump_log import add_dump_log_parser
    from odradek.cli.tools.leader_election import add_leader_election_parser
    from odradek.cli.tools.log_dirs import add_log_dirs_parser
    from odradek.cli.tools.quorum import add_quorum_parser
    from odradek.cli.tools.reassign import add_reassign_parser
    from odradek.cli.tools.storage import add_storage_parser
    from odradek.cli.tools.topics import add_topics_parser
    from odradek.cli.transactions import add_transactions_parser

    add_cluster_parser(commands)
    add_topics_parser(commands)
    add_configs_parser(commands)
    add_acls_parser(commands)
    add_produce_parser(commands)
    add_consume_parser(commands)
    add_groups_parser(commands)
    add_transactions_parser(commands)
    add_reassign_parser(commands)
    add_leader_election_parser(commands)
    add_delete_records_parser(commands)
    add_log_dirs_parser(commands)
    add_quorum_parser(commands)
    add_storage_parser(commands)
    add_dump_log_parser(commands)
    add_perf_parser(commands)
    add_spark_parsers(commands)
    add_mirror_parser(commands)
    return parser


def _runner(args: argparse.Namespace, at_swap_point: SwapHook | None) -> Runner:
    if args.runner == "controller":
        from odradek.controller.app import run_controller

        return run_controller
    from odradek.broker.app import run_broker, run_combined

    return partial(run_combined if args.runner == "combined" else run_broker,
                   at_swap_point=at_swap_point)


def main(argv: Sequence[str] | None = None, at_swap_point: SwapHook | None = None) -> int:
    """`at_swap_point` is a crash test's hook into the log cleaner's swaps, for a broker
    (tests/integration/paused_cleaner.py); the command line has no way to set it."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    runner_name = getattr(args, "runner", None)
    if runner_name is None:
        result: int = args.run(args)
        return result
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        _runner(args, at_swap_point)(node_config(args), args.event_loop == "uvloop")
    except (InvalidConfigError, OSError) as error:
        print(f"odradek: invalid configuration: {error}", file=sys.stderr)
        return 2
    except StartupError as error:
        print(f"odradek: cannot start: {error}", file=sys.stderr)
        return 1
    _exit_stopped()


def _exit_stopped() -> NoReturn:
    """A node that stopped cleanly (its logs flushed, fsynced and closed, its tasks and
    threads done) exits at once, as a JVM's System.exit does: the interpreter's teardown,
    which collects and frees every object of every imported module, took most of a clean
    stop (about 1 s, more on a busy machine)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

