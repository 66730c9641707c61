"""DescribeAcls, CreateAcls and DeleteAcls (KIP-140). DescribeAcls answers from this broker's
metadata image; creations and deletions are forwarded to the active controller, which writes
them to the metadata log. Without an authorizer all three answer SECURITY_DISABLED, as
Kafka's do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import MetadataError
from odradek.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
    from_code,
    validate_filter,
)

NO_AUTHORIZER = "No Authorizer is configured."


def _filter(request: Any) -> AclFilter:
    """A DescribeAcls request's or a DeleteAcls filter's fields as an AclFilter."""
    return AclFilter(
        from_code(ResourceType, request.resource_type_filter), request.resource_name_filter,
        from_code(PatternType, getattr(request, "pattern_type_filter", PatternType.LITERAL)),
        request.principal_filter, request.host_filter,
        from_code(AclOperation, request.operation),
        from_code(AclPermissionType, request.permission_type))


def _entry(acl: AclBinding) -> dict[str, Any]:
    return {"principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
            "permission_type": int(acl.permission_type)}


def _pattern(acl: AclBinding) -> dict[str, Any]:
    return {"resource_type": int(acl.resource_type), "resource_name": acl.resource_name,
            "pattern_type": int(acl.pattern_type)}


def handle_describe_acls(context: RequestContext, request: Any) -> Result:
    if context.services.authorizer is None:
        return {"error_code": ErrorCode.security_disabled, "error_message": NO_AUTHORIZER}
    acl_filter = _filter(request)
    try:
        validate_filter(acl_filter)
    except InvalidAclError as error:
        return {"error_code": ErrorCode.invalid_request, "error_message": str(error)}
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in context.broker.metadata.acls.values():
        if acl_filter.matches(acl):
            key = (acl.resource_type, acl.resource_name, acl.pattern_type)
            resources.setdefault(key, []).append(_entry(acl))
    return {"error_code": ErrorCode.none, "resources": [
        {"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
        for (t, n, p), acls in sorted(resources.items())]}


def refuse_create_acls(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    return {"results": [{"error_code": code} for _ in request.creations]}


async def handle_create_acls(context: RequestContext, request: Any) -> Result:
    if context.services.authorizer is None:
        return {"results": [{"error_code": ErrorCode.security_disabled,
                             "error_message": NO_AUTHORIZER} for _ in request.creations]}
    acls = [AclBinding(from_code(ResourceType, c.resource_type), c.resource_name,
                       from_code(PatternType, getattr(c, "resource_pattern_type",
                                                   PatternType.LITERAL)),
                       c.principal, c.host, from_code(AclOperation, c.operation),
                       from_code(AclPermissionType, c.permission_type))
            for c in request.creations]
    try:
        outcomes = await context.services.writer.create_acls(acls)
    except MetadataError as error:
        return {"results": [_failure(error) for _ in acls]}
    return {"results": [{"error_code": ErrorCode.none} if outcome is None else _failure(outcome)
                        for outcome in outcomes]}


def refuse_delete_acls(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    return {"filter_results": [{"error_code": code} for _ in request.filters]}


async def handle_delete_acls(context: RequestContext, request: Any) -> Result:
    if context.services.authorizer is None:
        return {"filter_results": [{"error_code": ErrorCode.security_disabled,
                                    "error_message": NO_AUTHORIZER} for _ in request.filters]}
    filters = [_filter(f) for f in request.filters]
    try:
        outcomes = await context.services.writer.delete_acls(filters)
    except MetadataError as error:
        return {"filter_results": [_failure(error) for _ in filters]}
    return {"filter_results": [
        _failure(outcome) if isinstance(outcome, MetadataError) else
        {"error_code": ErrorCode.none,
         "matching_acls": [{"error_code": ErrorCode.none, **_pattern(acl), **_entry(acl)}
                           for acl in outcome]}
        for outcome in outcomes]}


def _failure(error: MetadataError) -> dict[str, Any]:
    return {"error_code": error.error_code, "error_message": error.message}
