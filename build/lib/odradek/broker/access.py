"""What each API needs authorized, as Kafka's KafkaApis checks it: every row of the API table
declares its Access, and the dispatcher refuses to serve a table with a row that does not.

- `gates` are checks of the whole request (a group, a transactional id, the cluster) that
  the dispatcher makes before the handler runs. A refused request never reaches its
  handler; its response carries the resource type's error code.
- `checks` are the (resource type, operation) pairs the handler checks resource by resource
  (topics of a Produce, groups of a DescribeGroups), through RequestContext.allowed, which
  refuses a pair the API has not declared.
- PUBLIC: no authorization (ApiVersions, and the SASL exchange that names the principal)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.security.acls import AclOperation, ResourceType

Pair = tuple[ResourceType, AclOperation]
Refusal = Callable[[Any, ErrorCode], Mapping[str, Any]]

AUTHORIZATION_ERRORS = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
}
"""Kafka's error code for an action refused on each resource type."""


@dataclass(frozen=True, slots=True)
class Gate:
    """A check of the whole request, made before its handler runs."""

    resource_type: ResourceType
    operation: AclOperation
    name: Callable[[Any], str] | None = None
    """The resource's name in the decoded request; None: the cluster."""


def top_level_error(request: Any, code: ErrorCode) -> Mapping[str, Any]:
    """The refusal of a request whose response has a top-level error code (and a message
    where it has room for one)."""
    return {"error_code": code, "error_message": f"{code.name.upper()}: not authorized"}


@dataclass(frozen=True, slots=True)
class Access:
    gates: tuple[Gate, ...] = ()
    checks: frozenset[Pair] = frozenset()
    refusal: Refusal = top_level_error
    """The response to a refused gate."""
    public: bool = False
    declared: frozenset[Pair] = field(init=False)
    """Every pair the API may check: its gates' and its handler's."""

    def __post_init__(self) -> None:
        gated = {(gate.resource_type, gate.operation) for gate in self.gates}
        object.__setattr__(self, "declared", frozenset(gated | self.checks))

    @property
    def declares_something(self) -> bool:
        return self.public or bool(self.declared)


PUBLIC = Access(public=True)
Op = AclOperation


def cluster(operation: AclOperation) -> Gate:
    return Gate(ResourceType.CLUSTER, operation)


def group(operation: AclOperation) -> Gate:
    """The request's `group_id`."""
    return Gate(ResourceType.GROUP, operation, lambda request: request.group_id)


def transactional_id(operation: AclOperation) -> Gate:
    """The request's `transactional_id`."""
    return Gate(ResourceType.TRANSACTIONAL_ID, operation,
                lambda request: request.transactional_id)


def checks(*pairs: Pair) -> frozenset[Pair]:
    return frozenset(pairs)


TOPIC, GROUP, CLUSTER, TXN = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                              ResourceType.TRANSACTIONAL_ID)
