"""The `odradek` command line."""

from __future__ import annotations

import argparse
import gc
import importlib
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

TOOLS: list[tuple[tuple[str, ...], str, str]] = [
    (("cluster",), "odradek.cli.cluster.cli", "add_cluster_parser"),
    (("topics",), "odradek.cli.tools.topics", "add_topics_parser"),
    (("configs",), "odradek.cli.tools.configs", "add_configs_parser"),
    (("acls",), "odradek.cli.tools.acls", "add_acls_parser"),
    (("produce",), "odradek.cli.tools.console_producer", "add_produce_parser"),
    (("consume",), "odradek.cli.tools.console_consumer", "add_consume_parser"),
    (("groups",), "odradek.cli.groups.cli", "add_groups_parser"),
    (("transactions",), "odradek.cli.transactions", "add_transactions_parser"),
    (("reassign",), "odradek.cli.tools.reassign", "add_reassign_parser"),
    (("leader-election",), "odradek.cli.tools.leader_election", "add_leader_election_parser"),
    (("delete-records",), "odradek.cli.tools.delete_records", "add_delete_records_parser"),
    (("log-dirs",), "odradek.cli.tools.log_dirs", "add_log_dirs_parser"),
    (("quorum",), "odradek.cli.tools.quorum", "add_quorum_parser"),
    (("storage",), "odradek.cli.tools.storage", "add_storage_parser"),
    (("dump-log",), "odradek.cli.tools.dump_log", "add_dump_log_parser"),
    (("perf",), "odradek.cli.perf", "add_perf_parser"),
    (("audit", "compact-snapshot"), "odradek.cli.spark", "add_spark_parsers"),
    (("mirror",), "odradek.cli.mirror", "add_mirror_parser"),
]
"""The tools' commands, the module that defines each and its function that adds their
parsers, in the order of `--help`. A tool's command imports its own module alone."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The node commands' parsers and `command`'s, or every command's when `command` is none
    of them (`--help`, a mistyped command)."""
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
    tools = [tool for tool in TOOLS if command in tool[0]] or TOOLS
    for _, module, adder in tools:
        getattr(importlib.import_module(module), adder)(commands)
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
        _imports_done()
        result: int = args.run(args)
        return result
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        runner = _runner(args, at_swap_point)
        _imports_done()
        runner(node_config(args), args.event_loop == "uvloop")
    except (InvalidConfigError, OSError) as error:
        print(f"odradek: invalid configuration: {error}", file=sys.stderr)
        return 2
    except StartupError as error:
        print(f"odradek: cannot start: {error}", file=sys.stderr)
        return 1
    _exit_stopped()


def _imports_done() -> None:
    """Once the command's modules are imported, the collector that `run` paused for them
    (odradek/cli/__main__.py) collects again, but never scans what they built: it lives as
    long as the process (gc.freeze). A full collection of that heap stalled a broker's event
    loop for 25-60 ms under load. A caller that never paused the collector (a test calling
    `main`) keeps its own heap as it was."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _exit_stopped() -> NoReturn:
    """A node that stopped cleanly (its logs flushed, fsynced and closed, its tasks and
    threads done) exits at once, as a JVM's System.exit does: the interpreter's teardown,
    which collects and frees every object of every imported module, took most of a clean
    stop (about 1 s, more on a busy machine)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

