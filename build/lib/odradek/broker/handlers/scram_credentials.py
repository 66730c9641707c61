"""AlterUserScramCredentials (forwarded to the controller) and DescribeUserScramCredentials
(answered from this broker's metadata image), KIP-554. Descriptions name each credential's
mechanism and iterations only."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.image import MetadataError


async def handle_alter_user_scram_credentials(context: RequestContext, request: Any) -> Result:
    deletions = [(d.name, int(d.mechanism)) for d in request.deletions]
    upsertions = [(u.name, int(u.mechanism), int(u.iterations), bytes(u.salt),
                   bytes(u.salted_password)) for u in request.upsertions]
    users = [name for name, *_ in deletions] + [name for name, *_ in upsertions]
    try:
        outcomes = await context.services.writer.alter_user_scram_credentials(deletions,
                                                                                upsertions)
    except MetadataError as error:
        outcomes = [(user, error.error_code, error.message) for user in dict.fromkeys(users)]
    return {"results": [{"user": user, "error_code": code, "error_message": message}
                        for user, code, message in outcomes]}


def handle_describe_user_scram_credentials(context: RequestContext, request: Any) -> Result:
    credentials = context.broker.metadata.scram_credentials
    described: dict[str, list[dict[str, int]]] = {}
    for (user, mechanism), record in sorted(credentials.items()):
        described.setdefault(user, []).append(
            {"mechanism": mechanism, "iterations": record.iterations})
    # no users (null or empty) describes every user's credentials
    wanted = [user.name for user in request.users or ()] or list(described)
    counts = Counter(wanted)
    results = []
    for user in dict.fromkeys(wanted):
        if counts[user] > 1:
            results.append(_failed(user, ErrorCode.duplicate_resource, "Cannot describe SCRAM "
                                   "credentials for the same user twice in a single request"))
        elif user not in described:
            results.append(_failed(user, ErrorCode.resource_not_found,
                                   f"Attempt to describe a user credential that does not "
                                   f"exist: {user}"))
        else:
            results.append({"user": user, "error_code": ErrorCode.none, "error_message": None,
                            "credential_infos": described[user]})
    return {"error_code": ErrorCode.none, "error_message": None, "results": results}


def _failed(user: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message,
            "credential_infos": []}
