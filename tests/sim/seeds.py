"""Which seeds the simulation tests run: `ODRADEK_SIM_SEED=<n>` replays one seed,
`ODRADEK_SIM_SEEDS=<n>` runs seeds 0..n-1 per scenario (default 150)."""

from __future__ import annotations

import os

DEFAULT_SEEDS = 150


def seeds() -> list[int]:
    one = os.environ.get("ODRADEK_SIM_SEED")
    if one is not None:
        return [int(one)]
    return list(range(int(os.environ.get("ODRADEK_SIM_SEEDS", DEFAULT_SEEDS))))


def replay_command(seed: int, test_file: str, selector: str) -> str:
    return f"ODRADEK_SIM_SEED={seed} .venv/bin/pytest {test_file} -k '{selector}'"
