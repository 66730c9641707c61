"""ElectLeaders (KIP-460): preferred or unclean leader elections, forwarded to the controller;
the answer comes once this broker has applied the outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import MetadataError


async def handle_elect_leaders(context: RequestContext, request: Any) -> Result:
    election_type = int(getattr(request, "election_type", 0))  # v0: preferred only
    partitions = None if request.topic_partitions is None else [
        (t.topic, p) for t in request.topic_partitions for p in t.partitions]
    try:
        outcomes = await context.services.writer.elect_leaders(election_type, partitions)
    except MetadataError as error:
        return {"error_code": error.error_code, "replica_election_results": []}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), failure in outcomes.items():
        by_topic.setdefault(topic, []).append({
            "partition_id": partition,
            "error_code": ErrorCode.none if failure is None else failure.error_code,
            "error_message": None if failure is None else failure.message,
        })
    return {
        "error_code": ErrorCode.none,
        "replica_election_results": [
            {"topic": topic, "partition_result": results} for topic, results in by_topic.items()
        ],
    }


def refuse_elect_leaders(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """The error on the request and on each partition it names (v0 has no top-level one)."""
    return {"error_code": code, "replica_election_results": [
        {"topic": t.topic, "partition_result": [
            {"partition_id": p, "error_code": code} for p in t.partitions]}
        for t in request.topic_partitions or ()]}
