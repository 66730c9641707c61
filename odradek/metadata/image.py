"""The cluster metadata state machine: handlers validate and return records; only
`replay` changes state, the same path at load time and at request time."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kio.schema.errors import ErrorCode

from odradek.config.group import BrokerValues, validate_group_configs
from odradek.config.kafka_configs import (
    ALL_TOPIC_CONFIGS,
    InvalidConfigError,
    validate_topic_configs,
)
from odradek.config.listeners import Endpoint
from odradek.metadata.errors import MetadataError as MetadataError
from odradek.metadata.placement import place_replicas, unable_to_replicate
from odradek.metadata.records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    ConfigResourceType,
    EntityData,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)
from odradek.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    validate_filter,
    validate_new_acl,
)
from odradek.security.client_quotas import Entity

MAX_TOPIC_NAME_LENGTH = 249
METADATA_TOPIC = "__cluster_metadata"
"""KRaft's metadata log; its directory holds the metadata store."""
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})
"""Topics the coordinators create and write; clients may read them but not create or
produce to them."""
MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses larger batches of new partitions (POLICY_VIOLATION)."""
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


class ReplayError(RuntimeError):
    """A record that does not fit the state it is replayed on: the log is corrupt or out of
    order."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    incarnation_id: str
    epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    fenced: bool

    def endpoint(self, listener: str) -> Endpoint | None:
        """The broker's endpoint on this listener; None when it has none there."""
        return next((e for e in self.endpoints if e.name == listener), None)


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
        self.group_configs: dict[str, dict[str, str]] = {}
        """Each group's own configs (odradek/config/group.py) by group id; a group need not
        exist to have them."""
        self.brokers: dict[int, BrokerRegistration] = {}
        self.next_producer_id = 0
        """The first id of the next block of producer ids."""
        self.acls: dict[str, AclBinding] = {}
        """The ACLs by their ids."""
        self.acl_version = 0
        """Counts changes of `acls`: an authorizer rebuilds its index when it moves."""
        self.client_quotas: dict[Entity, dict[str, float]] = {}
        """The quotas of each user / client-id entity (security/client_quotas.py)."""
        self.scram_credentials: dict[tuple[str, int], UserScramCredentialRecord] = {}
        """SCRAM credentials by user and mechanism type."""

    # --- replay -------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.topics[name] = TopicState(name, topic_id)
                self.topic_names_by_id[topic_id] = name
            case PartitionRecord(topic_id=topic_id, partition=partition):
                self.topics[self.topic_names_by_id[topic_id]].partitions[partition] = record
            case PartitionChangeRecord():
                self._replay_partition_change(record)
            case RemoveTopicRecord(topic_id=topic_id):
                name = self.topic_names_by_id.pop(topic_id)
                del self.topics[name]
            case ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=topic):
                self._apply_config(self.topics[topic].configs, record)
            case ConfigRecord(resource_type=ConfigResourceType.BROKER, resource_name=resource):
                configs = self.broker_configs.setdefault(resource, {})
                self._apply_config(configs, record)
                if not configs:
                    del self.broker_configs[resource]
            case ConfigRecord(resource_type=ConfigResourceType.GROUP, resource_name=group):
                configs = self.group_configs.setdefault(group, {})
                self._apply_config(configs, record)
                if not configs:
                    del self.group_configs[group]
            case RegisterBrokerRecord():
                self.brokers[record.broker_id] = BrokerRegistration(
                    record.broker_id, record.incarnation_id, record.broker_epoch,
                    record.endpoints, record.rack, record.fenced,
                )
            case UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch):
                self._registration(record, broker_id, epoch)
                del self.brokers[broker_id]
            case FenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch):
                registration = self._registration(record, broker_id, epoch)
                self.brokers[broker_id] = replace(registration, fenced=True)
            case UnfenceBrokerRecord(broker_id=broker_id, broker_epoch=epoch):
                registration = self._registration(record, broker_id, epoch)
                self.brokers[broker_id] = replace(registration, fenced=False)
            case AccessControlEntryRecord(id=acl_id):
                self.acls[acl_id] = _binding(record)
                self.acl_version += 1
            case RemoveAccessControlEntryRecord(id=acl_id):
                if self.acls.pop(acl_id, None) is None:
                    raise ReplayError(f"{record}: no such ACL")
                self.acl_version += 1
            case ClientQuotaRecord(entity=parts, key=key, value=value):
                target = tuple(sorted((p.entity_type, p.entity_name) for p in parts))
                quotas = self.client_quotas.setdefault(target, {})
                if value is None:
                    quotas.pop(key, None)
                else:
                    quotas[key] = value
                if not quotas:
                    del self.client_quotas[target]
            case ProducerIdsRecord(next_producer_id=next_id):
                if next_id <= self.next_producer_id:
                    raise ReplayError(f"{record} does not advance the next producer id "
                                      f"{self.next_producer_id}")
                self.next_producer_id = next_id
            case UserScramCredentialRecord(name=name, mechanism=mechanism):
                self.scram_credentials[(name, mechanism)] = record
            case RemoveUserScramCredentialRecord(name=name, mechanism=mechanism):
                if self.scram_credentials.pop((name, mechanism), None) is None:
                    raise ReplayError(f"{record}: no such credential")

    def _registration(self, record: MetadataRecord, broker_id: int,
                      epoch: int) -> BrokerRegistration:
        registration = self.brokers.get(broker_id)
        if registration is None or registration.epoch != epoch:
            raise ReplayError(f"{record}: no registration of broker {broker_id} with epoch "
                              f"{epoch}")
        return registration

    def _replay_partition_change(self, record: PartitionChangeRecord) -> None:
        name = self.topic_names_by_id.get(record.topic_id)
        partitions = self.topics[name].partitions if name is not None else {}
        current = partitions.get(record.partition)
        if current is None:
            raise ReplayError(f"{record}: no such partition")
        leader = current.leader if record.leader is None else record.leader
        partitions[record.partition] = replace(
            current,
            leader=leader,
            isr=current.isr if record.isr is None else record.isr,
            replicas=current.replicas if record.replicas is None else record.replicas,
            adding_replicas=current.adding_replicas if record.adding_replicas is None
            else record.adding_replicas,
            removing_replicas=current.removing_replicas if record.removing_replicas is None
            else record.removing_replicas,
            leader_epoch=current.leader_epoch + (leader != current.leader),
            partition_epoch=current.partition_epoch + 1,
        )

    @staticmethod
    def _apply_config(configs: dict[str, str], record: ConfigRecord) -> None:
        if record.value is None:
            configs.pop(record.name, None)
        else:
            configs[record.name] = record.value

    def to_records(self) -> list[MetadataRecord]:
        """Records that rebuild exactly this state when replayed on an empty one: the image
        a snapshot holds and a broker starts from."""
        records: list[MetadataRecord] = [
            RegisterBrokerRecord(b.broker_id, b.incarnation_id, b.epoch, b.endpoints, b.rack,
                                 b.fenced)
            for _, b in sorted(self.brokers.items())
        ]
        if self.next_producer_id:
            records.append(ProducerIdsRecord(-1, -1, self.next_producer_id))
        records += [
            ConfigRecord(ConfigResourceType.BROKER, resource, key, value)
            for resource, configs in sorted(self.broker_configs.items())
            for key, value in sorted(configs.items())
        ]
        records += [
            ConfigRecord(ConfigResourceType.GROUP, group, key, value)
            for group, configs in sorted(self.group_configs.items())
            for key, value in sorted(configs.items())
        ]
        records += [_acl_record(acl_id, acl) for acl_id, acl in sorted(self.acls.items())]
        records += [
            client_quota_record(target, key, value)
            for target, quotas in sorted(self.client_quotas.items(), key=lambda i: repr(i[0]))
            for key, value in sorted(quotas.items())
        ]
        records += [self.scram_credentials[key] for key in sorted(self.scram_credentials)]
        for state in self.topics.values():
            records.append(TopicRecord(state.name, state.topic_id))
            records += [state.partitions[p] for p in sorted(state.partitions)]
            records += [
                ConfigRecord(ConfigResourceType.TOPIC, state.name, key, value)
                for key, value in sorted(state.configs.items())
            ]
        return records

    # --- queries --------------------------------------------------------------------------

    def topic(self, name: str) -> TopicState:
        state = self.topics.get(name)
        if state is None:
            raise MetadataError(
                ErrorCode.unknown_topic_or_partition, f"Topic {name!r} does not exist"
            )
        return state

    def partition(self, topic_id: str, partition: int) -> PartitionRecord:
        name = self.topic_names_by_id.get(topic_id)
        if name is None:
            raise MetadataError(ErrorCode.unknown_topic_id, f"Topic id {topic_id} does not exist")
        record = self.topics[name].partitions.get(partition)
        if record is None:
            raise MetadataError(
                ErrorCode.unknown_topic_or_partition,
                f"Partition {partition} of topic {name!r} does not exist",
            )
        return record

    def partitions(self) -> list[PartitionRecord]:
        """Every partition of every topic."""
        return [p for state in self.topics.values() for p in state.partitions.values()]

    def unfenced_brokers(self) -> list[BrokerRegistration]:
        """The registered brokers that are not fenced, by id."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def racks(self) -> dict[int, str | None]:
        """The rack of every registered broker (None when it has none)."""
        return {broker_id: b.rack for broker_id, b in self.brokers.items()}

    def leader_counts(self) -> Counter[int]:
        """Partitions per preferred (first) replica: what placement balances, so that new
        leaders do not depend on the failovers of the moment."""
        return Counter(p.replicas[0] for p in self.partitions() if p.replicas)

    # --- handlers: validate, return records ----------------------------------------------

    def create_topic(
        self,
        name: str,
        topic_id: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None],
        assignments: Mapping[int, Sequence[int]] | None = None,
        internal: bool = False,
        shutting_down: Collection[int] = (),
    ) -> list[MetadataRecord]:
        """Replicas are placed over the unfenced brokers not `shutting_down` (or given in
        `assignments`, on registered brokers); each new partition starts with ISR =
        (leader,)."""
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
                self._check_replicas(replicas, len(replica_sets[0]))
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
            replica_sets = self._place(0, num_partitions, replication_factor, shutting_down)
        records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
        records += self._new_partitions(topic_id, 0, replica_sets, shutting_down)
        records += [
            ConfigRecord(ConfigResourceType.TOPIC, name, key, value)
            for key, value in sorted(configs.items())
        ]
        return records

    def _place(self, first: int, count: int, replication_factor: int,
               shutting_down: Collection[int]) -> list[list[int]]:
        usable = [(b.broker_id, b.rack) for b in self.unfenced_brokers()
                  if b.broker_id not in shutting_down]
        if not usable and self.brokers:
            raise unable_to_replicate(replication_factor, "All brokers are currently fenced.")
        return place_replicas(first, count, replication_factor, usable, self.leader_counts())

    def _new_partitions(
        self, topic_id: str, first: int, replica_sets: Sequence[Sequence[int]],
        shutting_down: Collection[int],
    ) -> list[MetadataRecord]:
        """As in Kafka, the ISR is the unfenced replicas not in controlled shutdown (all are
        empty, so all are in sync) and the leader the first of them."""
        records: list[MetadataRecord] = []
        for index, replicas in enumerate(replica_sets, first):
            isr = tuple(r for r in replicas
                        if not self.brokers[r].fenced and r not in shutting_down)
            if not isr:
                raise MetadataError(
                    ErrorCode.invalid_replica_assignment,
                    f"All brokers specified in the manual partition assignment for partition "
                    f"{index} are fenced or in controlled shutdown.",
                )
            records.append(PartitionRecord(topic_id, index, tuple(replicas), isr, isr[0]))
        return records

    def _check_replicas(self, replicas: Sequence[int], replication_factor: int) -> None:
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
        unknown = [r for r in replicas if r not in self.brokers]
        if unknown:
            raise MetadataError(
                ErrorCode.invalid_replica_assignment,
                f"Unknown broker(s) {unknown} in replica assignment",
            )

    def delete_topic(self, name: str) -> list[MetadataRecord]:
        _refuse_internal(name, "deleted")
        return [RemoveTopicRecord(self.topic(name).topic_id)]

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None = None,
        shutting_down: Collection[int] = (),
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
                self._check_replicas(replicas, replication_factor)
            replica_sets = [list(r) for r in assignments]
        else:
            replica_sets = self._place(current, count - current, replication_factor,
                                       shutting_down)
        return self._new_partitions(state.topic_id, current, replica_sets, shutting_down)

    def alter_topic_configs(
        self, name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        """Changes are validated against the merged result; None removes an override."""
        state = self.topic(name)
        try:
            validate_topic_configs(_merged(state.configs, changes))
        except InvalidConfigError as error:
            raise MetadataError(ErrorCode.invalid_config, str(error)) from None
        unknown = sorted(k for k in changes if k not in ALL_TOPIC_CONFIGS)
        if unknown:
            raise MetadataError(
                ErrorCode.invalid_config, f"Unknown topic config name: {', '.join(unknown)}"
            )
        return [ConfigRecord(ConfigResourceType.TOPIC, name, k, v) for k, v in changes.items()]

    def alter_client_quotas(
        self, target: Entity, changes: Mapping[str, float | None]
    ) -> list[MetadataRecord]:
        """Records for the quota changes of one (validated) entity: only values that change,
        and removals of keys it has, as Kafka's ClientQuotaControlManager writes them."""
        current = self.client_quotas.get(target, {})
        return [client_quota_record(target, key, value) for key, value in changes.items()
                if (key in current if value is None else current.get(key) != value)]

    def alter_broker_configs(
        self, resource_name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        """Records for the dynamic configs of a broker resource ("" for the cluster default,
        else a node id); validation is the caller's."""
        return [
            ConfigRecord(ConfigResourceType.BROKER, resource_name, k, v) for k, v in changes.items()
        ]

    def alter_group_configs(
        self, group: str, changes: Mapping[str, str | None], broker: BrokerValues
    ) -> list[MetadataRecord]:
        """Records for a group's config changes (None removes one), validated as Kafka's
        controller does (ControllerConfigurationValidator): the group's configs as they would
        be, against the bounds of this controller's `broker` values."""
        if not group:
            raise MetadataError(ErrorCode.invalid_request,
                                "Default group resources are not allowed.")
        try:
            validate_group_configs(_merged(self.group_configs.get(group, {}), changes), broker)
        except InvalidConfigError as error:
            raise MetadataError(ErrorCode.invalid_config, str(error)) from None
        return [ConfigRecord(ConfigResourceType.GROUP, group, k, v) for k, v in changes.items()]

    def create_acls(
        self, acls: Sequence[AclBinding], new_id: Callable[[], str]
    ) -> tuple[list[MetadataRecord], list[MetadataError | None]]:
        """Kafka's AclControlManager.createAcls: (records, an outcome per ACL). An ACL that
        exists already succeeds without a record; `new_id` draws the id of a new one."""
        existing = set(self.acls.values())
        records: list[MetadataRecord] = []
        outcomes: list[MetadataError | None] = []
        for acl in acls:
            try:
                validate_new_acl(acl)
            except InvalidAclError as error:
                outcomes.append(MetadataError(ErrorCode.invalid_request, str(error)))
                continue
            if acl not in existing:
                existing.add(acl)
                records.append(_acl_record(new_id(), acl))
            outcomes.append(None)
        return records, outcomes

    def delete_acls(
        self, filters: Sequence[AclFilter]
    ) -> tuple[list[MetadataRecord], list[list[AclBinding] | MetadataError]]:
        """Kafka's AclControlManager.deleteAcls: (records, per filter the ACLs it removes or
        its error); an ACL several filters match is removed once."""
        removed: dict[str, MetadataRecord] = {}
        outcomes: list[list[AclBinding] | MetadataError] = []
        for acl_filter in filters:
            try:
                validate_filter(acl_filter)
            except InvalidAclError as error:
                outcomes.append(MetadataError(ErrorCode.invalid_request, str(error)))
                continue
            matched = [(i, acl) for i, acl in self.acls.items() if acl_filter.matches(acl)]
            removed.update((i, RemoveAccessControlEntryRecord(i)) for i, _ in matched)
            outcomes.append([acl for _, acl in matched])
        return list(removed.values()), outcomes


def _merged(configs: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """A resource's configs once `changes` apply (None removes one)."""
    merged = dict(configs)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _binding(record: AccessControlEntryRecord) -> AclBinding:
    return AclBinding(ResourceType(record.resource_type), record.resource_name,
                      PatternType(record.pattern_type), record.principal, record.host,
                      AclOperation(record.operation), AclPermissionType(record.permission_type))


def _acl_record(acl_id: str, acl: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(acl_id, int(acl.resource_type), acl.resource_name,
                                    int(acl.pattern_type), acl.principal, acl.host,
                                    int(acl.operation), int(acl.permission_type))


def client_quota_record(target: Entity, key: str, value: float | None) -> ClientQuotaRecord:
    return ClientQuotaRecord(tuple(EntityData(kind, name) for kind, name in target), key, value)
