"""How a request is charged to its client's quotas and throttled, as Kafka's KafkaApis does:
a produce's request bytes count against `producer_byte_rate`, a fetch's response bytes
against `consumer_byte_rate` (a throttled fetch gets no records), the handler's time against
`request_percentage`, partition mutations against `controller_mutation_rate` (in the topic
handlers). The largest throttle time goes into the response's throttle_time_ms, and the
connection is muted for it once the response is sent (KIP-219).

Exempt, as in Kafka: followers' fetches (they have replication quotas), WriteTxnMarkers (an
inter-broker request) and, from the request quota, acks=0 produces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from odradek.broker.dispatch import EncodedBody, RequestContext, Result
from odradek.broker.handlers.fetch import follower_id
from odradek.security.client_quotas import ClientQuota

PRODUCE, FETCH, WRITE_TXN_MARKERS = 0, 1, 27
THROTTLE_TIME = "throttle_time"
"""The responses' throttle_time_ms field, as kio names it."""


def _who(context: RequestContext) -> tuple[str, str]:
    return context.principal.name, context.header.client_id or ""


class MutationCharge:
    """Charges a request's partition mutations to `controller_mutation_rate` (strict from
    version `strict_since`, as KIP-599 has it): `accepts(permits)` is False while the quota
    is exhausted (the topic gets THROTTLING_QUOTA_EXCEEDED); `throttle_time_ms` is what the
    response reports."""

    def __init__(self, context: RequestContext, strict_since: int) -> None:
        self._quotas = context.services.quotas
        self._who = _who(context)
        self._strict = context.version >= strict_since
        self.throttle_time_ms = 0

    def accepts(self, permits: int) -> bool:
        accepted, delay = self._quotas.controller_mutation.record_mutations(
            *self._who, permits, self._strict, self._quotas.now_ms())
        self.throttle_time_ms = max(self.throttle_time_ms, delay)
        return accepted

    def answer(self, response: dict[str, Any]) -> dict[str, Any]:
        return {**response, THROTTLE_TIME: self.throttle_time_ms}


def throttle(context: RequestContext, request: Any, frame_size: int, result: Result,
             busy_s: float) -> tuple[Result, int]:
    """The response to send, with its throttle time set, and how long to mute the
    connection after it (0: not at all)."""
    quotas = context.services.quotas
    key = context.header.api_key
    if key == WRITE_TXN_MARKERS or (key == FETCH and follower_id(request, context.version) >= 0):
        return result, 0
    user, client_id = _who(context)
    now = quotas.now_ms()
    bandwidth = 0
    bandwidth_quota: ClientQuota = quotas.controller_mutation
    if key == PRODUCE:
        bandwidth_quota = quotas.produce
        bandwidth = quotas.produce.record(user, client_id, frame_size, now)
    elif key == FETCH:
        bandwidth_quota = quotas.fetch
    if isinstance(result, EncodedBody):
        bandwidth = max(bandwidth, result.throttle_time_ms)
    elif isinstance(result, Mapping):
        bandwidth = max(bandwidth, int(result.get(THROTTLE_TIME, 0)))
    exempt = key == PRODUCE and request.acks == 0
    requested = 0 if exempt else quotas.request.record(user, client_id, busy_s * 100, now)
    delay = max(bandwidth, requested)
    if delay <= 0:
        return result, 0
    if bandwidth > requested:
        bandwidth_quota.throttled(user, client_id, delay, now)
    else:
        quotas.request.throttled(user, client_id, delay, now)
    if isinstance(result, EncodedBody):
        if result.throttled is not None and delay > result.throttle_time_ms:
            result = result.throttled(delay)
    elif isinstance(result, Mapping):
        result = {**result, THROTTLE_TIME: delay}
    return result, delay
