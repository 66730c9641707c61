"""A partition log's config for tests: Kafka's topic defaults, with overrides."""

from __future__ import annotations

from odradek.config.kafka_configs import BrokerConfig, effective_topic_config
from odradek.log import LogConfig

DEFAULTS: dict[str, object] = dict(effective_topic_config(BrokerConfig({}), {}))


def make_config(**overrides: object) -> LogConfig:
    """Kafka's defaults; overrides use Kafka's names with '_' for '.'."""
    values = dict(DEFAULTS)
    values.update({name.replace("_", "."): value for name, value in overrides.items()})
    return LogConfig.from_topic_config(values)
