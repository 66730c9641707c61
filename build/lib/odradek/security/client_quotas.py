"""Client quotas without IO, as Kafka defines them (KIP-13, KIP-55, KIP-124, KIP-546, KIP-599).

A quota entity is a user, a client id, or both; either may be the default (`<default>`, a
name of None). The quota keys are `producer_byte_rate`, `consumer_byte_rate` (bytes per
second), `request_percentage` (percent of one request thread) and `controller_mutation_rate`
(partitions created or deleted per second).

Which quota applies to a connection's (user, client id) is the first entity set in Kafka's
order: user+client id, user+default client id, user, default user+client id, default
user+default client id, default user, client id, default client id. The metric tags (user,
client-id) a quota's usage is measured under follow Kafka's DefaultQuotaCallback: when only
one kind of entity carries the quota, the tags name only what that kind names, so every
connection of a user (or client id) shares one measurement."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from odradek.security.quota_rate import SampledStat, TokenBucket, throttle_time_ms

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS: dict[str, bool] = {
    PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False, CONTROLLER_MUTATION_RATE: False,
}
"""Kafka's user and client-id quota configs, and whether each is integral (LONG, else DOUBLE)."""
LONG_MAX = 2**63 - 1
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
"""DescribeClientQuotas' match types."""
SENSOR_EXPIRY_MS = 3600 * 1000
"""Kafka drops a client's quota sensors after an hour without use."""
THROTTLE_TIME_SAMPLES, THROTTLE_TIME_WINDOW_MS = 2, 30000
"""The throttle-time average uses Kafka's default metric window (metrics.num.samples x
metrics.sample.window.ms)."""

Entity = tuple[tuple[str, str | None], ...]
"""A quota entity: (entity type, name or None for the default) pairs, sorted by type."""
Tags = tuple[str, str]
"""The (user, client-id) metric tags a quota is measured under; "" where a tag is unused."""


