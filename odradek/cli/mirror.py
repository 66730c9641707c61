"""`odradek mirror --config mm2.properties [--clusters A ...]` and
`odradek mirror status --config mm2.properties [--json]`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from odradek.config.kafka_configs import InvalidConfigError, load_properties
from odradek.mirror.client_security import check_security
from odradek.mirror.config import MirrorConfig, MirrorConfigError, parse_mirror_config


def load_mirror_config(path: str, clusters: Sequence[str] | None) -> MirrorConfig:
    """The file's config, limited to `--clusters` (space- or comma-separated aliases)."""
    try:
        raw = load_properties(Path(path))
    except OSError as error:
        raise MirrorConfigError(f"{path}: {error.strerror or error}") from None
    only = None if clusters is None else [alias for item in clusters
                                          for alias in item.split(",") if alias]
    return parse_mirror_config(raw, only)


def _config_error(error: InvalidConfigError) -> int:
    print(f"odradek mirror: invalid configuration: {error}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from odradek.mirror.service import run_mirror

    try:
        config = load_mirror_config(args.config, args.clusters)
        check_security(config)
        run_mirror(config, args.event_loop == "uvloop")
    except InvalidConfigError as error:
        return _config_error(error)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from odradek.mirror.status import print_status

    try:
        config = load_mirror_config(args.config, args.clusters)
        check_security(config)
    except InvalidConfigError as error:
        return _config_error(error)
    return print_status(config, args.json)


def _common(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--config", required=required,
                        help="MirrorMaker 2's connect-mirror-maker.properties")
    parser.add_argument("--clusters", nargs="+", metavar="ALIAS",
                        help="only the flows whose target is one of these (MM2's "
                        "dedicated mode)")


def add_mirror_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("mirror", help="mirror topics between clusters with "
                                 "MirrorMaker 2's configuration (exactly-once by default)")
    _common(parser, required=False)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.set_defaults(run=_run_or_usage(parser))
    actions = parser.add_subparsers(dest="action")
    status = actions.add_parser("status", help="per flow: topics, partitions, owners, lag "
                                "and the last checkpoint")
    _common(status, required=True)
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(run=run_status)


def _run_or_usage(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def start(args: argparse.Namespace) -> int:
        if not args.config:
            parser.error("the following arguments are required: --config")
        return run(args)
    return start
