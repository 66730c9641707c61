"""A consistent cut: the last stable offsets of a set of topics taken once, at the start of a
job, and a read_committed read of every record before them with the `odradek-kafka` source.
Everything a job reports is about the committed records before its cut, whatever arrives
while it runs: aborted records and transaction markers are never read, on either cluster."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odradek.cli.tools.common import ToolError, librdkafka_config, read_client_properties
from odradek.cli.tools.wire import check_login
from odradek.spark.audit_rules import compacts
from odradek.spark.kafka_client import ClusterLookup
from odradek.spark.source_options import Subscribe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

INTERNAL = re.compile(r"__.*|.*\.internal|mm2-.*|(.*\.)?heartbeats|(.*\.)?checkpoints\..*")
"""Kafka's and MirrorMaker 2's internal topics, which no regex of a job selects."""
LOGIN_TIMEOUT_S = 30.0
COMMITTED = "read_committed"

Cut = dict[str, dict[str, int]]
"""{topic: {partition: end offset}}, the JSON Spark's endingOffsets takes."""


def client_config(path: Path | None, bootstrap: str) -> dict[str, str]:
    """A `--command-config` file's client properties (TLS, SASL) in librdkafka's spelling
    (either spelling accepted, as the operator tools take it), after one login to
    `bootstrap` when they ask for TLS or SASL (`check_login`); none without a file. Raises
    ValueError naming what is wrong."""
    if path is None:
        return {}
    try:
        config = librdkafka_config(read_client_properties(path))
        check_login(config, bootstrap, LOGIN_TIMEOUT_S)
    except ToolError as error:
        raise ValueError(str(error)) from None
    return config


def matching_topics(bootstrap: str, pattern: str, client: Mapping[str, str] | None = None
                    ) -> list[str]:
    """The cluster's topics whose whole name matches `pattern`, internal ones left out."""
    lookup = ClusterLookup({"bootstrap.servers": bootstrap, **(client or {})})
    names = lookup.admin.list_topics(timeout=30).topics
    return sorted(t for t in names if re.fullmatch(pattern, t) and not INTERNAL.fullmatch(t))


def compacted_topics(bootstrap: str, topics: list[str],
                     client: Mapping[str, str] | None = None) -> list[str]:
    """Those of `topics` whose `cleanup.policy` has the cleaner compact them."""
    lookup = ClusterLookup({"bootstrap.servers": bootstrap, **(client or {})})
    policies = lookup.topic_config(topics, "cleanup.policy")
    return sorted(topic for topic, policy in policies.items() if compacts(policy))


def take_cut(bootstrap: str, topics: list[str], client: Mapping[str, str] | None = None
             ) -> Cut:
    """The last stable offsets of `topics` now (missing topics have none): no open
    transaction's records lie before them."""
    if not topics:
        return {}
    config = {"bootstrap.servers": bootstrap, **(client or {}), "isolation.level": COMMITTED}
    lookup = ClusterLookup(config)
    ends = lookup.latest(lookup.partitions(Subscribe(tuple(topics))))
    cut: Cut = {}
    for (topic, partition), offset in sorted(ends.items()):
        cut.setdefault(topic, {})[str(partition)] = offset
    return cut


def read_to_cut(spark: SparkSession, bootstrap: str, cut: Cut,
                client: Mapping[str, str] | None = None, **options: Any) -> DataFrame:
    """Every committed record before the cut, headers included."""
    reader = (spark.read.format("odradek-kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", ",".join(sorted(cut)))
              .option("endingOffsets", json.dumps(cut))
              .option("includeHeaders", "true"))
    for key, value in {**{f"kafka.{k}": v for k, v in (client or {}).items()},
                       **options}.items():
        reader = reader.option(key, str(value))
    return reader.option("kafka.isolation.level", COMMITTED).load()
