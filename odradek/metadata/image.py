"""The cluster metadata state machine: handlers validate and return records; only
`replay` changes state, the same path at load time and at request time."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from odradek.config import TOPIC_CONFIGS, InvalidConfigError, validate_topic_configs
from odradek.metadata.records import (
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    ResourceType,
    TopicRecord,
)

MAX_TOPIC_NAME_LENGTH = 249
METADATA_TOPIC = "__cluster_metadata"
"""KRaft's metadata log; its directory holds the metadata store."""
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
"""Topics the coordinators create and write; clients may read them but not create or
produce to them."""
MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses larger batches of new partitions (POLICY_VIOLATION)."""
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


class MetadataError(Exception):
    """A request the metadata state refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: str
    partitions: dict[int, PartitionRecord] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


def validate_topic_name(name: str | None, internal: bool = False) -> str:
    if not name:
        raise MetadataError(ErrorCode.invalid_topic_exception, "Topic name is empty")
    if name in (".", ".."):
        raise MetadataError(ErrorCode.invalid_topic_exception, f"Topic name cannot be {name!r}")
    if name == METADATA_TOPIC or (name in INTERNAL_TOPICS and not internal):
        raise MetadataError(
            ErrorCode.invalid_request, f"Creation of internal topic {name} is prohibited."
        )
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise MetadataError(
            ErrorCode.invalid_topic_exception,
            f"Topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_TOPIC.fullmatch(name):
        raise MetadataError(
            ErrorCode.invalid_topic_exception,
            f"Topic name {name!r} is illegal: only ASCII alphanumerics, '.', '_' and '-' allowed",
        )
    return name


def _refuse_internal(name: str, change: str) -> None:
    """The coordinators route by their topics' partition counts: those never change."""
    if name in INTERNAL_TOPICS:
        raise MetadataError(ErrorCode.invalid_request, f"Internal topic {name} cannot be {change}.")


def _check_batch_size(new_partitions: int) -> None:
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise MetadataError(
            ErrorCode.policy_violation,
            f"Excessively large number of partitions per request: {new_partitions} "
            f"(at most {MAX_PARTITIONS_PER_REQUEST})",
        )


class ClusterMetadata:
    def __init__(self) -> None:
        self.topics: dict[str, TopicState] = {}
        self.topic_names_by_id: dict[str, str] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        """Dynamic broker configs by broker resource name: "" the cluster default, a node id
        that broker's own."""

    # --- replay -------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.topics[name] = TopicState(name, topic_id)
                self.topic_names_by_id[topic_id] = name
            case PartitionRecord(topic_id=topic_id, partition=partition):
                self.topics[self.topic_names_by_id[topic_id]].partitions[partition] = record
            case RemoveTopicRecord(topic_id=topic_id):
                name = self.topic_names_by_id.pop(topic_id)
                del self.topics[name]
            case ConfigRecord(resource_type=ResourceType.TOPIC, resource_name=topic):
                self._apply_config(self.topics[topic].configs, record)
            case ConfigRecord(resource_type=ResourceType.BROKER, resource_name=resource):
                configs = self.broker_configs.setdefault(resource, {})
                self._apply_config(configs, record)
                if not configs:
                    del self.broker_configs[resource]

    @staticmethod
    def _apply_config(configs: dict[str, str], record: ConfigRecord) -> None:
        if record.value is None:
            configs.pop(record.name, None)
        else:
            configs[record.name] = record.value

    # --- handlers: validate, return records ----------------------------------------------

    def topic(self, name: str) -> TopicState:
        state = self.topics.get(name)
        if state is None:
            raise MetadataError(
                ErrorCode.unknown_topic_or_partition, f"Topic {name!r} does not exist"
            )
        return state

    def create_topic(
        self,
        name: str,
        topic_id: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None],
        broker_ids: Sequence[int],
        assignments: Mapping[int, Sequence[int]] | None = None,
        internal: bool = False,
    ) -> list[MetadataRecord]:
        validate_topic_name(name, internal)
        if name in self.topics:
            raise MetadataError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        collision = name.replace(".", "_")
        for existing in self.topics:
            if existing.replace(".", "_") == collision:
                raise MetadataError(
                    ErrorCode.invalid_topic_exception,
                    f"Topic '{name}' collides with existing topic '{existing}'",
                )
        try:
            validate_topic_configs(configs)
        except InvalidConfigError as error:
            raise MetadataError(ErrorCode.invalid_config, str(error)) from None
        if assignments:
            replica_sets = [list(assignments[p]) for p in sorted(assignments)]
            _check_batch_size(len(assignments))
            if sorted(assignments) != list(range(len(assignments))):
                raise MetadataError(
                    ErrorCode.invalid_replica_assignment,
                    "Partitions in the assignment must be numbered 0..n-1",
                )
            for replicas in replica_sets:
                self._check_replicas(replicas, broker_ids, len(replica_sets[0]))
        else:
            if num_partitions < 1:
                raise MetadataError(
                    ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
                )
            _check_batch_size(num_partitions)
            if replication_factor < 1:
                raise MetadataError(
                    ErrorCode.invalid_replication_factor,
                    "Replication factor must be larger than 0.",
                )
            if replication_factor > len(broker_ids):
                raise MetadataError(
                    ErrorCode.invalid_replication_factor,
                    f"Replication factor: {replication_factor} larger than available brokers: "
                    f"{len(broker_ids)}.",
                )
            replica_sets = self._assign(0, num_partitions, replication_factor, broker_ids)
        records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
        records += [
            PartitionRecord(topic_id, index, tuple(replicas), tuple(replicas), replicas[0])
            for index, replicas in enumerate(replica_sets)
        ]
        records += [
            ConfigRecord(ResourceType.TOPIC, name, key, value)
            for key, value in sorted(configs.items())
        ]
        return records

    @staticmethod
    def _check_replicas(
        replicas: Sequence[int], broker_ids: Sequence[int], replication_factor: int
    ) -> None:
        if not replicas or len(set(replicas)) != len(replicas):
            raise MetadataError(
                ErrorCode.invalid_replica_assignment, f"Invalid replica list {list(replicas)}"
            )
        if len(replicas) != replication_factor:
            raise MetadataError(
                ErrorCode.invalid_replica_assignment,
                f"Replica list {list(replicas)} has {len(replicas)} replica(s), but the "
                f"topic's other partitions have {replication_factor}",
            )
        unknown = [r for r in replicas if r not in broker_ids]
        if unknown:
            raise MetadataError(
                ErrorCode.invalid_replica_assignment,
                f"Unknown broker(s) {unknown} in replica assignment",
            )

    @staticmethod
    def _assign(
        first: int, count: int, replication_factor: int, broker_ids: Sequence[int]
    ) -> list[list[int]]:
        brokers = sorted(broker_ids)
        return [
            [brokers[(p + r) % len(brokers)] for r in range(replication_factor)]
            for p in range(first, first + count)
        ]

    def delete_topic(self, name: str) -> list[MetadataRecord]:
        _refuse_internal(name, "deleted")
        return [RemoveTopicRecord(self.topic(name).topic_id)]

    def create_partitions(
        self,
        name: str,
        count: int,
        broker_ids: Sequence[int],
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> list[MetadataRecord]:
        state = self.topic(name)
        _refuse_internal(name, "given more partitions")
        current = len(state.partitions)
        if count < current:
            raise MetadataError(
                ErrorCode.invalid_partitions,
                f"Topic currently has {current} partitions, which is higher than the "
                f"requested {count}.",
            )
        if count == current:
            raise MetadataError(
                ErrorCode.invalid_partitions, f"Topic already has {current} partitions."
            )
        _check_batch_size(count - current)
        replication_factor = len(state.partitions[0].replicas)
        if assignments is not None:
            if len(assignments) != count - current:
                raise MetadataError(
                    ErrorCode.invalid_replica_assignment,
                    f"Increasing the number of partitions by {count - current} but "
                    f"{len(assignments)} assignments provided.",
                )
            for replicas in assignments:
                self._check_replicas(replicas, broker_ids, replication_factor)
            replica_sets = [list(r) for r in assignments]
        else:
            if replication_factor > len(broker_ids):
                raise MetadataError(
                    ErrorCode.invalid_replication_factor,
                    f"Replication factor: {replication_factor} larger than available brokers: "
                    f"{len(broker_ids)}.",
                )
            replica_sets = self._assign(current, count - current, replication_factor, broker_ids)
        return [
            PartitionRecord(state.topic_id, current + i, tuple(r), tuple(r), r[0])
            for i, r in enumerate(replica_sets)
        ]

    def alter_topic_configs(
        self, name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        """Changes are validated against the merged result; None removes an override."""
        state = self.topic(name)
        merged = dict(state.configs)
        for key, value in changes.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        try:
            validate_topic_configs(merged)
        except InvalidConfigError as error:
            raise MetadataError(ErrorCode.invalid_config, str(error)) from None
        unknown = sorted(k for k in changes if k not in TOPIC_CONFIGS)
        if unknown:
            raise MetadataError(
                ErrorCode.invalid_config, f"Unknown topic config name: {', '.join(unknown)}"
            )
        return [ConfigRecord(ResourceType.TOPIC, name, k, v) for k, v in changes.items()]

    def alter_broker_configs(
        self, resource_name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        """Records for the dynamic configs of a broker resource ("" for the cluster default,
        else a node id); validation is the caller's."""
        return [
            ConfigRecord(ResourceType.BROKER, resource_name, k, v) for k, v in changes.items()
        ]
