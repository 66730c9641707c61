"""`odradek configs`' pure parts: the entity kafka-configs' flags select, the configs to add
and delete, and the described configs' text."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from odradek.cli import build_parser
from odradek.tools.common import ToolError
from odradek.tools.config_entities import (
    Entity,
    completed,
    entity_from_args,
    entry_json,
    entry_line,
    header,
    parse_add_config,
    parse_delete_config,
)


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["configs", *argv])


@pytest.mark.parametrize(("argv", "expected"), [
    (["describe", "--entity-type", "topics", "--entity-name", "t"], Entity("topics", "t")),
    (["describe", "--topic", "t"], Entity("topics", "t")),
    (["describe", "--entity-type", "topics"], Entity("topics", None)),
    (["describe", "--broker", "2"], Entity("brokers", "2")),
    (["describe", "--entity-type", "brokers", "--entity-name", "2"], Entity("brokers", "2")),
    (["describe", "--broker-defaults"], Entity("brokers", "")),
    (["describe", "--entity-type", "brokers", "--entity-default"], Entity("brokers", "")),
    (["describe", "--group", "g"], Entity("groups", "g")),
])
def test_entities_from_generic_and_shortcut_flags(argv: list[str], expected: Entity) -> None:
    assert entity_from_args(args(*argv), altering=False) == expected


@pytest.mark.parametrize(("argv", "message"), [
    (["describe"], "At least one entity type"),
    (["describe", "--entity-type", "topics", "--topic", "t"], "should not be used in conj"),
    (["describe", "--topic", "t", "--broker", "1"], "only one entity"),
    (["describe", "--entity-type", "users"], "users is not supported yet.*client quotas"),
    (["describe", "--entity-type", "clients", "--entity-name", "c"], "clients is not supp"),
    (["describe", "--entity-type", "topics", "--entity-default"], "--entity-default must not"),
    (["describe", "--broker", "one"], "must be a valid integer broker id, but it is: one"),
    (["alter", "--entity-type", "topics", "--add-config", "a=1"], "An entity name must be"),
    (["alter", "--entity-type", "brokers", "--add-config", "a=1"], "or --entity-default"),
])
def test_entity_flags_kafka_configs_refuses(argv: list[str], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        entity_from_args(args(*argv), altering=argv[0] == "alter")


def test_add_config_groups_commas_in_brackets() -> None:
    assert parse_add_config("retention.ms=1000, cleanup.policy=[compact,delete]") == {
        "retention.ms": "1000", "cleanup.policy": "compact,delete"}


@pytest.mark.parametrize(("text", "message"), [
    ("retention.ms", "expected key=value"),
    ("a b=1", "Invalid character found for config key: a b"),
])
def test_bad_add_config_is_refused(text: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_add_config(text)


def test_delete_config_splits_commas_across_repeats() -> None:
    assert parse_delete_config(["a, b", "c"]) == ["a", "b", "c"]


def test_headers_and_completion_lines_as_kafka_configs_prints_them() -> None:
    assert header(Entity("topics", "t"), describe_all=False) == "Dynamic configs for topic t are:"
    assert header(Entity("brokers", "1"), describe_all=True) == "All configs for broker 1 are:"
    assert header(Entity("brokers", ""), describe_all=False) == (
        "Default configs for brokers in the cluster are:")
    assert completed(Entity("groups", "g")) == "Completed updating config for group g."
    assert completed(Entity("brokers", "")) == (
        "Completed updating default config for brokers in the cluster.")


def test_an_entry_lists_its_synonyms_with_their_sources() -> None:
    entry = SimpleNamespace(
        name="log.cleaner.threads", value="3", is_sensitive=False, read_only=False,
        config_source=2, synonyms=[
            SimpleNamespace(name="log.cleaner.threads", value="3", source=2),
            SimpleNamespace(name="log.cleaner.threads", value="2", source=3),
            SimpleNamespace(name="log.cleaner.threads", value="1", source=5)])
    assert entry_line(entry) == (
        "  log.cleaner.threads=3 sensitive=false synonyms={"
        "DYNAMIC_BROKER_CONFIG:log.cleaner.threads=3, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, "
        "DEFAULT_CONFIG:log.cleaner.threads=1}")
    assert entry_json(entry)["source"] == "DYNAMIC_BROKER_CONFIG"
    assert [s["source"] for s in entry_json(entry)["synonyms"]] == [
        "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG"]


def test_a_sensitive_value_prints_as_null() -> None:
    entry = SimpleNamespace(name="ssl.key.password", value=None, is_sensitive=True,
                            read_only=False, config_source=4,
                            synonyms=[SimpleNamespace(name="ssl.key.password", value=None,
                                                      source=4)])
    assert entry_line(entry) == ("  ssl.key.password=null sensitive=true "
                                 "synonyms={STATIC_BROKER_CONFIG:ssl.key.password=null}")
