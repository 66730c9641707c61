"""The `odradek` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from odradek.config import BrokerConfig, InvalidConfigError, load_properties


def _override(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def dev_config(args: argparse.Namespace) -> BrokerConfig:
    """File, then --data-dir/--port, then --override: later sources win."""
    raw: dict[str, str] = {}
    if args.config:
        raw.update(load_properties(Path(args.config)))
    if args.data_dir:
        raw["log.dir"] = args.data_dir
        raw.pop("log.dirs", None)
    if args.port is not None:
        raw["listeners"] = f"PLAINTEXT://{args.host}:{args.port}"
    raw.update(dict(args.override))
    return BrokerConfig(raw)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="odradek", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    dev = commands.add_parser("dev", help="run a single-node cluster (controller + broker)")
    dev.add_argument("--data-dir", help="log directory (log.dir); default ./data")
    dev.add_argument("--port", type=int, help="Kafka listener port; default 9092")
    dev.add_argument("--host", default="127.0.0.1", help="listener address with --port")
    dev.add_argument("--config", help="a Kafka-style .properties file")
    dev.add_argument("--override", action="append", type=_override, default=[],
                     metavar="KEY=VALUE", help="set a broker config (repeatable)")
    dev.add_argument("--log-level", default="INFO")
    dev.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                     help="uvloop (default; falls back to asyncio when missing) or asyncio")
    from odradek.groups_cli.cli import add_groups_parser
    from odradek.perf import add_perf_parser

    add_perf_parser(commands)
    add_groups_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "dev":
        logging.basicConfig(
            level=args.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        try:
            config = dev_config(args)
        except (InvalidConfigError, OSError) as error:
            print(f"odradek: invalid configuration: {error}", file=sys.stderr)
            return 2
        from odradek.broker.app import run_broker

        run_broker(config, prefer_uvloop=args.event_loop == "uvloop")
        return 0
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
