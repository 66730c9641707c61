"""`odradek audit` and `odradek compact-snapshot`: the Spark jobs run in-process (master
`local[*]` unless --master says otherwise), with the flags of their spark-submit entry
points. Only the flags are defined without PySpark; running needs `odradek[spark]`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from odradek.spark import audit, compaction

MISSING = "odradek: PySpark is not installed: pip install 'odradek[spark]'"


def add_spark_parsers(commands: Any) -> None:
    auditing = commands.add_parser("audit", help="audit the mirroring between two clusters "
                                   "(Spark job: counts and checksums per event-time bucket)")
    audit.add_arguments(auditing)
    auditing.set_defaults(run=lambda args: _run(audit.run, args))
    compacting = commands.add_parser("compact-snapshot", help="latest value per key of "
                                     "topics at a consistent cut, as Parquet (Spark job)")
    compaction.add_arguments(compacting)
    compacting.set_defaults(run=lambda args: _run(compaction.run, args))


def _run(job: Any, args: argparse.Namespace) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print(MISSING, file=sys.stderr)
        return 2
    result: int = job(args)
    return result
