"""FindCoordinator. Group and transaction coordinators do not exist yet, so every key gets
COORDINATOR_NOT_AVAILABLE, the answer Kafka gives while its coordinator is not loaded.

Serving the API matters even so: librdkafka enables lz4 only against brokers that list
FindCoordinator in ApiVersions.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result

BATCHED_KEYS_VERSION = 4
NOT_AVAILABLE = (
    "The coordinator is not available: Odradek has no group or transaction coordinator yet."
)


def _unavailable(key: str) -> dict[str, Any]:
    return {
        "key": key,
        "node_id": -1,
        "host": "",
        "port": -1,
        "error_code": ErrorCode.coordinator_not_available,
        "error_message": NOT_AVAILABLE,
    }


def handle_find_coordinator(context: RequestContext, request: Any) -> Result:
    if context.version >= BATCHED_KEYS_VERSION:
        return {"coordinators": [_unavailable(key) for key in request.coordinator_keys]}
    return _unavailable(request.key)
