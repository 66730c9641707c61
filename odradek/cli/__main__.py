"""The `odradek` command's process: `python -m odradek.cli` and the console script."""

from __future__ import annotations

import gc
import sys
from typing import NoReturn


def run() -> NoReturn:
    """Runs the command in this process, without Hypothesis. kio registers Hypothesis
    strategies when it is imported and Hypothesis is installed (a test environment), which
    made every start 0.4-2 s slower for nothing a command uses. The garbage collector is off
    while the command's modules import (nothing they build is garbage); `main` turns it back
    on (odradek/cli/main.py, `_imports_done`)."""
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    gc.disable()
    from odradek.cli.main import main

    sys.exit(main())


if __name__ == "__main__":
    run()
