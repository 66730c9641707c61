"""The broker's services, built once by the app in dependency order and handed to every
request handler through its `RequestContext`."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.authorization import BrokerAuthorizer
from odradek.broker.broker import Broker
from odradek.broker.group_runtime import GroupCoordinatorRuntime
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.producer_ids import ProducerIdManager
from odradek.broker.quota_manager import QuotaManager
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.share_fetch import SharePartitionManager
from odradek.broker.share_runtime import ShareCoordinatorRuntime
from odradek.broker.txn_markers import MarkerWriter
from odradek.broker.txn_runtime import TransactionCoordinatorRuntime


@dataclass(frozen=True, slots=True)
class BrokerServices:
    broker: Broker
    """The state: config, metadata image, partition logs, waiters and metrics."""
    replicas: ReplicaManager
    """Leadership, high watermarks, leader appends and follower fetching."""
    writer: MetadataWriter
    """Admin writes, forwarded to the controller."""
    producer_ids: ProducerIdManager
    """Producer id blocks from the controller."""
    groups: GroupCoordinatorRuntime
    txns: TransactionCoordinatorRuntime
    markers: MarkerWriter
    """Transaction markers appended to partitions this broker leads."""
    quotas: QuotaManager
    """The client quotas' measurements (produce, fetch, request, controller mutation)."""
    shares: ShareCoordinatorRuntime
    """The share coordinator: share groups' state in `__share_group_state`."""
    share_partitions: SharePartitionManager
    """The share-partitions this broker leads, and its members' share sessions."""
    authorizer: BrokerAuthorizer | None = None
    """The ACLs' decisions; None when `authorizer.class.name` is empty."""
