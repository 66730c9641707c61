from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Error(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ControllerHint(_message.Message):
    __slots__ = ("leader_id", "leader_host", "leader_port")
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_HOST_FIELD_NUMBER: _ClassVar[int]
    LEADER_PORT_FIELD_NUMBER: _ClassVar[int]
    leader_id: int
    leader_host: str
    leader_port: int
    def __init__(self, leader_id: _Optional[int] = ..., leader_host: _Optional[str] = ..., leader_port: _Optional[int] = ...) -> None: ...

class BrokerEndpoint(_message.Message):
    __slots__ = ("name", "host", "port", "security_protocol")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SECURITY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    security_protocol: str
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., security_protocol: _Optional[str] = ...) -> None: ...

class BrokerRegistrationRequest(_message.Message):
    __slots__ = ("cluster_id", "broker_id", "incarnation_id", "rack", "endpoints")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    broker_id: int
    incarnation_id: str
    rack: str
    endpoints: _containers.RepeatedCompositeFieldContainer[BrokerEndpoint]
    def __init__(self, cluster_id: _Optional[str] = ..., broker_id: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., rack: _Optional[str] = ..., endpoints: _Optional[_Iterable[_Union[BrokerEndpoint, _Mapping]]] = ...) -> None: ...

class BrokerRegistrationResponse(_message.Message):
    __slots__ = ("error", "controller", "broker_epoch")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    broker_epoch: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class BrokerHeartbeatRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "current_metadata_offset", "want_fence", "want_shutdown")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    WANT_FENCE_FIELD_NUMBER: _ClassVar[int]
    WANT_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shutdown: bool
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., current_metadata_offset: _Optional[int] = ..., want_fence: _Optional[bool] = ..., want_shutdown: _Optional[bool] = ...) -> None: ...

class BrokerHeartbeatResponse(_message.Message):
    __slots__ = ("error", "controller", "is_caught_up", "is_fenced", "should_shutdown")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    IS_CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    IS_FENCED_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    is_caught_up: bool
    is_fenced: bool
    should_shutdown: bool
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., is_caught_up: _Optional[bool] = ..., is_fenced: _Optional[bool] = ..., should_shutdown: _Optional[bool] = ...) -> None: ...

class MetadataFetchRequest(_message.Message):
    __slots__ = ("from_offset",)
    FROM_OFFSET_FIELD_NUMBER: _ClassVar[int]
    from_offset: int
    def __init__(self, from_offset: _Optional[int] = ...) -> None: ...

class MetadataBatch(_message.Message):
    __slots__ = ("offset", "records", "snapshot")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    offset: int
    records: bytes
    snapshot: bool
    def __init__(self, offset: _Optional[int] = ..., records: _Optional[bytes] = ..., snapshot: _Optional[bool] = ...) -> None: ...

class ConfigEntry(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ReplicaAssignment(_message.Message):
    __slots__ = ("partition", "broker_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    broker_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateTopicRequest(_message.Message):
    __slots__ = ("name", "num_partitions", "replication_factor", "assignments", "configs", "internal")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    num_partitions: int
    replication_factor: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    configs: _containers.RepeatedCompositeFieldContainer[ConfigEntry]
    internal: bool
    def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ..., configs: _Optional[_Iterable[_Union[ConfigEntry, _Mapping]]] = ..., internal: _Optional[bool] = ...) -> None: ...

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreateTopicRequest]
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreateTopicRequest, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class TopicResult(_message.Message):
    __slots__ = ("name", "error", "topic_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    error: Error
    topic_id: str
    def __init__(self, name: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., topic_id: _Optional[str] = ...) -> None: ...

class TopicResults(_message.Message):
    __slots__ = ("error", "controller", "topics", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    topics: _containers.RepeatedCompositeFieldContainer[TopicResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[TopicResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class CreatePartitionsTopic(_message.Message):
    __slots__ = ("name", "count", "assignments", "has_assignments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    HAS_ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    has_assignments: bool
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ..., has_assignments: _Optional[bool] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopic]
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopic, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class ConfigResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "changes")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    changes: _containers.RepeatedCompositeFieldContainer[ConfigEntry]
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[ConfigEntry, _Mapping]]] = ...) -> None: ...

class AlterConfigsRequest(_message.Message):
    __slots__ = ("resources", "validate_only")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ConfigResource]
    validate_only: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[ConfigResource, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class ConfigResult(_message.Message):
    __slots__ = ("error", "resource_type", "resource_name")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    error: Error
    resource_type: int
    resource_name: str
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ...) -> None: ...

class AlterConfigsResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[ConfigResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ConfigResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class QuotaEntityPart(_message.Message):
    __slots__ = ("entity_type", "entity_name")
    ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_NAME_FIELD_NUMBER: _ClassVar[int]
    entity_type: str
    entity_name: str
    def __init__(self, entity_type: _Optional[str] = ..., entity_name: _Optional[str] = ...) -> None: ...

class QuotaChange(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: float
    def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class ClientQuotaAlteration(_message.Message):
    __slots__ = ("entity", "changes")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityPart]
    changes: _containers.RepeatedCompositeFieldContainer[QuotaChange]
    def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntityPart, _Mapping]]] = ..., changes: _Optional[_Iterable[_Union[QuotaChange, _Mapping]]] = ...) -> None: ...

class AlterClientQuotasRequest(_message.Message):
    __slots__ = ("alterations", "validate_only")
    ALTERATIONS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    alterations: _containers.RepeatedCompositeFieldContainer[ClientQuotaAlteration]
    validate_only: bool
    def __init__(self, alterations: _Optional[_Iterable[_Union[ClientQuotaAlteration, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class AlterClientQuotasResponse(_message.Message):
    __slots__ = ("error", "controller", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "partitions")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionIsrChange]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionIsrChange, _Mapping]]] = ...) -> None: ...

