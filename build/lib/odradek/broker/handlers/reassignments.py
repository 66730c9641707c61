"""AlterPartitionReassignments (forwarded to the controller) and ListPartitionReassignments
(answered from this broker's image), KIP-455."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import MetadataError
from odradek.metadata.reassignment import in_progress, original_replicas

Outcome = MetadataError | None


async def handle_alter_partition_reassignments(context: RequestContext, request: Any) -> Result:
    broker = context.broker
    allow_new_factor = getattr(request, "allow_replication_factor_change", True)
    targets: dict[tuple[str, int], tuple[int, ...] | None] = {}
    refused: dict[tuple[str, int], Outcome] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            target = None if partition.replicas is None else tuple(partition.replicas)
            problem = _factor_change(broker, key, target) if not allow_new_factor else None
            if problem is not None:
                refused[key] = problem
            else:
                targets[key] = target
    try:
        writer = context.services.writer
        outcomes = await writer.alter_partition_reassignments(targets) if targets else {}
    except MetadataError as error:
        return {"error_code": error.error_code, "error_message": error.message, "responses": []}
    outcomes.update(refused)
    return {
        "error_code": ErrorCode.none,
        "responses": [
            {"name": topic.name, "partitions": [
                _result(p.partition_index, outcomes.get((topic.name, p.partition_index)))
                for p in topic.partitions]}
            for topic in request.topics
        ],
    }


def _factor_change(broker: Broker, key: tuple[str, int],
                   target: tuple[int, ...] | None) -> Outcome:
    """KIP-860: a request that forbids it may not change a partition's replica count."""
    state = broker.metadata.topics.get(key[0])
    current = state.partitions.get(key[1]) if state is not None else None
    if target is None or current is None or len(target) == len(original_replicas(current)):
        return None
    return MetadataError(ErrorCode.invalid_replication_factor,
                         f"The replication factor of {key[0]}-{key[1]} would change from "
                         f"{len(original_replicas(current))} to {len(target)}")


def _result(index: int, outcome: Outcome) -> dict[str, Any]:
    if outcome is None:
        return {"partition_index": index, "error_code": ErrorCode.none, "error_message": None}
    return {"partition_index": index, "error_code": outcome.error_code,
            "error_message": outcome.message}


def handle_list_partition_reassignments(context: RequestContext, request: Any) -> Result:
    metadata = context.broker.metadata
    wanted = None if request.topics is None else {
        (t.name, p) for t in request.topics for p in t.partition_indexes}
    topics = []
    for name, state in sorted(metadata.topics.items()):
        partitions = [
            {"partition_index": index, "replicas": p.replicas,
             "adding_replicas": p.adding_replicas, "removing_replicas": p.removing_replicas}
            for index, p in sorted(state.partitions.items())
            if in_progress(p) and (wanted is None or (name, index) in wanted)
        ]
        if partitions:
            topics.append({"name": name, "partitions": partitions})
    return {"error_code": ErrorCode.none, "topics": topics}
