"""The mirroring audit (`spark/jobs/mirror_audit.py`, `odradek audit`): for each source topic
the regex selects and each event-time bucket of [--from, --to), it counts the records, their
bytes and an order-independent checksum on the source and on the target (the topic's name
there following MM2's replication policy), classifies each bucket, and writes a Parquet table,
DIR/summary.json, and one record per bucket to a compacted audit topic on the target. A
topic whose cleanup.policy compacts it is also compared by the latest record of each key.
Exit 0 when every bucket outside the grace period is complete or compacted, else 1."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.spark.audit_contract import AUDIT_TOPIC, STATUSES
from odradek.spark.audit_rules import (
    Audit,
    audit,
    parse_duration,
    parse_time,
    target_topic,
)
from odradek.spark.cut import client_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from rich.console import Console

BUCKET_COLUMNS = ("topic STRING, target_topic STRING, bucket_start_ms LONG, bucket_end_ms LONG, "
                  "source_count LONG, target_count LONG, source_bytes LONG, target_bytes LONG, "
                  "source_checksum DECIMAL(20,0), target_checksum DECIMAL(20,0), "
                  "status STRING, in_grace BOOLEAN, source_keys LONG, target_keys LONG, "
                  "differing_keys LONG")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-bootstrap", required=True, metavar="HOST:PORT,...")
    parser.add_argument("--target-bootstrap", required=True, metavar="HOST:PORT,...")
    parser.add_argument("--source-command-config", type=Path, metavar="FILE",
                        help="client properties (TLS, SASL) for the source cluster")
    parser.add_argument("--target-command-config", type=Path, metavar="FILE",
                        help="client properties (TLS, SASL) for the target cluster")
    add_naming_arguments(parser, alias_required=True)
    parser.add_argument("--topics", default=".*", metavar="REGEX",
                        help="source topics whose whole name matches (default: all but "
                        "internal topics)")
    parser.add_argument("--from", dest="from_", metavar="TIME",
                        help="ISO-8601 time or epoch ms (default: --to minus --window)")
    parser.add_argument("--to", metavar="TIME", help="ISO-8601 time or epoch ms (default: now)")
    parser.add_argument("--window", default="1d", help="how far back from --to a run without "
                        "--from audits, e.g. 1h for an hourly schedule (default 1d)")
    parser.add_argument("--bucket", default="10m", help="event-time bucket width (default 10m)")
    parser.add_argument("--grace", default="5m", help="buckets ending less than this before "
                        "now are still in flight: reported, never failed (default 5m)")
    parser.add_argument("--output", required=True, metavar="DIR")
    parser.add_argument("--audit-topic", default=AUDIT_TOPIC,
                        help=f"compacted topic on the target for the results (default "
                        f"{AUDIT_TOPIC}; empty: none)")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")


def add_naming_arguments(parser: argparse.ArgumentParser, alias_required: bool) -> None:
    """How a source topic is named on the mirror's target, as MM2's replication policy."""
    parser.add_argument("--source-alias", required=alias_required,
                        help="the source cluster's alias in the mirror config (e.g. east)")
    parser.add_argument("--replication-policy", choices=("default", "identity"),
                        default="default", help="default: orders on east is east.orders on "
                        "the target; identity: the same name")
    parser.add_argument("--separator", default=".",
                        help="replication.policy.separator (default .)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mirror_audit", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    """The job; `spark` is the session to run in (default: a new or the active one)."""
    now_ms = int(time.time() * 1000)
    try:
        to_ms = parse_time(args.to) if args.to else now_ms
        from_ms = parse_time(args.from_) if args.from_ else to_ms - parse_duration(args.window)
        bucket_ms, grace_ms = parse_duration(args.bucket), parse_duration(args.grace)
        if bucket_ms <= 0 or from_ms >= to_ms:
            raise ValueError("--bucket must be positive and --from before --to")
        re.compile(args.topics)
        source_client = client_config(args.source_command_config, args.source_bootstrap)
        target_client = client_config(args.target_command_config, args.target_bootstrap)
    except (ValueError, re.error) as error:
        print(f"audit: {error}", file=sys.stderr)
        return 2
    from odradek.spark.audit_reads import Side, bucket_counts, key_counts
    from odradek.spark.cut import compacted_topics, matching_topics, take_cut
    from odradek.spark.session import spark_session

    topics = matching_topics(args.source_bootstrap, args.topics, source_client)
    names = {t: target_topic(t, args.source_alias, args.replication_policy, args.separator)
             for t in topics}
    compacted = compacted_topics(args.source_bootstrap, topics, source_client)
    source_cut = take_cut(args.source_bootstrap, topics, source_client)
    target_cut = take_cut(args.target_bootstrap, list(names.values()), target_client)
    spark = spark or spark_session("odradek-mirror-audit", args.master)
    source = Side(args.source_bootstrap, source_cut, source_client, {t: t for t in topics})
    target = Side(args.target_bootstrap, target_cut, target_client,
                  {name: topic for topic, name in names.items()})
    window = (from_ms, to_ms, bucket_ms)
    result = audit(
        bucket_counts(spark, source, window), bucket_counts(spark, target, window), names,
        bucket_ms=bucket_ms, grace_start_ms=now_ms - grace_ms, from_ms=from_ms,
        compacted=compacted, keys=key_counts(spark, source, target, compacted, window))
    result.settings = {
        "source_bootstrap": args.source_bootstrap, "target_bootstrap": args.target_bootstrap,
        "source_alias": args.source_alias, "replication_policy": args.replication_policy,
        "from_ms": from_ms, "to_ms": to_ms, "bucket_ms": bucket_ms, "grace_ms": grace_ms,
        "audited_at_ms": now_ms, "compacted_topics": compacted,
        "cut": {"source": source_cut, "target": target_cut}}
    _write(spark, result, Path(args.output))
    if args.audit_topic:
        _publish(args.target_bootstrap, args.audit_topic, result, target_client)
    _print_summary(result, Path(args.output))
    return 0 if result.complete else 1


def _write(spark: SparkSession, result: Audit, output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    rows = [tuple(Decimal(v) if k.endswith("checksum") else v for k, v in asdict(b).items())
            for b in result.buckets]
    (spark.createDataFrame(rows, BUCKET_COLUMNS).coalesce(1).write.mode("overwrite")
     .parquet(str(output / "buckets")))
    (output / "summary.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")


def _publish(bootstrap: str, topic: str, result: Audit, client: Mapping[str, str]) -> None:
    """One record per bucket, keyed by topic and bucket, to a compacted topic: the latest
    result of every bucket stays readable for dashboards and alerts."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from odradek.spark.kafka_client import RecordProducer

    admin = AdminClient({"bootstrap.servers": bootstrap, **client})
    if topic not in admin.list_topics(timeout=30).topics:
        futures = admin.create_topics([NewTopic(topic, 1, -1,
                                                config={"cleanup.policy": "compact"})])
        try:
            futures[topic].result(30)
        except Exception as error:  # created meanwhile by another audit: fine
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
    producer = RecordProducer({"bootstrap.servers": bootstrap, **client})
    for key, value in audit_records(result):
        producer.send(topic, key, value)
    producer.flush()