class PartitionIsrChange(_message.Message):
    __slots__ = ("topic_id", "partition", "leader_epoch", "partition_epoch", "new_isr")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., new_isr: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error", "controller", "partitions")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionIsrResult]
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionIsrResult, _Mapping]]] = ...) -> None: ...

class PartitionIsrResult(_message.Message):
    __slots__ = ("topic_id", "partition", "error", "leader", "leader_epoch", "partition_epoch", "isr")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partition: int
    error: Error
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ...) -> None: ...

class AllocateProducerIdsRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsResponse(_message.Message):
    __slots__ = ("error", "controller", "first_producer_id", "count")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    FIRST_PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    first_producer_id: int
    count: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., first_producer_id: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class DescribeQuorumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QuorumReplica(_message.Message):
    __slots__ = ("replica_id", "log_end_offset", "last_fetch_timestamp", "last_caught_up_timestamp")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LAST_CAUGHT_UP_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int
    def __init__(self, replica_id: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_fetch_timestamp: _Optional[int] = ..., last_caught_up_timestamp: _Optional[int] = ...) -> None: ...

class DescribeQuorumResponse(_message.Message):
    __slots__ = ("node_id", "leader_id", "term", "role", "commit_index", "applied_offset", "log_end_offset", "active", "error", "controller", "voters", "observers")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    COMMIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    APPLIED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    OBSERVERS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    leader_id: int
    term: int
    role: str
    commit_index: int
    applied_offset: int
    log_end_offset: int
    active: bool
    error: Error
    controller: ControllerHint
    voters: _containers.RepeatedCompositeFieldContainer[QuorumReplica]
    observers: _containers.RepeatedCompositeFieldContainer[QuorumReplica]
    def __init__(self, node_id: _Optional[int] = ..., leader_id: _Optional[int] = ..., term: _Optional[int] = ..., role: _Optional[str] = ..., commit_index: _Optional[int] = ..., applied_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., active: _Optional[bool] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., voters: _Optional[_Iterable[_Union[QuorumReplica, _Mapping]]] = ..., observers: _Optional[_Iterable[_Union[QuorumReplica, _Mapping]]] = ...) -> None: ...

class ReassignmentTarget(_message.Message):
    __slots__ = ("topic", "partition", "cancel", "replicas")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    cancel: bool
    replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., cancel: _Optional[bool] = ..., replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("targets",)
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    targets: _containers.RepeatedCompositeFieldContainer[ReassignmentTarget]
    def __init__(self, targets: _Optional[_Iterable[_Union[ReassignmentTarget, _Mapping]]] = ...) -> None: ...

class ReassignmentResult(_message.Message):
    __slots__ = ("topic", "partition", "error")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error: Error
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class AlterPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[ReassignmentResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ReassignmentResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class TopicPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "all_partitions", "partitions")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    ALL_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    election_type: int
    all_partitions: bool
    partitions: _containers.RepeatedCompositeFieldContainer[TopicPartition]
    def __init__(self, election_type: _Optional[int] = ..., all_partitions: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[TopicPartition, _Mapping]]] = ...) -> None: ...

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[ReassignmentResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ReassignmentResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class Acl(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("creations",)
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    creations: _containers.RepeatedCompositeFieldContainer[Acl]
    def __init__(self, creations: _Optional[_Iterable[_Union[Acl, _Mapping]]] = ...) -> None: ...

class CreateAclsResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[Error]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[Error, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class DeleteAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[Acl]
    def __init__(self, filters: _Optional[_Iterable[_Union[Acl, _Mapping]]] = ...) -> None: ...

class DeleteAclsResult(_message.Message):
    __slots__ = ("error", "deleted")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    error: Error
    deleted: _containers.RepeatedCompositeFieldContainer[Acl]
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., deleted: _Optional[_Iterable[_Union[Acl, _Mapping]]] = ...) -> None: ...

class DeleteAclsResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[DeleteAclsResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[DeleteAclsResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class ScramCredentialDeletion(_message.Message):
    __slots__ = ("name", "mechanism")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ...) -> None: ...

class ScramCredentialUpsertion(_message.Message):
    __slots__ = ("name", "mechanism", "iterations", "salt", "salted_password")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    SALTED_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ..., iterations: _Optional[int] = ..., salt: _Optional[bytes] = ..., salted_password: _Optional[bytes] = ...) -> None: ...

class AlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("deletions", "upsertions")
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    UPSERTIONS_FIELD_NUMBER: _ClassVar[int]
    deletions: _containers.RepeatedCompositeFieldContainer[ScramCredentialDeletion]
    upsertions: _containers.RepeatedCompositeFieldContainer[ScramCredentialUpsertion]
    def __init__(self, deletions: _Optional[_Iterable[_Union[ScramCredentialDeletion, _Mapping]]] = ..., upsertions: _Optional[_Iterable[_Union[ScramCredentialUpsertion, _Mapping]]] = ...) -> None: ...

class UserResult(_message.Message):
    __slots__ = ("user", "error")
    USER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    user: str
    error: Error
    def __init__(self, user: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class AlterUserScramCredentialsResponse(_message.Message):
    __slots__ = ("error", "controller", "results", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: Error
    controller: ControllerHint
    results: _containers.RepeatedCompositeFieldContainer[UserResult]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[Error, _Mapping]] = ..., controller: _Optional[_Union[ControllerHint, _Mapping]] = ..., results: _Optional[_Iterable[_Union[UserResult, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...
