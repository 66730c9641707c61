"""Scenarios of the admin APIs: topics, partitions, configs, records, reassignments,
elections, quotas, SCRAM credentials and the cluster's descriptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.integration.jvm.conformance.data_plane import produce
from tests.integration.jvm.conformance.scenario import (
    ALTER_CLIENT_QUOTAS,
    ALTER_CONFIGS,
    ALTER_PARTITION_REASSIGNMENTS,
    ALTER_USER_SCRAM_CREDENTIALS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLIENT_QUOTAS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_LOG_DIRS,
    DESCRIBE_QUORUM,
    DESCRIBE_TOPIC_PARTITIONS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    ELECT_LEADERS,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_PARTITION_REASSIGNMENTS,
    Scenario,
    create_topic,
    topic_id,
)
from tests.integration.jvm.conformance.steps import Batch, Name, Step

TOPIC, BROKER, GROUP = 2, 4, 32


def create(name: str, partitions: int = 1, replication: int = 1,
           configs: dict[str, str] | None = None, validate_only: bool = False,
           assignments: list[dict[str, Any]] | None = None) -> Step:
    return Step(CREATE_TOPICS, {"topics": [{
        "name": Name(name), "num_partitions": partitions,
        "replication_factor": replication, "assignments": assignments or [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
        "timeout": 30_000, "validate_only": validate_only})


def delete(name: str, by_id: Any = None) -> Step:
    return Step(DELETE_TOPICS, {"topic_names": [Name(name)], "timeout": 30_000,
                                "topics": [{"name": None if by_id else Name(name),
                                            "topic_id": by_id or "00000000-0000-0000-0000-"
                                                                 "000000000000"}]})


def partitions(name: str, count: int, validate_only: bool = False) -> Step:
    return Step(CREATE_PARTITIONS, {"topics": [{"name": Name(name), "count": count,
                                                "assignments": None}],
                                    "timeout": 30_000, "validate_only": validate_only})


def describe_configs(resource_type: int, name: Any, keys: list[str] | None,
                     version: int | None = None,
                     until: Callable[[Any], bool] | None = None) -> Step:
    return Step(DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": False, "include_documentation": False}, version=version,
        until=until)


def showing(name: str, value: str) -> Callable[[Any], bool]:
    """A DescribeConfigs `until`: the first resource shows `name` at `value`. Kafka's broker
    answers from its metadata image, which may not hold an alteration yet under load."""
    return lambda tree: any(c["name"] == name and c["value"] == value
                            for c in tree["results"][0]["configs"])


def alter_configs(resource_type: int, name: Any, configs: dict[str, str | None],
                  validate_only: bool = False) -> Step:
    return Step(ALTER_CONFIGS, {"resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "validate_only": validate_only})


def incremental(resource_type: int, name: Any, configs: list[tuple[str, int, str | None]],
                validate_only: bool = False) -> Step:
    return Step(INCREMENTAL_ALTER_CONFIGS, {"resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in configs]}],
        "validate_only": validate_only})


def quota_entity(user: str) -> list[dict[str, Any]]:
    return [{"entity_type": "user", "entity_name": user}]


SCENARIOS = [
    Scenario("create_topics", CREATE_TOPICS, (
        create("a", partitions=2, configs={"cleanup.policy": "compact"}),
        create("a"),
        create("b", validate_only=True),
        create("bad name!"),
        create("c", partitions=0),
        create("c", replication=3),
        create("c", replication=0),
        create("c", configs={"cleanup.policy": "bogus"}),
        create("c", configs={"no.such.config": "1"}),
        create("c", configs={"retention.ms": "soon"}),
        create("c", partitions=2, replication=-1,
               assignments=[{"partition_index": 0, "broker_ids": [1]}]),
        create("d", partitions=-1, replication=-1,
               assignments=[{"partition_index": 0, "broker_ids": [7]}]),
    )),
    Scenario("delete_topics", DELETE_TOPICS, (
        *create_topic("t"),
        delete("t"),
        delete("t"),
        delete("missing"),
        delete("missing", by_id="00000000-0000-0000-0000-00000000abcd"),
    )),
    Scenario("delete_topics_by_id", DELETE_TOPICS, (
        *create_topic("t"),
        delete("t", by_id=topic_id("t")),
    ), versions=(6, 6)),
    Scenario("create_partitions", CREATE_PARTITIONS, (
        *create_topic("t"),
        partitions("t", 3, validate_only=True),
        partitions("t", 3),
        partitions("t", 2),
        partitions("t", 3),
        partitions("missing", 2),
    )),
    Scenario("describe_configs", DESCRIBE_CONFIGS, (
        *create_topic("t", configs={"retention.ms": "12345"}),
        describe_configs(TOPIC, Name("t"), ["retention.ms", "cleanup.policy"]),
        describe_configs(TOPIC, Name("missing"), None),
        describe_configs(TOPIC, "", None),
        describe_configs(BROKER, "7", None),
        describe_configs(BROKER, "x", None),
        describe_configs(3, "nope", None),
    )),
    Scenario("alter_configs", ALTER_CONFIGS, (
        *create_topic("t"),
        alter_configs(TOPIC, Name("t"), {"retention.ms": "1000"}),
        alter_configs(TOPIC, Name("t"), {"retention.ms": "soon"}),
        alter_configs(TOPIC, Name("t"), {"no.such.config": "1"}),
        alter_configs(TOPIC, Name("t"), {"retention.ms": "1000"}, validate_only=True),
        alter_configs(TOPIC, Name("missing"), {"retention.ms": "1000"}),
        describe_configs(TOPIC, Name("t"), ["retention.ms"], version=4),
        alter_configs(BROKER, "1", {"log.cleaner.threads": "2"}),
        alter_configs(BROKER, "1", {"sasl.kerberos.min.time.before.relogin": "60000"}),
        alter_configs(BROKER, "7", {"log.cleaner.threads": "2"}),
    )),
    Scenario("incremental_alter_configs", INCREMENTAL_ALTER_CONFIGS, (
        *create_topic("t"),
        incremental(TOPIC, Name("t"), [("retention.ms", 0, "1000")]),
        incremental(TOPIC, Name("t"), [("cleanup.policy", 2, "compact")]),
        incremental(TOPIC, Name("t"), [("cleanup.policy", 3, "compact")]),
        incremental(TOPIC, Name("t"), [("retention.ms", 1, None)]),
        incremental(TOPIC, Name("t"), [("retention.ms", 0, "soon")]),
        incremental(TOPIC, Name("t"), [("retention.ms", 2, "1")]),
        incremental(TOPIC, Name("t"), [("no.such.config", 0, "1")]),
        incremental(TOPIC, Name("t"), [("retention.ms", 0, "1"), ("retention.ms", 1, None)]),
        incremental(TOPIC, Name("missing"), [("retention.ms", 0, "1000")]),
        incremental(BROKER, "1", [("sasl.kerberos.min.time.before.relogin", 0, "60000")]),
        incremental(BROKER, "", [("log.cleaner.threads", 0, "2")]),
    )),
    Scenario("group_configs", INCREMENTAL_ALTER_CONFIGS, (
        incremental(GROUP, Name("g"), [("share.auto.offset.reset", 0, "earliest"),
                                       ("share.record.lock.duration.ms", 0, "20000")]),
        incremental(GROUP, Name("g"), [("share.record.lock.duration.ms", 0, "5000")]),
        incremental(GROUP, Name("g"), [("share.delivery.count.limit", 0, "many")]),
        incremental(GROUP, Name("g"), [("share.isolation.level", 2, "read_committed")]),
        incremental(GROUP, Name("g"), [("no.such.config", 0, "1")]),
        incremental(GROUP, Name("g"), [("share.record.lock.duration.ms", 1, None)]),
        incremental(GROUP, "", [("share.auto.offset.reset", 0, "earliest")]),
        alter_configs(GROUP, Name("g"), {"share.isolation.level": "read_committed"}),
        describe_configs(GROUP, Name("g"), ["share.auto.offset.reset",
                                            "share.record.lock.duration.ms",
                                            "share.isolation.level"], version=4,
                         until=showing("share.isolation.level", "read_committed")),
        describe_configs(GROUP, "", None, version=4),
    )),
    Scenario("describe_log_dirs", DESCRIBE_LOG_DIRS, (
        *create_topic("t"),
        produce("t", Batch(), version=9),
        Step(DESCRIBE_LOG_DIRS, {"topics": [{"topic": Name("t"), "partitions": [0, 5]},
                                            {"topic": Name("missing"), "partitions": [0]}]}),
    )),
    Scenario("describe_cluster", DESCRIBE_CLUSTER, (
        Step(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": True,
                                "endpoint_type": 1, "include_fenced_brokers": True}),
        Step(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False,
                                "endpoint_type": 2, "include_fenced_brokers": False}),
    )),
    Scenario("describe_quorum", DESCRIBE_QUORUM, (
        Step(DESCRIBE_QUORUM, {"topics": [{"topic_name": "__cluster_metadata",
                                           "partitions": [{"partition_index": 0}]}]}),
        Step(DESCRIBE_QUORUM, {"topics": [{"topic_name": "other",
                                           "partitions": [{"partition_index": 0}]}]}),
    )),
    Scenario("describe_topic_partitions", DESCRIBE_TOPIC_PARTITIONS, (
        *create_topic("t", partitions=3),
        Step(DESCRIBE_TOPIC_PARTITIONS, {"topics": [{"name": Name("t")},
                                                    {"name": Name("missing")}],
                                         "response_partition_limit": 2, "cursor": None}),
        Step(DESCRIBE_TOPIC_PARTITIONS, {"topics": [{"name": Name("t")}],
                                         "response_partition_limit": 10, "cursor": {
                                             "topic_name": Name("t"), "partition_index": 1}}),
    )),
    Scenario("elect_leaders", ELECT_LEADERS, (
        *create_topic("t"),
        *(Step(ELECT_LEADERS, {"election_type": election, "timeout": 10_000,
                               "topic_partitions": [{"topic": Name(topic), "partitions": [0, 4]}]})
          for election in (0, 1) for topic in ("t", "missing")),
    )),
    Scenario("partition_reassignments", ALTER_PARTITION_REASSIGNMENTS, (
        *create_topic("t"),
        *(Step(ALTER_PARTITION_REASSIGNMENTS, {
            "timeout": 10_000, "allow_replication_factor_change": True, "topics": [{
                "name": Name(topic),
                "partitions": [{"partition_index": 0, "replicas": replicas}]}]})
          for topic, replicas in (("t", [1]), ("t", [7]), ("t", None), ("t", [1, 1]),
                                  ("missing", [1]))),
        Step(LIST_PARTITION_REASSIGNMENTS, {"timeout": 10_000, "topics": [
            {"name": Name("t"), "partition_indexes": [0]}]}, version=0),
    )),
    Scenario("list_partition_reassignments", LIST_PARTITION_REASSIGNMENTS, (
        Step(LIST_PARTITION_REASSIGNMENTS, {"timeout": 10_000, "topics": [
            {"name": Name("missing"), "partition_indexes": [0]}]}),
    )),
    Scenario("client_quotas", ALTER_CLIENT_QUOTAS, (
        *(Step(ALTER_CLIENT_QUOTAS, {"validate_only": validate, "entries": [{
            "entity": entity, "ops": [{"key": key, "value": value, "remove": False}]}]})
          for entity, key, value, validate in (
              (quota_entity("q-user"), "producer_byte_rate", 1024.0, False),
              (quota_entity("q-user"), "producer_byte_rate", 2048.0, True),
              (quota_entity("q-user"), "no_such_quota", 1.0, False),
              (quota_entity("q-user"), "producer_byte_rate", -5.0, False),
              ([{"entity_type": "bogus", "entity_name": "x"}], "producer_byte_rate", 1.0,
               False))),
        Step(DESCRIBE_CLIENT_QUOTAS, {"strict": True, "components": [
            {"entity_type": "user", "match_type": 0, "match": "q-user"}]}, version=1),
        Step(DESCRIBE_CLIENT_QUOTAS, {"strict": False, "components": [
            {"entity_type": "bogus", "match_type": 0, "match": "x"}]}, version=1),
    )),
    Scenario("describe_client_quotas", DESCRIBE_CLIENT_QUOTAS, (
        Step(DESCRIBE_CLIENT_QUOTAS, {"strict": False, "components": [
            {"entity_type": "user", "match_type": 0, "match": "nobody"}]}),
        Step(DESCRIBE_CLIENT_QUOTAS, {"strict": False, "components": [
            {"entity_type": "user", "match_type": 2, "match": "x"}]}),
    )),
    Scenario("scram_credentials", ALTER_USER_SCRAM_CREDENTIALS, (
        Step(ALTER_USER_SCRAM_CREDENTIALS, {"deletions": [], "upsertions": [{
            "name": "scram-user", "mechanism": 2, "iterations": 4096, "salt": b"salt" * 4,
            "salted_password": b"p" * 64}]}),
        Step(ALTER_USER_SCRAM_CREDENTIALS, {"deletions": [], "upsertions": [{
            "name": "scram-user", "mechanism": 1, "iterations": 100, "salt": b"salt",
            "salted_password": b"p" * 32}]}),
        Step(ALTER_USER_SCRAM_CREDENTIALS, {"deletions": [{"name": "nobody", "mechanism": 1}],
                                            "upsertions": []}),
        Step(ALTER_USER_SCRAM_CREDENTIALS, {"deletions": [{"name": "x", "mechanism": 0}],
                                            "upsertions": []}),
        # Kafka's broker answers from its metadata image, which may not hold the upsert yet
        Step(DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": [{"name": "scram-user"},
                                                         {"name": "nobody"}]}, version=0,
             until=lambda tree: tree["results"][0]["error_code"] == "none"),
    )),
]
