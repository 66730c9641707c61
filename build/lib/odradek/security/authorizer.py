"""The decisions of Kafka's StandardAuthorizer, without IO.

An action (principal, client host, operation, resource) is allowed when the principal is a
super user, or when an ALLOW ACL and no DENY ACL applies to it; when no ACL at all names the
resource (whatever its principal), `allow.everyone.if.no.acl.found` decides. An ACL applies
when its pattern covers the resource (LITERAL: the same name or `*`; PREFIXED: a prefix of
the name), its principal is the request's or `User:*`, its host the client's or `*`, and its
operation the action's or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also allows
DESCRIBE, and one of ALTER_CONFIGS allows DESCRIBE_CONFIGS (a DENY implies nothing).

ACLs are indexed by resource type and name (literal names in a dict, prefixes by their
lengths), so a decision looks at the ACLs of one resource, not at all of them; decisions
are also remembered until the ACLs change."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from odradek.security.acls import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from odradek.security.principal import KafkaPrincipal

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The `authorizer.class.name` that turns authorization on (Kafka's KRaft authorizer)."""
Op = AclOperation
IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})
MAX_REMEMBERED = 100_000
"""Decisions remembered before the memory starts afresh."""


@dataclass(slots=True)
class _TypeIndex:
    """The ACLs of one resource type."""

    literal: dict[str, list[AclBinding]] = field(default_factory=dict)
    prefixed: dict[str, list[AclBinding]] = field(default_factory=dict)
    prefix_lengths: list[int] = field(default_factory=list)

    def applying_to(self, name: str) -> Iterator[AclBinding]:
        """The ACLs whose pattern covers the resource `name`."""
        yield from self.literal.get(name, ())
        if name != WILDCARD:
            yield from self.literal.get(WILDCARD, ())
        for length in self.prefix_lengths:
            if length > len(name):
                break
            yield from self.prefixed.get(name[:length], ())


class AclIndex:
    """ACLs arranged by resource type and pattern for matching."""

    def __init__(self, acls: Iterable[AclBinding]) -> None:
        self._types: dict[ResourceType, _TypeIndex] = {}
        self.count = 0
        for acl in acls:
            index = self._types.setdefault(acl.resource_type, _TypeIndex())
            if acl.pattern_type == PatternType.PREFIXED:
                index.prefixed.setdefault(acl.resource_name, []).append(acl)
            else:
                index.literal.setdefault(acl.resource_name, []).append(acl)
            self.count += 1
        for index in self._types.values():
            index.prefix_lengths = sorted({len(name) for name in index.prefixed})

    def applying_to(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        index = self._types.get(resource_type)
        return iter(()) if index is None else index.applying_to(name)

    def of_type(self, resource_type: ResourceType) -> Iterator[AclBinding]:
        index = self._types.get(resource_type)
        if index is None:
            return
        for acls in (*index.literal.values(), *index.prefixed.values()):
            yield from acls


def acl_result(acl: AclBinding, principals: tuple[str, str], host: str,
               operation: AclOperation) -> AclPermissionType | None:
    """What `acl` says about the action (Kafka's StandardAuthorizerData.findResult), or None
    when it does not apply to it; the resource is assumed to match."""
    if acl.principal not in principals:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != Op.ALL:
        if acl.permission_type == AclPermissionType.ALLOW:
            if operation == Op.DESCRIBE:
                if acl.operation not in IMPLIES_DESCRIBE:
                    return None
            elif operation == Op.DESCRIBE_CONFIGS:
                if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif acl.operation != operation:
                return None
        elif acl.operation != operation:
            return None
    return acl.permission_type


class StandardAuthorizer:
    """Decisions over one set of ACLs; build a new one when the ACLs change."""

    def __init__(self, acls: Iterable[AclBinding], super_users: Iterable[str],
                 allow_if_no_acl: bool) -> None:
        self.index = AclIndex(acls)
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._decisions: dict[tuple[str, str, AclOperation, ResourceType, str], bool] = {}

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """Whether `principal` (`User:alice`) from `host` may do `operation` on the resource."""
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= MAX_REMEMBERED:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def _decide(self, principal: str, host: str, operation: AclOperation,
                resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        found = allowed = False
        for acl in self.index.applying_to(resource_type, name):
            found = True
            result = acl_result(acl, principals, host, operation)
            if result == AclPermissionType.DENY:
                return False
            allowed |= result == AclPermissionType.ALLOW
        return allowed or (not found and self.allow_if_no_acl)

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether some resource of the type could allow `operation` (Kafka's
        Authorizer.authorizeByResourceType): used where any topic's WRITE implies
        IDEMPOTENT_WRITE (KIP-679)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                             PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                              PatternType.PREFIXED: set()}
        for acl in self.index.of_type(resource_type):
            if acl.host not in (host, WILDCARD) or acl.principal not in (principal,
                                                                          WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, Op.ALL):
                continue
            literal_wildcard = (acl.pattern_type == PatternType.LITERAL
                                and acl.resource_name == WILDCARD)
            if acl.permission_type == AclPermissionType.DENY:
                if literal_wildcard:
                    return False
                deny[acl.pattern_type].add(acl.resource_name)
            elif literal_wildcard:
                return True
            else:
                allow[acl.pattern_type].add(acl.resource_name)
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:i] in deny[PatternType.PREFIXED]
                           for i in range(1, len(name) + 1)):
                    return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """The bit field of the resource type's operations the principal may do (Kafka's
        authorized_operations in Metadata, DescribeGroups and DescribeCluster)."""
        return sum(1 << operation for operation in SUPPORTED_OPERATIONS[resource_type]
                   if self.authorize(principal, host, operation, resource_type, name))


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's `super.users`: principals separated by ';'. Raises ValueError on one that is
    not `Type:name`."""
    users = frozenset(item.strip() for item in text.split(";") if item.strip())
    for user in users:
        KafkaPrincipal.parse(user)
    return users


def valid_super_users(value: object) -> str | None:
    """The `super.users` config's validator: None, or what is wrong."""
    try:
        parse_super_users(str(value or ""))
    except ValueError as error:
        return str(error)
    return None


def all_operations(resource_type: ResourceType) -> int:
    """The bit field of every operation of the resource type: what is authorized when no
    authorizer is configured."""
    return sum(1 << operation for operation in SUPPORTED_OPERATIONS[resource_type])
