"""`odradek configs`' pure parts: the entity kafka-configs' flags select, the configs to add
and delete, and the described configs' text."""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pytest

from odradek.cli.main import build_parser
from odradek.cli.tools.common import ToolError
from odradek.cli.tools.config_entities import (
    Entity,
    completed,
    entity_from_args,
    entry_json,
    entry_line,
    header,
    parse_add_config,
    parse_delete_config,
)
from odradek.cli.tools.quota_entities import (
    QuotaEntity,
    completed_line,
    describe_lines,
    quota_changes,
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
    (["describe", "--entity-type", "ips"], "ips is not supported yet.*connection quotas"),
    (["describe", "--entity-type", "users", "--entity-type", "topics"], "Only 'users' and "),
    (["describe", "--entity-type", "users", "--entity-type", "users"], "Duplicate entity"),
    (["describe", "--entity-type", "users", "--entity-name", "a", "--entity-name", "b"],
     "More entity names"),
    (["alter", "--entity-type", "users", "--entity-type", "clients", "--entity-name", "a",
      "--add-config", "a=1"], "must be specified with each --entity-type"),
    (["describe", "--user", "a", "--entity-type", "clients"], "should not be used in conj"),
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


@pytest.mark.parametrize(("argv", "parts"), [
    (["--entity-type", "users", "--entity-name", "alice"], (("users", "alice"),)),
    (["--entity-type", "clients", "--entity-default"], (("clients", ""),)),
    (["--entity-type", "clients"], (("clients", None),)),
    (["--entity-type", "clients", "--entity-name", "c1", "--entity-type", "users",
      "--entity-default"], (("users", ""), ("clients", "c1"))),
    (["--user", "alice", "--client-defaults"], (("users", "alice"), ("clients", ""))),
    (["--user-defaults"], (("users", ""),)),
    (["--client", "c1"], (("clients", "c1"),)),
])
def test_quota_entities_from_kafka_configs_flags(argv: list[str],
                                                 parts: tuple[tuple[str, str | None]]) -> None:
    assert entity_from_args(args("describe", *argv), altering=False) == QuotaEntity(parts)


def test_quota_descriptions_and_completions_as_kafka_configs_prints_them() -> None:
    assert describe_lines([({"user": "alice", "client-id": None},
                            {"producer_byte_rate": 1024.0, "request_percentage": 1.5e7})]) == [
        "Quota configs for user-principal 'alice', the default client-id are "
        "producer_byte_rate=1024.0, request_percentage=1.5E7"]
    assert completed_line(QuotaEntity((("users", "alice"), ("clients", "c")))) == \
        "Completed updating config for user alice."
    assert completed_line(QuotaEntity((("clients", ""),))) == \
        "Completed updating default config for clients in the cluster."


@pytest.mark.parametrize(("parts", "additions", "deletions", "message"), [
    ((("clients", "c"),), {"retention.ms": "1"}, [], "Only quota configs can be added for "
                                                     "'clients'"),
    ((("users", "u"),), {}, ["retention.ms"], "Only quota and SCRAM credential configs can be "
                                               "deleted for 'users'"),
    ((("users", "u"),), {"producer_byte_rate": "fast"}, [], "Cannot parse quota configuration "
                                                           "value for producer_byte_rate: fast"),
])
def test_bad_quota_changes_are_refused(parts: tuple[tuple[str, str]], additions: dict[str, str],
                                       deletions: list[str], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        quota_changes(QuotaEntity(parts), additions, deletions)


def test_quota_changes_set_and_remove() -> None:
    assert quota_changes(QuotaEntity((("users", "u"),)), {"producer_byte_rate": "1024"},
                         ["consumer_byte_rate"]) == {"producer_byte_rate": 1024.0,
                                                     "consumer_byte_rate": None}