def audit_records(result: Audit) -> Iterator[tuple[bytes, bytes]]:
    """The audit topic's key and value of each bucket: JSON of the topic and bucket start,
    and of the bucket with the run's `audited_at_ms`."""
    for bucket in result.buckets:
        key = {"topic": bucket.topic, "bucket_start_ms": bucket.bucket_start_ms}
        value = {**asdict(bucket), "audited_at_ms": result.settings.get("audited_at_ms")}
        yield (json.dumps(key, sort_keys=True).encode(),
               json.dumps(value, sort_keys=True).encode())


def _print_summary(result: Audit, output: Path) -> None:
    from rich.table import Table

    table = Table(title="mirror audit")
    for column in ("topic", "buckets", *STATUSES, "in grace", "source records",
                   "target records"):
        table.add_column(column, justify="left" if column == "topic" else "right")
    for topic in sorted({b.topic for b in result.buckets}):
        mine = [b for b in result.buckets if b.topic == topic]
        table.add_row(topic, str(len(mine)),
                      *(str(sum(b.status == s for b in mine)) for s in STATUSES),
                      str(sum(b.in_grace for b in mine)),
                      str(sum(b.source_count for b in mine)),
                      str(sum(b.target_count for b in mine)))
    console = _console()
    console.print(table)
    for bucket in result.failed:
        console.print(f"{bucket.status}: {bucket.topic} bucket {bucket.bucket_start_ms} "
                      f"source {bucket.source_count} target {bucket.target_count}")
    lag = result.worst_lag
    if lag is not None:
        console.print(f"worst lag: {lag.topic}-{lag.partition} {lag.records} records, "
                      f"{lag.ms} ms")
    compacted = result.totals.get("compacted", 0)
    if compacted:
        console.print(f"compacted: {compacted} buckets hold different records on the two "
                      "clusters, as one side's cleaner removed values the other still holds; "
                      "the latest value of every key agrees")
    verdict = "complete" if result.complete else f"INCOMPLETE ({len(result.failed)} buckets)"
    console.print(f"{verdict}; summary in {output / 'summary.json'}")


def _console() -> Console:
    """Rich's console; off a terminal (logs, CI) wide enough for the whole table."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=140)
