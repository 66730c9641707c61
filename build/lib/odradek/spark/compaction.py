"""The compaction snapshot (`spark/jobs/compact.py`, `odradek compact-snapshot`): the latest
value of every key of a set of topics at a consistent cut (the end offsets when the job
starts), as Parquet partitioned by topic, with the cut beside it in DIR/cut.json. As the
broker's cleaner does, it keeps one record per key within a partition, and a tombstone (null
value) removes the key; records without a key are left out.

`--verify` then reads, with a plain consumer, the topic itself (run it after the broker's
cleaner has run: the compacted log must give the same latest values) and, with
`--mirror-bootstrap`, the mirrored copy on the other cluster, and reports every key whose
latest value differs from the snapshot. Keys written again after the cut are not compared."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.spark.audit import add_naming_arguments
from odradek.spark.audit_rules import target_topic
from odradek.spark.cut import Cut, client_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from rich.console import Console

Key = tuple[str, int, bytes]
"""(topic, partition, key): compaction is per partition."""


@dataclass(frozen=True)
class Difference:
    where: str
    """`compacted` (the topic read by a consumer) or `mirror` (the mirrored copy)."""
    topic: str
    partition: int
    key: str
    snapshot: str | None
    found: str | None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT,...")
    parser.add_argument("--topics", required=True, metavar="REGEX",
                        help="topics whose whole name matches")
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--verify", action="store_true",
                        help="compare the snapshot with the compacted topic (and the mirror)")
    parser.add_argument("--mirror-bootstrap", metavar="HOST:PORT,...",
                        help="with --verify: the cluster holding the mirrored copy")
    parser.add_argument("--command-config", type=Path, metavar="FILE",
                        help="client properties (TLS, SASL) for --bootstrap's cluster")
    parser.add_argument("--mirror-command-config", type=Path, metavar="FILE",
                        help="client properties (TLS, SASL) for --mirror-bootstrap's cluster")
    add_naming_arguments(parser, alias_required=False)
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compact", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    try:
        re.compile(args.topics)
        if args.mirror_bootstrap and args.replication_policy == "default" \
                and not args.source_alias:
            raise ValueError("--mirror-bootstrap with the default policy needs --source-alias")
        client = client_config(args.command_config, args.bootstrap)
        mirror_client = client_config(args.mirror_command_config, args.mirror_bootstrap or "")
    except (ValueError, re.error) as error:
        print(f"compact: {error}", file=sys.stderr)
        return 2
    from odradek.spark.cut import matching_topics, take_cut
    from odradek.spark.session import spark_session

    output = Path(args.output)
    topics = matching_topics(args.bootstrap, args.topics, client)
    cut = take_cut(args.bootstrap, topics, client)
    spark = spark or spark_session("odradek-compact-snapshot", args.master)
    stats = snapshot(spark, args.bootstrap, cut, output, client)
    _print_stats(stats, output)
    if not args.verify:
        return 0
    live = {(r["topic"], r["partition"], bytes(r["key"])): bytes(r["value"])
            for r in spark.read.parquet(str(output / "snapshot")).toLocalIterator()} \
        if stats else {}
    own, rewritten = latest_values(args.bootstrap, cut, {t: t for t in cut}, client)
    found = compare("compacted", live, own, rewritten)
    if args.mirror_bootstrap:
        names = {t: target_topic(t, args.source_alias or "", args.replication_policy,
                                 args.separator) for t in cut}
        mirrored_cut = take_cut(args.mirror_bootstrap, list(names.values()), mirror_client)
        back = {target: source for source, target in names.items()}
        mirrored, _ = latest_values(args.mirror_bootstrap, mirrored_cut, back, mirror_client)
        found += compare("mirror", live, mirrored, rewritten)
    report = {"differences": [asdict(d) for d in found], "rewritten_after_cut": len(rewritten)}
    (output / "verify.json").write_text(json.dumps(report, indent=2) + "\n")
    _print_differences(found, len(rewritten))
    return 1 if found else 0


def snapshot(spark: SparkSession, bootstrap: str, cut: Cut, output: Path,
             client: Mapping[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Writes the snapshot and the cut; per topic: records read, live and deleted keys."""
    from pyspark.sql import functions as F

    from odradek.spark.cut import read_to_cut

    output.mkdir(parents=True, exist_ok=True)
    (output / "cut.json").write_text(json.dumps(
        {"bootstrap": bootstrap, "taken_at_ms": int(time.time() * 1000), "offsets": cut},
        indent=2) + "\n")
    if not cut:
        return {}
    fields = ("value", "offset", "timestamp", "timestampType", "headers")
    latest = (read_to_cut(spark, bootstrap, cut, client).where(F.col("key").isNotNull())
              .groupBy("topic", "partition", "key")
              .agg(F.max_by(F.struct(*fields), "offset").alias("latest"),
                   F.count(F.lit(1)).alias("records"))
              .cache())
    try:
        (latest.where(F.col("latest.value").isNotNull())
         .select("topic", "partition", "key", *(F.col(f"latest.{f}").alias(f) for f in fields))
         .write.mode("overwrite").partitionBy("topic").parquet(str(output / "snapshot")))
        rows = (latest.groupBy("topic")
                .agg(F.sum("records").alias("records"),
                     F.count_if(F.col("latest.value").isNotNull()).alias("live"),
                     F.count_if(F.col("latest.value").isNull()).alias("deleted"))
                .collect())
    finally:
        latest.unpersist()
    return {r["topic"]: {"records": r["records"], "live": r["live"], "deleted": r["deleted"]}
            for r in rows}


