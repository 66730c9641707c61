"""Pairs to ratios: each figure as A/B, the median of the per-pair ratios with their min and
max, and the busy-machine warning."""

from __future__ import annotations

import os
import statistics
from dataclasses import asdict, dataclass

from bench.sidebyside.runner import Run
from bench.sidebyside.scenarios import HIGHER, LOWER, Figure, Scenario

BROKER_FIGURES = (Figure("cpu_us_per_msg", "broker CPU us/msg", LOWER),
                  Figure("peak_rss_mb", "broker peak RSS MB", LOWER),
                  Figure("startup_s", "broker start s", LOWER),
                  Figure("stop_s", "broker clean stop s", LOWER))
BUSY_CORES = 0.25
"""Other processes using more than this during a run make the machine busy."""


@dataclass
class Ratio:
    scenario: str
    figure: str
    better: str
    a: float | None
    b: float | None
    median: float | None
    low: float | None
    high: float | None
    pairs: int


def ratios(scenario: Scenario, runs: list[Run], a: str, b: str) -> list[Ratio]:
    """Each figure of `scenario`: the medians of A and B, and A/B over the pairs in which
    both runs passed."""
    mine = [r for r in runs if r.scenario == scenario.name]
    by_pair = {(r.system, r.pair): r for r in mine}
    out = []
    for figure in (*scenario.figures, *BROKER_FIGURES):
        values = {side: [r.figures[figure.key] for r in mine
                         if r.system == side and r.ok and figure.key in r.figures]
                  for side in (a, b)}
        per_pair = []
        for pair in sorted({r.pair for r in mine}):
            run_a, run_b = by_pair.get((a, pair)), by_pair.get((b, pair))
            if run_a and run_b and run_a.ok and run_b.ok and \
                    run_b.figures.get(figure.key) and figure.key in run_a.figures:
                per_pair.append(run_a.figures[figure.key] / run_b.figures[figure.key])
        out.append(Ratio(scenario.name, figure.label, figure.better,
                         _median(values[a]), _median(values[b]), _median(per_pair),
                         min(per_pair, default=None), max(per_pair, default=None),
                         len(per_pair)))
    return out


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def busy_warning(runs: list[Run]) -> str | None:
    """Why the figures are unreliable, when the machine was busy during the runs."""
    others = [r.other_cores for r in runs if r.other_cores is not None]
    loads = [r.loadavg for r in runs if r.loadavg is not None]
    cpus = os.cpu_count() or 1
    reasons = []
    if others and statistics.median(others) > BUSY_CORES:
        reasons.append(f"other processes used a median {statistics.median(others):.2f} cores "
                       "during the workloads")
    if loads and max(loads) > cpus:
        reasons.append(f"the load average reached {max(loads):.1f} on {cpus} CPUs")
    if not reasons:
        return None
    return "WARNING: the machine was busy (" + "; ".join(reasons) + "): rerun on a quiet one"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    for limit, text in ((1000, f"{value:,.0f}"), (100, f"{value:.0f}"), (10, f"{value:.1f}"),
                        (1, f"{value:.2f}")):
        if abs(value) >= limit:
            return text
    return f"{value:.3f}"


def table(scenario: Scenario, rows: list[Ratio], a: str, b: str) -> str:
    width = max(10, len(a), len(b))
    lines = [f"{scenario.name}: {scenario.title}",
             f"  {'figure':<22}{'better':>7} {a:>{width}} {b:>{width}}   "
             f"{'A/B (min-max)':<24}pairs"]
    for row in rows:
        ratio = "-" if row.median is None else \
            f"{row.median:.2f} ({row.low:.2f}-{row.high:.2f})"
        lines.append(f"  {row.figure:<22}{row.better:>7} {_number(row.a):>{width}} "
                     f"{_number(row.b):>{width}}   {ratio:<24}{row.pairs}")
    return "\n".join(lines)


def as_json(rows: list[Ratio], runs: list[Run]) -> dict[str, object]:
    return {"ratios": [asdict(r) for r in rows], "runs": [asdict(r) for r in runs]}


LEGEND = (f"A/B > 1: A is higher, better for '{HIGHER}' figures and worse for '{LOWER}' ones. "
          "CPU is the broker's (its process tree) during the workload, per record.")
