"""`python -m tests.librdkafka --source DIR`: runs librdkafka's regression tests against
Odradek in each configuration (see harness), one test at a time, and prints a summary table
and the counts; `--json` also writes every outcome. Exits 1 when a test failed or timed out.
Run through scripts/librdkafka_suite.sh, which downloads and builds librdkafka first."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.librdkafka.harness import (
    CONFIGURATIONS,
    Outcome,
    broker_tests,
    by_number,
    odradek_for_librdkafka,
    run_tests,
)

STATES = ("PASSED", "FAILED", "TIMEOUT", "SKIPPED", "NOT RUN")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.librdkafka", description=__doc__)
    parser.add_argument("--source", type=Path, required=True, help="the built librdkafka")
    parser.add_argument("--config", choices=[*CONFIGURATIONS, "both"], default="both")
    parser.add_argument("--tests", default="", help="comma-separated name prefixes (all)")
    parser.add_argument("--timeout", type=float, default=120.0, help="per test, seconds")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds per configuration; tests not started by then are "
                        "reported NOT RUN (0: no bound)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--logs", type=Path, help="write each test's output here")
    args = parser.parse_args()
    wanted = [p for p in args.tests.split(",") if p]
    names = [n for n in broker_tests(args.source)
             if not wanted or any(n.startswith(p) for p in wanted)]
    configurations = CONFIGURATIONS if args.config == "both" else (args.config,)
    results: dict[str, list[Outcome]] = {}
    for configuration in configurations:
        results[configuration] = run_configuration(args, configuration, names)
    print_summary(results)
    if args.json:
        args.json.write_text(json.dumps(
            {c: [{"name": o.name, "state": o.state, "reason": o.reason,
                  "seconds": round(o.seconds, 1)} for o in outcomes]
             for c, outcomes in results.items()}, indent=1))
    return int(any(o.state in ("FAILED", "TIMEOUT")
                   for outcomes in results.values() for o in outcomes))


def run_configuration(args: argparse.Namespace, configuration: str,
                      names: list[str]) -> list[Outcome]:
    outcomes = []
    with (tempfile.TemporaryDirectory(prefix=f"librdkafka-{configuration}-") as tmp,
          odradek_for_librdkafka(Path(tmp), configuration) as environment):
        deadline = time.monotonic() + args.budget if args.budget else float("inf")
        for number, group in by_number(names).items():
            if time.monotonic() >= deadline:
                outcomes += [Outcome(n, "NOT RUN", "over the run's time budget", 0)
                             for n in group]
                continue
            ran = run_tests(args.source, group, environment, args.timeout)
            outcomes += ran
            for o in ran:
                print(f"{configuration:9} {o.name:45} {o.state:8} {o.seconds:6.1f}s "
                      f"{o.reason[:100]}", flush=True)
            if args.logs:
                args.logs.mkdir(parents=True, exist_ok=True)
                (args.logs / f"{configuration}-{number}.log").write_text(ran[0].output)
    return outcomes


def print_summary(results: dict[str, list[Outcome]]) -> None:
    print(f"\n{'configuration':14}" + "".join(f"{s:>9}" for s in STATES))
    for configuration, outcomes in results.items():
        counts = Counter(o.state for o in outcomes)
        print(f"{configuration:14}" + "".join(f"{counts[s]:>9}" for s in STATES))
    for configuration, outcomes in results.items():
        for o in outcomes:
            if o.state in ("FAILED", "TIMEOUT"):
                print(f"{configuration:9} {o.state:8} {o.name}: {o.reason[:160]}")


if __name__ == "__main__":
    sys.exit(main())
