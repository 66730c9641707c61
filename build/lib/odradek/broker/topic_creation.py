"""Creating a topic through the controller: CreateTopics, Metadata's auto-creation and the
coordinators' internal topics all go this way."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.broker.broker import Broker
from odradek.broker.metadata_writer import MetadataWriter
from odradek.metadata.image import validate_topic_name

DEFAULT = -1
"""CreateTopics' "the broker's default" for partitions and replication factor."""


def or_default(broker: Broker, value: int, config_name: str) -> int:
    """CreateTopics' -1 means the broker's default."""
    return broker.config.integer(config_name) if value == DEFAULT else value


async def create_topic(
    broker: Broker,
    writer: MetadataWriter,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: Mapping[str, str | None],
    assignments: Mapping[int, list[int]] | None = None,
    validate_only: bool = False,
    internal: bool = False,
) -> str:
    """Have the controller validate and (unless validate_only) create a topic; returns its
    id. Raises MetadataError."""
    validate_topic_name(name, internal)
    return await writer.create_topic(
        name,
        or_default(broker, num_partitions, "num.partitions"),
        or_default(broker, replication_factor, "default.replication.factor"),
        configs,
        assignments,
        validate_only,
        internal,
    )
