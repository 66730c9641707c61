"""DescribeQuorum (KIP-595, KIP-836, KIP-853): the metadata log's Raft quorum as its leader
reports it, forwarded to the active controller as Kafka's brokers forward it. The log is
`__cluster_metadata` partition 0; its offsets are the metadata log's."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.controller_client import ControllerUnavailable
from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import METADATA_TOPIC
from odradek.rpc import controller_pb2 as pb

METADATA_PARTITION = 0
NO_DIRECTORY_ID = uuid.UUID(int=0)


def _asks_for_the_metadata_log(request: Any) -> bool:
    """Kafka's check: exactly one topic, the metadata log, with exactly its partition 0."""
    return (len(request.topics) == 1 and request.topics[0].topic_name == METADATA_TOPIC
            and [p.partition_index for p in request.topics[0].partitions]
            == [METADATA_PARTITION])


def _partition_errors(request: Any, code: ErrorCode) -> Result:
    return {"error_code": ErrorCode.none, "topics": [
        {"topic_name": topic.topic_name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code, "error_message": None,
             "leader_id": -1, "leader_epoch": -1, "high_watermark": -1}
            for p in topic.partitions]}
        for topic in request.topics]}


def _replicas(replicas: Iterable[pb.QuorumReplica]) -> list[dict[str, Any]]:
    return [{"replica_id": r.replica_id, "replica_directory_id": NO_DIRECTORY_ID,
             "log_end_offset": r.log_end_offset, "last_fetch_timestamp": r.last_fetch_timestamp,
             "last_caught_up_timestamp": r.last_caught_up_timestamp} for r in replicas]


async def handle_describe_quorum(context: RequestContext, request: Any) -> Result:
    if not _asks_for_the_metadata_log(request):
        return _partition_errors(request, ErrorCode.unknown_topic_or_partition)
    client = context.services.writer.client
    try:
        quorum = await client.call(lambda stub: stub.DescribeQuorum, pb.DescribeQuorumRequest())
    except ControllerUnavailable as failure:
        return {"error_code": ErrorCode.request_timed_out, "error_message": str(failure)}
    if quorum.error.code != ErrorCode.none:
        return {"error_code": ErrorCode(quorum.error.code),
                "error_message": quorum.error.message or None}
    names = context.broker.config["controller.listener.names"]
    assert isinstance(names, list) and names
    return {
        "error_code": ErrorCode.none,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": METADATA_PARTITION,
            "error_code": ErrorCode.none,
            "error_message": None,
            "leader_id": quorum.node_id,
            "leader_epoch": quorum.term,
            "high_watermark": quorum.commit_index,
            "current_voters": _replicas(quorum.voters),
            "observers": _replicas(quorum.observers),
        }]}],
        "nodes": _nodes(names[0], client.voters, quorum.voters),
    }


def _nodes(listener: str, endpoints: Mapping[int, tuple[str, int]],
           voters: Iterable[pb.QuorumReplica]) -> list[dict[str, Any]]:
    """v2: each voter's controller listener, from controller.quorum.voters."""
    return [{"node_id": v.replica_id, "listeners": [
        {"name": listener, "host": endpoints[v.replica_id][0],
         "port": endpoints[v.replica_id][1]}]}
        for v in voters if v.replica_id in endpoints]
