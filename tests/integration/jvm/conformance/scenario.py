"""A scenario: named steps around the API under test, run once per version of it that
Odradek advertises (or `versions`, a sub-range), against both brokers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.broker.apis import API_TABLE
from odradek.protocol.codec import schema_versions
from tests.integration.jvm.conformance.steps import Name, Ref, Step

ADVERTISED = {api.key: (api.min_version if api.advertised_min_version is None
                        else api.advertised_min_version, api.max_version) for api in API_TABLE}

(PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR,
 JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS) = (
    0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16)
(API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, INIT_PRODUCER_ID,
 OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN,
 WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS,
 DESCRIBE_CONFIGS, ALTER_CONFIGS) = (18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                                     32, 33)
(DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, DELETE_GROUPS, ELECT_LEADERS,
 INCREMENTAL_ALTER_CONFIGS, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS,
 OFFSET_DELETE, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_USER_SCRAM_CREDENTIALS,
 ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_QUORUM, DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS,
 DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE,
 DESCRIBE_TOPIC_PARTITIONS) = (35, 37, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 55, 60, 61, 65,
                               66, 68, 69, 75)
SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77


@dataclass(frozen=True)
class Scenario:
    name: str
    api: int
    steps: tuple[Step, ...]
    versions: tuple[int, int] | None = None

    def version_range(self) -> range:
        """The versions Odradek advertises that kio has schemas for (Produce v0-v2, listed
        but refused by both brokers, have none)."""
        low, high = ADVERTISED[self.api]
        known = schema_versions(self.api)
        assert known is not None
        low, high = max(low, known[0]), min(high, known[1])
        if self.versions is not None:
            low, high = max(low, self.versions[0]), min(high, self.versions[1])
        return range(low, high + 1)


def no_error(tree: Any) -> bool:
    """No error code anywhere in the response."""
    if isinstance(tree, dict):
        return all(value in ("none", None) if key == "error_code" else no_error(value)
                   for key, value in tree.items())
    if isinstance(tree, list):
        return all(no_error(item) for item in tree)
    return tree != "<connection closed by the broker>"


def leaders_elected(tree: Any) -> bool:
    return all(partition["leader_id"] >= 0 and partition["error_code"] == "none"
               for topic in tree["topics"] for partition in topic["partitions"]) and no_error(
        tree)


def create_topic(topic: str, partitions: int = 1, configs: dict[str, str] | None = None
                 ) -> tuple[Step, ...]:
    """CreateTopics v7 (named `create-<topic>`), then Metadata until its leaders are known and
    ListOffsets until they serve (Kafka's replica manager takes leadership after its metadata
    cache shows it)."""
    return (
        Step(CREATE_TOPICS, {"topics": [{
            "name": Name(topic), "num_partitions": partitions, "replication_factor": 1,
            "assignments": [], "configs": [{"name": k, "value": v}
                                           for k, v in (configs or {}).items()]}],
            "timeout": 30_000, "validate_only": False}, version=7, name=f"create-{topic}"),
        Step(METADATA, {"topics": [{"name": Name(topic)}], "allow_auto_topic_creation": False,
                        "include_topic_authorized_operations": False},
             version=12, until=leaders_elected, compare=False),
        Step(LIST_OFFSETS, {"replica_id": -1, "isolation_level": 0, "topics": [{
            "name": Name(topic), "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                                 "timestamp": -1} for p in range(partitions)]}]},
             version=7, until=no_error, compare=False),
    )


def find_coordinator(key: str, key_type: int) -> Step:
    """FindCoordinator v4 until the coordinator (and its internal topic) is ready: a
    group (key_type 0) or a transactional id (1)."""
    return Step(FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [Name(key)]},
                version=4, until=no_error, compare=False)


def topic_id(topic: str) -> Ref:
    """The id CreateTopics gave `topic` on the broker at hand."""
    return Ref(f"create-{topic}", "topics.0.topic_id")
