"""OffsetForLeaderEpoch: where a leader epoch ends in the leader's log (KIP-101, KIP-320).
Followers ask it before fetching from a new leader; clients ask it to detect truncation."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.access import CLUSTER, TOPIC, Op
from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.broker.handlers.fetch import leader_epoch_error
from odradek.broker.replica_manager import ReplicaManager


def handle_offset_for_leader_epoch(context: RequestContext, request: Any) -> Result:
    """Followers (CLUSTER_ACTION on the cluster) may ask about any topic; others need
    DESCRIBE on each."""
    broker = context.broker
    replicas = context.services.replicas
    names = [topic.topic for topic in request.topics]
    allowed = (set(names) if context.allowed(Op.CLUSTER_ACTION, CLUSTER)
               else context.allowed_names(Op.DESCRIBE, TOPIC, names))
    refused = {"error_code": ErrorCode.topic_authorization_failed}
    return {
        "topics": [
            {
                "topic": topic.topic,
                "partitions": [
                    {"partition": p.partition,
                     **(_end_offset(broker, replicas, topic.topic, p.partition,
                                    p.current_leader_epoch, p.leader_epoch)
                        if topic.topic in allowed else refused)}
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ]
    }


def _end_offset(broker: Broker, replicas: ReplicaManager, topic: str, partition: int,
                current_leader_epoch: int, leader_epoch: int) -> dict[str, Any]:
    log_, code = broker.leader_log(topic, partition)
    if log_ is None:
        return {"error_code": code}
    code = leader_epoch_error(replicas, (topic, partition), current_leader_epoch)
    if code != ErrorCode.none:
        return {"error_code": code}
    epoch, end_offset = log_.leader_epochs.end_offset_for(leader_epoch, log_.log_end_offset)
    return {"error_code": ErrorCode.none, "leader_epoch": epoch, "end_offset": end_offset}
