"""`python -m tests.integration.paused_cleaner POINT ODRADEK-ARGS...`: `odradek dev` or
`odradek broker` whose log cleaner stops for good at POINT (`staged` or `committed`) of the
first segment swap that reaches it, for crash tests: it touches `cleaner-paused-POINT` in the
partition dir and holds the event loop, so that the test can kill -9 the broker there with
nothing else moving. A test-only entry point: the production command line has no such hook."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import cast, get_args

from odradek.cli import main as cli
from odradek.log.segment_swap import SwapHook, SwapPoint


def launcher(point: SwapPoint) -> list[str]:
    """The command (BrokerProcess.launcher) that starts `odradek` paused at `point`."""
    return [sys.executable, "-m", "tests.integration.paused_cleaner", point]


def pause_cleaning_at(point: SwapPoint) -> SwapHook:
    """At `point` of a swap, mark the partition dir and hold the event loop for good."""

    def pause(directory: Path, reached: SwapPoint) -> None:
        if reached == point:
            (directory / f"cleaner-paused-{point}").touch()
            threading.Event().wait()

    return pause


def main(argv: Sequence[str]) -> int:
    point, *odradek_args = argv
    if point not in get_args(SwapPoint):
        raise SystemExit(f"POINT is one of {get_args(SwapPoint)}, not {point!r}")
    return cli.main(odradek_args, at_swap_point=pause_cleaning_at(cast(SwapPoint, point)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
