"""Where a node's start-up goes before it serves: the imports, split into the interpreter,
the standard library and third-party modules a node needs, Odradek's own modules, and the
time spent building Odradek's dataclasses, by package. Each run is a fresh interpreter with
the garbage collector off, as `odradek` imports its modules (odradek/cli/__main__.py).

Usage: `python bench/startup_imports.py [--runs 8]` with the Python of the install to
measure (an install without the test extras is the first command's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

FLOOR = ("asyncio", "uvloop", "ssl", "argparse", "logging", "dataclasses", "grpc", "grpc.aio",
         "prometheus_client", "google.protobuf.descriptor_pool", "kio.schema.errors",
         "crc32c")
"""What a node imports that is not Odradek's."""
NODE = ("odradek.cli.main", "odradek.broker.app", "odradek.controller.app")
"""What `odradek dev` imports before it starts."""

PROBE = """
import collections, dataclasses, gc, importlib, json, sys, time
gc.disable()
started = time.perf_counter()
for name in sys.argv[1].split(","):
    importlib.import_module(name)
floor = time.perf_counter()
build = dataclasses._process_class
spent = collections.Counter()
def timed(cls, *args, **kwargs):
    begun = time.perf_counter()
    try:
        return build(cls, *args, **kwargs)
    finally:
        spent[".".join(cls.__module__.split(".")[:2])] += time.perf_counter() - begun
dataclasses._process_class = timed
for name in sys.argv[2].split(","):
    importlib.import_module(name)
done = time.perf_counter()
print(json.dumps({"floor": floor - started, "odradek": done - floor,
                  "dataclasses": sum(spent.values()), "classes": dict(spent)}))
"""


@dataclass(frozen=True)
class Run:
    floor_s: float
    odradek_s: float
    dataclasses_s: float
    by_package: dict[str, float]


def run_once(python: str) -> Run:
    out = subprocess.run([python, "-c", PROBE, ",".join(FLOOR), ",".join(NODE)],
                         capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout)
    return Run(figures["floor"], figures["odradek"], figures["dataclasses"], figures["classes"])


def interpreter_s(python: str) -> float:
    """The best of five starts and exits of a bare interpreter, as a parent sees them."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return min(times)


def ms(values: list[float]) -> str:
    return (f"median {1000 * statistics.median(values):.0f} ms "
            f"({1000 * min(values):.0f}-{1000 * max(values):.0f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    runs = [run_once(args.python) for _ in range(args.runs)]
    print(f"interpreter start and exit: best of 5 {1000 * interpreter_s(args.python):.0f} ms")
    print(f"standard library and third-party modules: {ms([r.floor_s for r in runs])}")
    print(f"Odradek's modules after them: {ms([r.odradek_s for r in runs])}")
    print(f"  of which building dataclasses: {ms([r.dataclasses_s for r in runs])}")
    packages: dict[str, list[float]] = {}
    for run in runs:
        for package, seconds in run.by_package.items():
            packages.setdefault(package, []).append(seconds)
    for package, values in sorted(packages.items(), key=lambda p: -statistics.median(p[1])):
        print(f"    {package:24} {1000 * statistics.median(values):5.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
