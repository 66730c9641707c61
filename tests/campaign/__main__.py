"""`python -m tests.campaign [--seed N] [--duration S] [--faults N] [--out DIR]` (as root):
one fault campaign; prints the report's figures, exits 1 if any anomaly was found."""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
from pathlib import Path

from tests.campaign.run import run_campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.campaign", description=__doc__)
    parser.add_argument("--seed", type=int, default=None, help="random if not given")
    parser.add_argument("--duration", type=float, default=300.0,
                        help="seconds of faults at least (default 300)")
    parser.add_argument("--faults", type=int, default=50, help="faults at least (default 50)")
    parser.add_argument("--out", type=Path, default=None,
                        help="report directory (default a new temporary one)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    out = args.out or Path(tempfile.mkdtemp(prefix=f"campaign-{seed}-"))
    result = run_campaign(seed, args.duration, args.faults, out)
    summary = {key: result.report[key] for key in (
        "seed", "command", "duration_s", "faults", "operations", "records_checked",
        "anomaly_counts", "final_read_incomplete", "client_crashes")}
    print(json.dumps(summary, indent=1))
    print(f"report: {out / 'report.json'}, timeline: {out / 'timeline.png'}")
    return 1 if any(result.anomalies.values()) else 0


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())  # not sys.exit: a librdkafka client left closing must not hold the exit
