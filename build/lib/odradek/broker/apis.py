"""The broker's API table: each Kafka API, the versions served, and its handler.
ApiVersions answers from this table; nothing else lists versions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import (
    CLUSTER,
    GROUP,
    PUBLIC,
    TOPIC,
    TXN,
    Access,
    Op,
    checks,
    cluster,
    group,
    top_level_error,
    transactional_id,
)
from odradek.broker.dispatch import Api, RequestContext, Result
from odradek.broker.features import feature_fields
from odradek.broker.handlers.acls import (
    handle_create_acls,
    handle_delete_acls,
    handle_describe_acls,
    refuse_create_acls,
    refuse_delete_acls,
)
from odradek.broker.handlers.client_quotas import (
    handle_alter_client_quotas,
    handle_describe_client_quotas,
    refuse_alter_client_quotas,
)
from odradek.broker.handlers.cluster import (
    handle_describe_cluster,
    handle_describe_log_dirs,
    handle_describe_topic_partitions,
    refuse_describe_log_dirs,
)
from odradek.broker.handlers.config_resources import handle_list_config_resources
from odradek.broker.handlers.configs import (
    handle_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from odradek.broker.handlers.delete_records import handle_delete_records
from odradek.broker.handlers.elections import handle_elect_leaders, refuse_elect_leaders
from odradek.broker.handlers.fetch import handle_fetch
from odradek.broker.handlers.groups import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
    handle_delete_groups,
    handle_describe_groups,
    handle_find_coordinator,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_list_groups,
    handle_share_group_describe,
    handle_share_group_heartbeat,
    handle_sync_group,
)
from odradek.broker.handlers.leader_epochs import handle_offset_for_leader_epoch
from odradek.broker.handlers.list_offsets import handle_list_offsets
from odradek.broker.handlers.metadata import handle_metadata
from odradek.broker.handlers.offsets import (
    handle_offset_commit,
    handle_offset_delete,
    handle_offset_fetch,
    refuse_offset_commit,
)
from odradek.broker.handlers.produce import handle_produce
from odradek.broker.handlers.quorum import handle_describe_quorum
from odradek.broker.handlers.reassignments import (
    handle_alter_partition_reassignments,
    handle_list_partition_reassignments,
)
from odradek.broker.handlers.sasl import handle_sasl_authenticate, handle_sasl_handshake
from odradek.broker.handlers.scram_credentials import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from odradek.broker.handlers.share import handle_share_acknowledge, handle_share_fetch
from odradek.broker.handlers.share_offsets import (
    handle_alter_share_group_offsets,
    handle_delete_share_group_offsets,
    handle_describe_share_group_offsets,
    refuse_with_message,
)
from odradek.broker.handlers.share_state import (
    handle_delete_share_group_state,
    handle_initialize_share_group_state,
    handle_read_share_group_state,
    handle_read_share_group_state_summary,
    handle_write_share_group_state,
    refuse_share_state,
)
from odradek.broker.handlers.topics import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from odradek.broker.handlers.transactions import (
    fenced_as_invalid_epoch,
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_describe_producers,
    handle_describe_transactions,
    handle_end_txn,
    handle_init_producer_id,
    handle_list_transactions,
    handle_txn_offset_commit,
    handle_write_txn_markers,
    refuse_txn_offset_commit,
    refuse_write_txn_markers,
)


def refuse_describe_user_scram_credentials(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """Each user named refused; the top-level error only when none is named. Kafka sets the
    top-level error in both cases, but librdkafka (confluent-kafka 2.16) crashes the client
    on a top-level error when it named users; a Java client reads either form as each user
    refused."""
    refusal = top_level_error(request, code)
    if not request.users:
        return refusal
    return {"error_code": ErrorCode.none, "error_message": None, "results": [
        {"user": user.name, **refusal, "credential_infos": []} for user in request.users]}


def refuse_alter_user_scram_credentials(request: Any, code: ErrorCode) -> dict[str, Any]:
    """Each user named, refused (the response has no top-level error code)."""
    users = dict.fromkeys(c.name for c in (*request.deletions, *request.upsertions))
    return {"results": [{"user": user, "error_code": code} for user in users]}


def handle_api_versions(context: RequestContext, request: Any) -> Result:
    return {"error_code": ErrorCode.none, "api_keys": api_versions(),
            **feature_fields(context.header.api_version,
                             context.services.broker.metadata_offset)}


API_TABLE: list[Api] = [
    # Produce v0-v2 are listed but refused, as Kafka 4 does (KAFKA-18659): librdkafka before
    # 2.11 turns compression off unless ApiVersions shows Produce overlapping v0-v2.
    Api(0, 3, 12, handle_produce, advertised_min_version=0,
        access=Access(checks=checks((TXN, Op.WRITE), (TOPIC, Op.WRITE)))),
    Api(1, 4, 17, handle_fetch,
        access=Access(checks=checks((CLUSTER, Op.CLUSTER_ACTION), (TOPIC, Op.READ)))),
    Api(2, 1, 10, handle_list_offsets, access=Access(checks=checks((TOPIC, Op.DESCRIBE)))),
    Api(3, 0, 12, handle_metadata, access=Access(checks=checks(
        (TOPIC, Op.DESCRIBE), (CLUSTER, Op.CREATE), (TOPIC, Op.CREATE)))),
    Api(8, 2, 9, handle_offset_commit, access=Access(
        gates=(group(Op.READ),), checks=checks((TOPIC, Op.READ)),
        refusal=refuse_offset_commit)),
    Api(9, 1, 9, handle_offset_fetch,
        access=Access(checks=checks((GROUP, Op.DESCRIBE), (TOPIC, Op.DESCRIBE)))),
    Api(10, 0, 6, handle_find_coordinator, access=Access(checks=checks(
        (GROUP, Op.DESCRIBE), (TXN, Op.DESCRIBE), (CLUSTER, Op.CLUSTER_ACTION)))),
    Api(11, 0, 9, handle_join_group, access=Access(gates=(group(Op.READ),))),
    Api(12, 0, 4, handle_heartbeat, access=Access(gates=(group(Op.READ),))),
    Api(13, 0, 5, handle_leave_group, access=Access(gates=(group(Op.READ),))),
    Api(14, 0, 5, handle_sync_group, access=Access(gates=(group(Op.READ),))),
    Api(15, 0, 6, handle_describe_groups, access=Access(checks=checks((GROUP, Op.DESCRIBE)))),
    Api(16, 0, 5, handle_list_groups,
        access=Access(checks=checks((CLUSTER, Op.DESCRIBE), (GROUP, Op.DESCRIBE)))),
    # SaslHandshake v0 (raw tokens without SaslAuthenticate) is deprecated and refused, but
    # listed: librdkafka before 2.x.y sees no SASL support unless the range includes v0.
    Api(17, 1, 1, handle_sasl_handshake, advertised_min_version=0, access=PUBLIC),
    Api(18, 0, 4, handle_api_versions, access=PUBLIC),
    Api(19, 2, 7, handle_create_topics, access=Access(checks=checks(
        (CLUSTER, Op.CREATE), (TOPIC, Op.CREATE), (TOPIC, Op.DESCRIBE_CONFIGS)))),
    Api(20, 1, 6, handle_delete_topics,
        access=Access(checks=checks((TOPIC, Op.DELETE), (TOPIC, Op.DESCRIBE)))),
    Api(21, 0, 2, handle_delete_records, access=Access(checks=checks((TOPIC, Op.DELETE)))),
    Api(22, 0, 5, fenced_as_invalid_epoch(handle_init_producer_id, 4), access=Access(checks=checks(
        (TXN, Op.WRITE), (CLUSTER, Op.IDEMPOTENT_WRITE), (TOPIC, Op.WRITE)))),
    Api(23, 2, 4, handle_offset_for_leader_epoch,
        access=Access(checks=checks((CLUSTER, Op.CLUSTER_ACTION), (TOPIC, Op.DESCRIBE)))),
    Api(24, 0, 5, fenced_as_invalid_epoch(handle_add_partitions_to_txn, 2),
        access=Access(checks=checks(
        (TXN, Op.WRITE), (TOPIC, Op.WRITE), (CLUSTER, Op.CLUSTER_ACTION)))),
    Api(25, 0, 4, fenced_as_invalid_epoch(handle_add_offsets_to_txn, 2),
        access=Access(gates=(transactional_id(Op.WRITE), group(Op.READ)))),
    Api(26, 0, 5, fenced_as_invalid_epoch(handle_end_txn, 2),
        access=Access(gates=(transactional_id(Op.WRITE),))),
    Api(27, 1, 1, handle_write_txn_markers, access=Access(
        gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_write_txn_markers)),
    Api(28, 0, 5, handle_txn_offset_commit, access=Access(
        gates=(transactional_id(Op.WRITE), group(Op.READ)), checks=checks((TOPIC, Op.READ)),
        refusal=refuse_txn_offset_commit)),
    Api(29, 1, 3, handle_describe_acls, access=Access(gates=(cluster(Op.DESCRIBE),))),
    Api(30, 1, 3, handle_create_acls,
        access=Access(gates=(cluster(Op.ALTER),), refusal=refuse_create_acls)),
    Api(31, 1, 3, handle_delete_acls,
        access=Access(gates=(cluster(Op.ALTER),), refusal=refuse_delete_acls)),
    Api(32, 1, 4, handle_describe_configs, access=Access(checks=checks(
        (TOPIC, Op.DESCRIBE_CONFIGS), (GROUP, Op.DESCRIBE_CONFIGS),
        (CLUSTER, Op.DESCRIBE_CONFIGS)))),
    Api(33, 0, 2, handle_alter_configs, access=Access(checks=checks(
        (TOPIC, Op.ALTER_CONFIGS), (GROUP, Op.ALTER_CONFIGS), (CLUSTER, Op.ALTER_CONFIGS)))),
    Api(35, 1, 4, handle_describe_log_dirs,
        access=Access(gates=(cluster(Op.DESCRIBE),), refusal=refuse_describe_log_dirs)),
    Api(36, 0, 2, handle_sasl_authenticate, access=PUBLIC),
    Api(37, 0, 3, handle_create_partitions, access=Access(checks=checks((TOPIC, Op.ALTER)))),
    Api(42, 0, 2, handle_delete_groups, access=Access(checks=checks((GROUP, Op.DELETE)))),
    Api(43, 0, 2, handle_elect_leaders,
        access=Access(gates=(cluster(Op.ALTER),), refusal=refuse_elect_leaders)),
    Api(44, 0, 1, handle_incremental_alter_configs, access=Access(checks=checks(
        (TOPIC, Op.ALTER_CONFIGS), (GROUP, Op.ALTER_CONFIGS), (CLUSTER, Op.ALTER_CONFIGS)))),
    Api(45, 0, 1, handle_alter_partition_reassignments,
        access=Access(gates=(cluster(Op.ALTER),))),
    Api(46, 0, 0, handle_list_partition_reassignments,
        access=Access(gates=(cluster(Op.DESCRIBE),))),
    Api(47, 0, 0, handle_offset_delete,
        access=Access(gates=(group(Op.DELETE),), checks=checks((TOPIC, Op.READ)))),
    Api(48, 0, 1, handle_describe_client_quotas,
        access=Access(gates=(cluster(Op.DESCRIBE_CONFIGS),))),
    Api(49, 0, 1, handle_alter_client_quotas, access=Access(
        gates=(cluster(Op.ALTER_CONFIGS),), refusal=refuse_alter_client_quotas)),
    Api(50, 0, 0, handle_describe_user_scram_credentials, access=Access(
        gates=(cluster(Op.DESCRIBE),), refusal=refuse_describe_user_scram_credentials)),
    Api(51, 0, 0, handle_alter_user_scram_credentials, access=Access(
        gates=(cluster(Op.ALTER),), refusal=refuse_alter_user_scram_credentials)),
    Api(55, 0, 2, handle_describe_quorum, access=Access(gates=(cluster(Op.DESCRIBE),))),
    Api(60, 0, 2, handle_describe_cluster, access=Access(checks=checks((CLUSTER, Op.DESCRIBE)))),
    Api(61, 0, 0, handle_describe_producers, access=Access(checks=checks((TOPIC, Op.READ)))),
    Api(65, 0, 0, handle_describe_transactions,
        access=Access(checks=checks((TXN, Op.DESCRIBE), (TOPIC, Op.DESCRIBE)))),
    Api(66, 0, 1, handle_list_transactions, access=Access(checks=checks((TXN, Op.DESCRIBE)))),
    Api(68, 0, 1, handle_consumer_group_heartbeat, access=Access(gates=(group(Op.READ),))),
    Api(69, 0, 1, handle_consumer_group_describe,
        access=Access(checks=checks((GROUP, Op.DESCRIBE)))),
    Api(74, 0, 1, handle_list_config_resources,
        access=Access(gates=(cluster(Op.DESCRIBE_CONFIGS),))),
    Api(75, 0, 0, handle_describe_topic_partitions,
        access=Access(checks=checks((TOPIC, Op.DESCRIBE)))),
    # Kafka 4.1+ serves only v1 of the share group APIs (v0 was 4.0's early access).
    Api(76, 1, 1, handle_share_group_heartbeat,
        access=Access(gates=(group(Op.READ),), checks=checks((TOPIC, Op.DESCRIBE)))),
    Api(77, 1, 1, handle_share_group_describe, access=Access(checks=checks((GROUP, Op.DESCRIBE)))),
    Api(78, 1, 2, handle_share_fetch,
        access=Access(gates=(group(Op.READ),), checks=checks((TOPIC, Op.READ)))),
    Api(79, 1, 2, handle_share_acknowledge,
        access=Access(gates=(group(Op.READ),), checks=checks((TOPIC, Op.READ)))),
    # The share coordinator's state APIs, called by share-partition leaders (inter-broker).
    Api(83, 0, 0, handle_initialize_share_group_state,
        access=Access(gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_share_state)),
    Api(84, 0, 0, handle_read_share_group_state,
        access=Access(gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_share_state)),
    Api(85, 0, 1, handle_write_share_group_state,
        access=Access(gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_share_state)),
    Api(86, 0, 0, handle_delete_share_group_state,
        access=Access(gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_share_state)),
    Api(87, 0, 1, handle_read_share_group_state_summary,
        access=Access(gates=(cluster(Op.CLUSTER_ACTION),), refusal=refuse_share_state)),
    # The share-group offsets admin APIs (kafka-share-groups.sh, Admin).
    Api(90, 0, 1, handle_describe_share_group_offsets,
        access=Access(checks=checks((GROUP, Op.DESCRIBE), (TOPIC, Op.DESCRIBE)))),
    Api(91, 0, 0, handle_alter_share_group_offsets, access=Access(
        gates=(group(Op.READ),), checks=checks((TOPIC, Op.READ)), refusal=refuse_with_message)),
    Api(92, 0, 0, handle_delete_share_group_offsets, access=Access(
        gates=(group(Op.DELETE),), checks=checks((TOPIC, Op.READ)), refusal=refuse_with_message)),
]


def api_versions() -> list[dict[str, int]]:
    return [
        {
            "api_key": api.key,
            "min_version": api.min_version
            if api.advertised_min_version is None
            else api.advertised_min_version,
            "max_version": api.max_version,
        }
        for api in sorted(API_TABLE, key=lambda a: a.key)
    ]
