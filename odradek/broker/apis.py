"""The broker's API table: each Kafka API, the versions served, and its handler.
ApiVersions answers from this table; nothing else lists versions."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import Api, RequestContext, Result
from odradek.broker.handlers.client_quotas import (
    handle_alter_client_quotas,
    handle_describe_client_quotas,
)
from odradek.broker.handlers.cluster import (
    handle_describe_cluster,
    handle_describe_log_dirs,
    handle_describe_topic_partitions,
)
from odradek.broker.handlers.configs import (
    handle_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from odradek.broker.handlers.delete_records import handle_delete_records
from odradek.broker.handlers.elections import handle_elect_leaders
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
    handle_sync_group,
)
from odradek.broker.handlers.leader_epochs import handle_offset_for_leader_epoch
from odradek.broker.handlers.list_offsets import handle_list_offsets
from odradek.broker.handlers.metadata import handle_metadata
from odradek.broker.handlers.offsets import (
    handle_offset_commit,
    handle_offset_delete,
    handle_offset_fetch,
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
from odradek.broker.handlers.topics import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
)
from odradek.broker.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_describe_producers,
    handle_describe_transactions,
    handle_end_txn,
    handle_init_producer_id,
    handle_list_transactions,
    handle_txn_offset_commit,
    handle_write_txn_markers,
)


def handle_api_versions(context: RequestContext, request: Any) -> Result:
    return {"error_code": ErrorCode.none, "api_keys": api_versions()}


API_TABLE: list[Api] = [
    # Produce v0-v2 are listed but refused, as Kafka 4 does (KAFKA-18659): librdkafka before
    # 2.11 turns compression off unless ApiVersions shows Produce overlapping v0-v2.
    Api(0, 3, 12, handle_produce, advertised_min_version=0),
    Api(1, 4, 17, handle_fetch),
    Api(2, 1, 10, handle_list_offsets),
    Api(3, 0, 12, handle_metadata),
    Api(8, 2, 9, handle_offset_commit),
    Api(9, 1, 9, handle_offset_fetch),
    Api(10, 0, 6, handle_find_coordinator),
    Api(11, 0, 9, handle_join_group),
    Api(12, 0, 4, handle_heartbeat),
    Api(13, 0, 5, handle_leave_group),
    Api(14, 0, 5, handle_sync_group),
    Api(15, 0, 6, handle_describe_groups),
    Api(16, 0, 5, handle_list_groups),
    # SaslHandshake v0 (raw tokens without SaslAuthenticate) is deprecated and refused, but
    # listed: librdkafka before 2.x.y sees no SASL support unless the range includes v0.
    Api(17, 1, 1, handle_sasl_handshake, advertised_min_version=0),
    Api(18, 0, 4, handle_api_versions),
    Api(19, 2, 7, handle_create_topics),
    Api(20, 1, 6, handle_delete_topics),
    Api(21, 0, 2, handle_delete_records),
    Api(22, 0, 5, handle_init_producer_id),
    Api(23, 2, 4, handle_offset_for_leader_epoch),
    Api(24, 0, 5, handle_add_partitions_to_txn),
    Api(25, 0, 4, handle_add_offsets_to_txn),
    Api(26, 0, 5, handle_end_txn),
    Api(27, 1, 1, handle_write_txn_markers),
    Api(28, 0, 5, handle_txn_offset_commit),
    Api(32, 1, 4, handle_describe_configs),
    Api(33, 0, 2, handle_alter_configs),
    Api(35, 1, 4, handle_describe_log_dirs),
    Api(36, 0, 2, handle_sasl_authenticate),
    Api(37, 0, 3, handle_create_partitions),
    Api(42, 0, 2, handle_delete_groups),
    Api(43, 0, 2, handle_elect_leaders),
    Api(44, 0, 1, handle_incremental_alter_configs),
    Api(45, 0, 1, handle_alter_partition_reassignments),
    Api(46, 0, 0, handle_list_partition_reassignments),
    Api(47, 0, 0, handle_offset_delete),
    Api(48, 0, 1, handle_describe_client_quotas),
    Api(49, 0, 1, handle_alter_client_quotas),
    Api(50, 0, 0, handle_describe_user_scram_credentials),
    Api(51, 0, 0, handle_alter_user_scram_credentials),
    Api(55, 0, 2, handle_describe_quorum),
    Api(60, 0, 2, handle_describe_cluster),
    Api(61, 0, 0, handle_describe_producers),
    Api(65, 0, 0, handle_describe_transactions),
    Api(66, 0, 1, handle_list_transactions),
    Api(68, 0, 1, handle_consumer_group_heartbeat),
    Api(69, 0, 1, handle_consumer_group_describe),
    Api(75, 0, 0, handle_describe_topic_partitions),
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