class QuotaRequestError(ValueError):
    """An entity, filter or value Kafka refuses (INVALID_REQUEST, or UNSUPPORTED_VERSION for an
    unknown entity type in a filter: `unsupported`)."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.unsupported = unsupported


def entity(components: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity named by AlterClientQuotas' (type, name) components, checked as Kafka's
    controller checks them. IP entities (connection_creation_rate) are not served."""
    seen: dict[str, str | None] = {}
    for kind, name in components:
        if kind in seen:
            raise QuotaRequestError(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind == IP:
            raise QuotaRequestError("IP quotas (connection_creation_rate) are not supported")
        if kind not in (USER, CLIENT_ID):
            raise QuotaRequestError(f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise QuotaRequestError(f"Empty {kind} not supported")
        seen[kind] = name
    if not seen:
        raise QuotaRequestError("Invalid empty client quota entity")
    return tuple(sorted(seen.items()))


def entity_text(target: Entity) -> str:
    """An entity as Kafka's tools print it: `user=alice, client-id=<default>`."""
    return ", ".join(f"{kind}={'<default>' if name is None else name}"
                     for kind, name in sorted(target, key=lambda c: c[0] != USER))


def value_problem(key: str, value: float) -> str | None:
    """Why a quota value is refused, as Kafka's ClientQuotaControlManager words it."""
    integral = QUOTA_KEYS.get(key)
    if integral is None:
        return f"Invalid configuration key {key}"
    if not value > 0.0:
        return f"Quota {key} must be greater than 0"
    if math.isinf(value) or math.isnan(value):
        return f"Quota {key} must be a finite number"
    if integral:
        if value > LONG_MAX:
            return f"Proposed value for {key} is too large for a LONG."
        if abs(value % 1.0) > 1e-6:
            return f"{key} cannot be a fractional value."
    return None


def alterations(ops: Iterable[tuple[str, float | None]]) -> dict[str, float | None]:
    """One entity's changes (None removes a key); a key named twice is refused."""
    changes: dict[str, float | None] = {}
    for key, value in ops:
        if key in changes:
            raise QuotaRequestError(f"Duplicate quota key {key} not updating quota for this "
                                    "entity")
        if value is not None:
            problem = value_problem(key, value)
            if problem:
                raise QuotaRequestError(problem)
        changes[key] = value
    return changes


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    """DescribeClientQuotas' filter: entity types that must have this name (None: the
    default), types that must be present with any name, and `strict` (no other types)."""

    exact: Mapping[str, str | None]
    specified: frozenset[str]
    strict: bool

    def matches(self, target: Entity) -> bool:
        names = dict(target)
        if self.strict and len(names) != len(self.exact) + len(self.specified):
            return False
        return (all(kind in names and names[kind] == name for kind, name in self.exact.items())
                and all(kind in names for kind in self.specified))


def quota_filter(components: Iterable[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
    """A filter from (entity type, match type, match) components, checked as Kafka does."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for kind, match_type, match in components:
        if not kind:
            raise QuotaRequestError("Invalid empty entity type.")
        if kind in exact or kind in specified:
            raise QuotaRequestError(f"Entity type {kind} cannot appear more than once in the "
                                    "filter.")
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaRequestError(f"Unsupported entity type {kind}", unsupported=True)
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaRequestError("Request specified MATCH_TYPE_EXACT, but set match "
                                        "string to null.")
            exact[kind] = match
        elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
            if match is not None:
                name = "MATCH_TYPE_DEFAULT" if match_type == MATCH_DEFAULT else \
                    "MATCH_TYPE_SPECIFIED"
                raise QuotaRequestError(f"Request specified {name}, but also specified a "
                                        "match string.")
            if match_type == MATCH_DEFAULT:
                exact[kind] = None
            else:
                specified.add(kind)
        else:
            raise QuotaRequestError(f"Unknown match type {match_type}")
    if (IP in exact or IP in specified) and (exact.keys() - {IP} or specified - {IP}):
        raise QuotaRequestError("Invalid entity filter component combination. IP filter "
                                "component should not be used with user or clientId "
                                "filter component.")
    return QuotaFilter(exact, frozenset(specified), strict)


def _key(user: str | None | bool, client_id: str | None | bool) -> Entity:
    """The entity of a user and/or client id: a name, None (the default) or False (absent)."""
    parts: list[tuple[str, str | None]] = []
    if client_id is not False:
        parts.append((CLIENT_ID, client_id))  # type: ignore[arg-type]
    if user is not False:
        parts.append((USER, user))  # type: ignore[arg-type]
    return tuple(parts)


@dataclass(slots=True)
class QuotaIndex:
    """The entities that set one quota key, and which kinds of entity those are."""

    values: dict[Entity, float] = field(default_factory=dict)
    kinds: frozenset[str] = frozenset()
    """Of "user", "client-id" and "user+client-id": Kafka's quotaTypesEnabled."""

    @classmethod
    def of(cls, quotas: Mapping[Entity, Mapping[str, float]], key: str) -> QuotaIndex:
        values = {target: settings[key] for target, settings in quotas.items() if key in settings}
        kinds = frozenset("+".join(kind for kind, _ in reversed(target)) for target in values)
        return cls(values, kinds)

    @property
    def enabled(self) -> bool:
        return bool(self.values)

    def tags(self, user: str, client_id: str) -> Tags:
        """The metric tags of a connection's usage, after Kafka's DefaultQuotaCallback."""
        kinds = self.kinds
        if kinds <= {CLIENT_ID}:
            return "", client_id
        if kinds == {USER}:
            return user, ""
        if kinds == {f"{USER}+{CLIENT_ID}"}:
            return user, client_id
        values = self.values
        for target, tags in (
            (_key(user, client_id), (user, client_id)),
            (_key(user, None), (user, client_id)),
            (_key(user, False), (user, "")),
            (_key(None, client_id), (user, client_id)),
            (_key(None, None), (user, client_id)),
            (_key(None, False), (user, "")),
        ):
            if target in values:
                return tags
        return "", client_id

    def limit(self, tags: Tags) -> float | None:
        """The quota measured under these tags (None: unlimited)."""
        user, client_id = tags
        if user and client_id:
            chain = [_key(user, client_id), _key(user, None), _key(None, client_id),
                     _key(None, None)]
        elif user:
            chain = [_key(user, False), _key(None, False)]
        elif client_id:
            chain = [_key(False, client_id), _key(False, None)]
        else:
            return None
        return next((self.values[t] for t in chain if t in self.values), None)


@dataclass(slots=True)
class _Usage:
    measured: SampledStat | TokenBucket
    throttle: SampledStat
    last_ms: int
    rate: SampledStat | None = None
    """Controller mutations: the mutation rate beside the token bucket."""


@dataclass(frozen=True, slots=True)
class UsageFigures:
    """One measurement's gauges, under Kafka's attribute names of its quota type."""

    tags: Tags
    values: dict[str, float]


class ClientQuota:
    """One quota type's measurements (Kafka's ClientQuotaManager): bytes produced, bytes
    fetched, request time in percent. `record` answers the throttle time in milliseconds."""

    def __init__(self, key: str, samples: int, window_ms: int,
                 max_throttle_ms: int | None = None) -> None:
        self.key = key
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        self.index = QuotaIndex()
        self._usage: dict[Tags, _Usage] = {}

    def refresh(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take the quotas now set (the metadata image's)."""
        self.index = QuotaIndex.of(quotas, self.key)

    @property
    def enabled(self) -> bool:
        return self.index.enabled

    def _usage_of(self, user: str, client_id: str, now_ms: int) -> tuple[Tags, _Usage]:
        tags = self.index.tags(user, client_id)
        usage = self._usage.get(tags)
        if usage is None:
            usage = self._usage[tags] = self._new_usage(now_ms)
        usage.last_ms = now_ms
        return tags, usage

    def _new_usage(self, now_ms: int) -> _Usage:
        return _Usage(SampledStat(self.samples, self.window_ms),
                      SampledStat(THROTTLE_TIME_SAMPLES, THROTTLE_TIME_WINDOW_MS), now_ms)

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value`; the throttle time that brings the rate back within its quota."""
        if not self.enabled:
            return 0
        tags, usage = self._usage_of(user, client_id, now_ms)
        stat = usage.measured
        assert isinstance(stat, SampledStat)
        stat.record(value, now_ms)
        bound = self.index.limit(tags)
        if bound is None:
            return 0
        rate = stat.rate(now_ms)
        if rate <= bound:
            return 0
        delay = throttle_time_ms(rate, bound, stat.elapsed_ms(now_ms))
        return delay if self.max_throttle_ms is None else min(delay, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch sends no records)."""
        if self.enabled:
            stat = self._usage_of(user, client_id, now_ms)[1].measured
            assert isinstance(stat, SampledStat)
            stat.record(-value, now_ms)

    def throttled(self, user: str, client_id: str, delay_ms: int, now_ms: int) -> None:
        """A connection muted for `delay_ms` on this quota's account (the throttle-time
        average)."""
        if self.enabled and delay_ms > 0:
            self._usage_of(user, client_id, now_ms)[1].throttle.record(delay_ms, now_ms)

    def figures(self, now_ms: int) -> list[UsageFigures]:
        """Every live measurement's gauges; those unused for an hour are dropped."""
        for tags in [t for t, u in self._usage.items() if now_ms - u.last_ms > SENSOR_EXPIRY_MS]:
            del self._usage[tags]
        return [UsageFigures(tags, self._values(usage, now_ms))
                for tags, usage in self._usage.items()]

    def _values(self, usage: _Usage, now_ms: int) -> dict[str, float]:
        stat = usage.measured
        assert isinstance(stat, SampledStat)
        name = "request-time" if self.key == REQUEST_PERCENTAGE else "byte-rate"
        return {name: stat.rate(now_ms), "throttle-time": usage.throttle.average(now_ms)}


class ControllerMutationQuota(ClientQuota):
    """Partitions created or deleted per second, with a token bucket (KIP-599): a strict
    request (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) is refused while the
    bucket is empty; an older one is recorded and throttled afterwards."""

    def __init__(self, samples: int, window_ms: int) -> None:
        super().__init__(CONTROLLER_MUTATION_RATE, samples, window_ms)

    def _new_usage(self, now_ms: int) -> _Usage:
        return _Usage(TokenBucket(self.samples, self.window_ms),
                      SampledStat(THROTTLE_TIME_SAMPLES, THROTTLE_TIME_WINDOW_MS), now_ms,
                      SampledStat(self.samples, self.window_ms))

    def record_mutations(self, user: str, client_id: str, permits: int, strict: bool,
                         now_ms: int) -> tuple[bool, int]:
        """(accepted, throttle time): a strict request is not accepted while the bucket is
        below zero; a permissive one always is."""
        if not self.enabled:
            return True, 0
        tags, usage = self._usage_of(user, client_id, now_ms)
        bucket = usage.measured
        assert isinstance(bucket, TokenBucket) and usage.rate is not None
        bound = self.index.limit(tags)
        if bound is None:
            usage.rate.record(permits, now_ms)
            return True, 0
        if strict and bucket.measure(bound, now_ms) < 0:
            return False, bucket.throttle_time_ms(bound)
        bucket.record(permits, bound, now_ms)
        usage.rate.record(permits, now_ms)
        return True, 0 if strict else bucket.throttle_time_ms(bound)

    def _values(self, usage: _Usage, now_ms: int) -> dict[str, float]:
        assert usage.rate is not None and isinstance(usage.measured, TokenBucket)
        return {"mutation-rate": usage.rate.rate(now_ms), "tokens": usage.measured.tokens,
                "throttle-time": usage.throttle.average(now_ms)}


def describe_entries(quotas: Mapping[Entity, Mapping[str, float]],
                     wanted: QuotaFilter) -> list[tuple[Entity, Sequence[tuple[str, float]]]]:
    """The entities (and their quotas) a DescribeClientQuotas filter matches."""
    return [(target, sorted(settings.items()))
            for target, settings in sorted(quotas.items(), key=lambda item: repr(item[0]))
            if wanted.matches(target)]
