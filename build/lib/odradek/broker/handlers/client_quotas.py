"""DescribeClientQuotas and AlterClientQuotas (KIP-546) for user, client-id and
user+client-id entities, with defaults.

Quotas live in the metadata log (ClientQuotaRecord). A describe is answered from this
broker's image, as Kafka's brokers do; an alteration is validated here, entity by entity,
and the valid entities' changes are committed by the controller in one batch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import MetadataError
from odradek.security.client_quotas import (
    Entity,
    QuotaRequestError,
    alterations,
    describe_entries,
    entity,
    quota_filter,
)


def handle_describe_client_quotas(context: RequestContext, request: Any) -> Result:
    try:
        wanted = quota_filter(((c.entity_type, c.match_type, c.match)
                               for c in request.components), request.strict)
    except QuotaRequestError as error:
        code = ErrorCode.unsupported_version if error.unsupported else ErrorCode.invalid_request
        return {"error_code": code, "error_message": error.message, "entries": None}
    return {"error_code": ErrorCode.none, "error_message": None, "entries": [
        {"entity": [{"entity_type": kind, "entity_name": name} for kind, name in target],
         "values": [{"key": key, "value": value} for key, value in settings]}
        for target, settings in describe_entries(context.broker.metadata.client_quotas, wanted)]}


def refuse_alter_client_quotas(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """AlterClientQuotas' response has no top-level error code: each entry carries it."""
    return {"entries": [{"error_code": code, "error_message": None, "entity": _entity(entry)}
                        for entry in request.entries]}


def _entity(entry: Any) -> list[dict[str, Any]]:
    return [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entry.entity]


async def handle_alter_client_quotas(context: RequestContext, request: Any) -> Result:
    results: list[dict[str, Any]] = []
    valid: dict[Entity, dict[str, float | None]] = {}
    for entry in request.entries:
        answer: dict[str, Any] = {"error_code": ErrorCode.none, "error_message": None,
                                  "entity": _entity(entry)}
        results.append(answer)
        try:
            target = entity((e.entity_type, e.entity_name) for e in entry.entity)
            changes = alterations((op.key, None if op.remove else op.value) for op in entry.ops)
            if target in valid:
                raise QuotaRequestError(f"Ignoring duplicate entity {target}")
        except QuotaRequestError as error:
            answer.update(error_code=ErrorCode.invalid_request, error_message=error.message)
            continue
        valid[target] = changes
    if valid:
        try:
            await context.services.writer.alter_client_quotas(valid, request.validate_only)
        except MetadataError as error:
            for answer in results:
                if answer["error_code"] == ErrorCode.none:
                    answer.update(error_code=error.error_code, error_message=error.message)
    return {"entries": results}
