"""The flags both jobs take for their Spark session, as spark-submit spells them: `--master`
and `--conf KEY=VALUE` (repeatable). Importable without PySpark."""

from __future__ import annotations

import argparse


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument("--conf", action="append", type=conf_pair, default=[],
                        metavar="KEY=VALUE", help="a Spark config, as spark-submit's --conf "
                        "(repeatable), e.g. spark.executor.memory=512m")


def conf_pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value

