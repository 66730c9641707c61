"""`odradek acls` turns kafka-acls' flags into ACLs as kafka-acls does (AclCommand)."""

from __future__ import annotations

import pytest

from odradek.cli.main import build_parser
from odradek.cli.tools.acls import acls_to_change
from odradek.cli.tools.common import ToolError
from odradek.security.acls import CLUSTER_NAME, AclOperation, PatternType, ResourceType

Op = AclOperation


def changes(*argv: str, adding: bool = True) -> dict[tuple[ResourceType, str, PatternType],
                                                      set[tuple[str, str, AclOperation, str]]]:
    args = build_parser().parse_args(["acls", "add" if adding else "remove", *argv])
    return {resource: set(entries)
            for resource, entries in acls_to_change(args, adding).items()}


def test_an_allow_defaults_to_every_host_and_all_operations() -> None:
    assert changes("--topic", "orders", "--allow-principal", "User:alice") == {
        (ResourceType.TOPIC, "orders", PatternType.LITERAL): {("User:alice", "*", Op.ALL,
                                                                "ALLOW")}}


def test_producer_and_consumer_expand_as_kafka_acls_does() -> None:
    produced = changes("--producer", "--idempotent", "--topic", "t", "--transactional-id", "x",
                       "--allow-principal", "User:a")
    ops = {resource[0]: {e[2] for e in entries} for resource, entries in produced.items()}
    assert ops == {ResourceType.TOPIC: {Op.WRITE, Op.DESCRIBE, Op.CREATE},
                   ResourceType.TRANSACTIONAL_ID: {Op.WRITE, Op.DESCRIBE},
                   ResourceType.CLUSTER: {Op.IDEMPOTENT_WRITE}}
    assert (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL) in produced
    consumed = changes("--consumer", "--topic", "p.", "--resource-pattern-type", "prefixed",
                       "--group", "g", "--deny-principal", "User:b", "--deny-host", "10.0.0.1")
    assert consumed == {
        (ResourceType.TOPIC, "p.", PatternType.PREFIXED): {
            ("User:b", "10.0.0.1", Op.READ, "DENY"), ("User:b", "10.0.0.1", Op.DESCRIBE, "DENY")},
        (ResourceType.GROUP, "g", PatternType.PREFIXED): {("User:b", "10.0.0.1", Op.READ,
                                                           "DENY")}}


@pytest.mark.parametrize("argv", [
    ("--topic", "t", "--allow-principal", "User:a", "--operation", "IdempotentWrite"),
    ("--topic", "t", "--allow-principal", "alice"),
    ("--topic", "t", "--allow-principal", "User:a", "--operation", "Fly"),
    ("--topic", "t", "--allow-principal", "User:a", "--resource-pattern-type", "match"),
    ("--allow-principal", "User:a"),
])
def test_bad_flags_are_one_line_errors(argv: tuple[str, ...]) -> None:
    with pytest.raises(ToolError):
        changes(*argv)


def test_removing_takes_filters_of_any_pattern_type() -> None:
    assert changes("--topic", "orders", "--resource-pattern-type", "match", adding=False) == {
        (ResourceType.TOPIC, "orders", PatternType.MATCH): set()}
