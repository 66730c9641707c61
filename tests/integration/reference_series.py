"""The reference list of kafka_* series (reference_kafka_series.txt): Strimzi's dashboards'
and rules' series, each with the labels their queries use, by section."""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path(__file__).with_name("reference_kafka_series.txt")
EXPORTER_PREFIXES = ("kafka_broker_info", "kafka_brokers", "kafka_topic_partition",
                     "kafka_consumergroup_")
"""Kafka Exporter's series (kafka_topic_partitions included), which one process exports."""


def reference_series(section: str, path: Path = REFERENCE) -> dict[str, frozenset[str]]:
    """Series name to the label names queries use, of one `[section]` of the list."""
    series: dict[str, frozenset[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif current == section:
            name, *labels = line.split()
            series[name] = frozenset(labels)
    if not series:
        raise ValueError(f"no section [{section}] in {path}")
    return series


def is_exporter_series(name: str) -> bool:
    return name.startswith(EXPORTER_PREFIXES)
