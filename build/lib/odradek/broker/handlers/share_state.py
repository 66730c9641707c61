"""The share-group state APIs share-partition leaders call on the share coordinator:
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary. As in Kafka's ShareCoordinatorService,
each partition of a request is served by the shard of its key ("group:topicId:partition")
and answered on its own: NOT_COORDINATOR where another broker leads that key's partition of
`__share_group_state`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.coordinator_runtime import CoordinatorUnavailable
from odradek.broker.dispatch import RequestContext, Result
from odradek.share.coordinator import Output, ReadResult, ShareCoordinatorShard, SummaryResult
from odradek.share.coordinator import Result as PartitionResult
from odradek.share.records import SharePartitionKey, StateBatch

EMPTY_GROUP = "Group id must be specified and non-empty"

Served = PartitionResult | ReadResult | SummaryResult
Handler = Callable[[ShareCoordinatorShard, int], tuple[Served, Output]]


async def _each_partition(context: RequestContext, request: Any,
                          serve: Callable[[SharePartitionKey, Any], Handler],
                          answer: Callable[[Served], dict[str, Any]]) -> Result:
    """Serve every partition of the request on its key's shard, in parallel."""
    runtime = context.services.shares
    await runtime.ensure_loaded()

    async def one(topic_id: Any, partition: Any) -> dict[str, Any]:
        key = SharePartitionKey(request.group_id, str(topic_id), partition.partition)
        served: Served
        if not request.group_id:
            served = PartitionResult(ErrorCode.invalid_request, EMPTY_GROUP)
        else:
            try:
                served = await runtime.run(key.coordinator_key, serve(key, partition))
            except CoordinatorUnavailable as error:
                served = PartitionResult(error.error_code, None)
        return {"partition": partition.partition, **answer(served)}

    async def topic(data: Any) -> dict[str, Any]:
        partitions: list[Awaitable[dict[str, Any]]] = [one(data.topic_id, p)
                                                       for p in data.partitions]
        return {"topic_id": data.topic_id, "partitions": list(await asyncio.gather(*partitions))}

    return {"results": list(await asyncio.gather(*(topic(t) for t in request.topics)))}


def refuse_share_state(request: Any, code: ErrorCode) -> dict[str, Any]:
    """Every partition of a refused request answered with the refusal's error."""
    return {"results": [{"topic_id": t.topic_id, "partitions": [
        {"partition": p.partition, "error_code": code, "error_message": None}
        for p in t.partitions]} for t in request.topics]}


def _error(served: Served) -> dict[str, Any]:
    return {"error_code": served.error, "error_message": served.message}


def _batches(batches: tuple[StateBatch, ...]) -> list[dict[str, int]]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset,
             "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
            for b in batches]


async def handle_initialize_share_group_state(context: RequestContext, request: Any) -> Result:
    return await _each_partition(context, request, lambda key, p: lambda shard, now: (
        shard.initialize_state(key, p.state_epoch, p.start_offset, now)), _error)


async def handle_read_share_group_state(context: RequestContext, request: Any) -> Result:
    def answer(served: Served) -> dict[str, Any]:
        read = served if isinstance(served, ReadResult) else ReadResult(served.error,
                                                                        served.message)
        return {**_error(read), "state_epoch": read.state_epoch,
                "start_offset": read.start_offset, "state_batches": _batches(read.state_batches)}

    writes = context.services.shares.metrics.writes

    def serve(key: SharePartitionKey, p: Any) -> Handler:
        def read(shard: ShareCoordinatorShard, now: int) -> tuple[Served, Output]:
            result, out = shard.read_state(key, p.leader_epoch, now)
            if out.records:  # a new leader's epoch recorded: a write, as Kafka counts it
                writes.inc()
            return result, out
        return read

    return await _each_partition(context, request, serve, answer)


async def handle_write_share_group_state(context: RequestContext, request: Any) -> Result:
    metrics = context.services.shares.metrics

    def serve(key: SharePartitionKey, p: Any) -> Handler:
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in p.state_batches]
        complete = getattr(p, "delivery_complete_count", -1)

        def write(shard: ShareCoordinatorShard, now: int) -> tuple[Served, Output]:
            metrics.writes.inc()
            return shard.write_state(key, p.state_epoch, p.leader_epoch, p.start_offset,
                                     complete, batches, now)
        return write

    start = time.monotonic()
    response = await _each_partition(context, request, serve, _error)
    metrics.record_latency((time.monotonic() - start) * 1000)
    return response


async def handle_delete_share_group_state(context: RequestContext, request: Any) -> Result:
    return await _each_partition(context, request, lambda key, p: lambda shard, now: (
        shard.delete_state(key)), _error)


async def handle_read_share_group_state_summary(context: RequestContext,
                                                request: Any) -> Result:
    def answer(served: Served) -> dict[str, Any]:
        summary = served if isinstance(served, SummaryResult) else SummaryResult(
            served.error, served.message)
        return {**_error(summary), "state_epoch": summary.state_epoch,
                "leader_epoch": summary.leader_epoch, "start_offset": summary.start_offset,
                "delivery_complete_count": summary.delivery_complete_count}

    return await _each_partition(context, request, lambda key, p: lambda shard, now: (
        shard.read_state_summary(key)), answer)