def latest_values(bootstrap: str, cut: Cut, source_name: dict[str, str],
                  client: Mapping[str, str] | None = None
                  ) -> tuple[dict[Key, bytes], set[Key]]:
    """What a consumer reading the topics from their start finds: the latest value of each
    key before the cut (absent once a tombstone is latest), and the keys written at or after
    the cut. Keys are named by the source topic."""
    from odradek.spark.cut import COMMITTED
    from odradek.spark.kafka_client import ClusterLookup, read_range
    from odradek.spark.offset_ranges import OffsetRange
    from odradek.spark.source_options import Subscribe

    lookup = ClusterLookup({"bootstrap.servers": bootstrap, **(client or {}),
                            "isolation.level": COMMITTED})
    partitions = lookup.partitions(Subscribe(tuple(cut)))
    starts, ends = lookup.earliest(partitions), lookup.latest(partitions)
    latest: dict[Key, bytes | None] = {}
    rewritten: set[Key] = set()
    config = {"bootstrap.servers": bootstrap, "group.id": "odradek-compact-verify",
              "enable.partition.eof": True, "enable.auto.commit": False,
              **(client or {}), "isolation.level": COMMITTED}
    for topic, partition in partitions:
        before = cut.get(topic, {}).get(str(partition), 0)
        offset_range = OffsetRange(topic, partition, starts[(topic, partition)],
                                   ends[(topic, partition)])
        for chunk in read_range(config, offset_range):
            for message in chunk:
                raw_key = message.key()
                if raw_key is None:
                    continue
                key = (source_name[topic], partition, raw_key)
                offset = message.offset()
                assert offset is not None
                if offset >= before:
                    rewritten.add(key)
                else:
                    latest[key] = message.value()
    return {k: v for k, v in latest.items() if v is not None}, rewritten


def compare(where: str, snapshot_values: dict[Key, bytes], other: dict[Key, bytes],
            skipped: Iterable[Key]) -> list[Difference]:
    """Every key whose latest value differs (absent on one side included)."""
    skip = set(skipped)
    differing = sorted(k for k in set(snapshot_values) | set(other)
                       if k not in skip and snapshot_values.get(k) != other.get(k))
    return [Difference(where, k[0], k[1], _text(k[2]) or "", _text(snapshot_values.get(k)),
                       _text(other.get(k))) for k in differing]


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "backslashreplace")


def _print_stats(stats: dict[str, dict[str, int]], output: Path) -> None:
    from rich.table import Table

    table = Table(title="compaction snapshot")
    for column in ("topic", "records read", "live keys", "deleted keys"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for topic, row in sorted(stats.items()):
        table.add_row(topic, str(row["records"]), str(row["live"]), str(row["deleted"]))
    console = _console()
    console.print(table)
    console.print(f"snapshot in {output / 'snapshot'}, cut in {output / 'cut.json'}")


def _print_differences(found: list[Difference], rewritten: int) -> None:
    from rich.table import Table

    console = _console()
    if found:
        table = Table(title="keys whose latest value differs from the snapshot")
        for column in ("where", "topic", "partition", "key", "snapshot", "found"):
            table.add_column(column)
        for d in found:
            table.add_row(d.where, d.topic, str(d.partition), d.key, str(d.snapshot),
                          str(d.found))
        console.print(table)
    verdict = f"{len(found)} differing keys" if found else "verified: no key differs"
    console.print(f"{verdict} ({rewritten} keys written again after the cut not compared)")


def _console() -> Console:
    """Rich's console; off a terminal (logs, CI) wide enough for the whole table."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=140)
