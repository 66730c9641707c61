"""Reading Kafka's config catalogue (`kafka_catalogue.py`, generated from Kafka's own classes):
its validators, update modes and synonyms, and Java's rendering of doubles, as Kafka's
DescribeConfigs and dynamic-config validation use them."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

from odradek.config import kafka_catalogue as kafka

RangeCheck = Callable[[object], "str | None"]

_RANGE = re.compile(r"\[(?P<low>[-0-9.E]+)?,\.\.\.(?:,(?P<high>[-0-9.E]+))?\]")
_CHOICES = re.compile(r"\[(?P<items>[^\[\]]*)\]")

CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"})
"""Listener configs that may be set at the cluster default (DynamicBrokerConfig's
CLUSTER_LEVEL_LISTENER_CONFIGS); every other listener-prefixed config is per broker."""
LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.callback.handler.class",
                              "sasl.login.class", "sasl.server.callback.handler.class",
                              "connections.max.reauth.ms")
"""Configs a listener sets per SASL mechanism: listener.name.<l>.<mechanism>.<config>."""
_LISTENER = re.compile(r"listener\.name\.[^.]*\.(?P<base>.*)")


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".E") else int(text)


def kafka_validator(text: str | None) -> RangeCheck | None:
    """A check for the validators whose description is plain: ConfigDef.Range (`[1,...]`,
    `[0,...,1]`) and ValidString/ValidList (`[compact, delete]`); None for the others."""
    if not text:
        return None
    bounds = _RANGE.fullmatch(text)
    if bounds:
        low_text, high_text = bounds["low"], bounds["high"]
        low = _number(low_text) if low_text else None
        high = _number(high_text) if high_text else None

        def in_range(value: object) -> str | None:
            assert isinstance(value, int | float)
            if low is not None and value < low:
                return f"Value must be at least {low_text}"
            if high is not None and value > high:
                return f"Value must be no more than {high_text}"
            return None

        return in_range
    match = _CHOICES.fullmatch(text)
    if match and "..." not in text:
        choices = [item.strip() for item in match["items"].split(",")]

        def one_of(value: object) -> str | None:
            items = value if isinstance(value, list) else [value]
            bad = [item for item in items if item not in choices]
            return f"String must be one of: {', '.join(choices)}" if bad else None

        return one_of
    return None


def listener_base(name: str) -> str | None:
    """The config a `listener.name.<listener>.[<mechanism>.]<config>` key overrides."""
    match = _LISTENER.fullmatch(name)
    if match is None:
        return None
    base = match["base"]
    return next((config for config in LISTENER_MECHANISM_CONFIGS if base.endswith(config)), base)


def broker_synonyms(name: str) -> tuple[str, ...]:
    """DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true): the names
    DescribeConfigs looks a broker config up under, highest precedence first."""
    base = listener_base(name)
    if base is not None:
        return (name, base)
    return kafka.BROKER_SYNONYMS.get(name, (name,))


def update_mode(name: str) -> str:
    """read-only, per-broker or cluster-wide, as Kafka's dynamicConfigUpdateModes says."""
    entry = kafka.BROKER.get(name) or kafka.BROKER_DYNAMIC_ONLY.get(name)
    return entry[4] if entry else "read-only"


def java_double(value: float) -> str:
    """Java's Double.toString: `0.5`, `10.0`, `1.0E7`, `1.7976931348623157E308`."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else f"{text}.0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    scale = exponent + len(digits) - 1
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{scale}"
