"""Kafka's ACL vocabulary: resource, pattern, operation and permission types with Kafka's
codes, the ACL binding, the filters of DescribeAcls and DeleteAcls, and the validation of a
new ACL (Kafka's AclControlManager). Without IO."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

CLUSTER_NAME = "kafka-cluster"
"""The one CLUSTER resource's name."""
WILDCARD = "*"
"""An ACL's resource name, host or principal name that matches any."""
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                           Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}
"""The operations each resource type has (Kafka's AclEntry.supportedOperations)."""


class InvalidAclError(ValueError):
    """An ACL or filter Kafka refuses with INVALID_REQUEST."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's AclBinding, with the
    principal as `Type:name` text, as ACL records hold it)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission_type.name})"
                f" on {self.resource_type.name}:{self.pattern_type.name}:{self.resource_name}")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None and the ANY codes match anything; pattern type MATCH
    matches every pattern that applies to the named resource (the literal name, the
    wildcard, and prefixes of it)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        name = self.resource_name
        if name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return name == acl.resource_name or acl.resource_name == WILDCARD
        return name.startswith(acl.resource_name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission_type in (AclPermissionType.ANY, acl.permission_type))


def validate_new_acl(acl: AclBinding) -> None:
    """Kafka's AclControlManager.validateNewAcl; raises InvalidAclError."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAclError(f"Invalid resourceType {acl.resource_type.name}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {acl.pattern_type.name}")
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {acl.operation.name}")
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidAclError(f"Invalid permissionType {acl.permission_type.name}")
    if not acl.resource_name:
        raise InvalidAclError("Resource name should not be empty")
    _check_principal(acl.principal)


def validate_filter(acl_filter: AclFilter) -> None:
    """Kafka's AclControlManager.validateFilter; raises InvalidAclError."""
    if acl_filter.resource_type == ResourceType.UNKNOWN:
        raise InvalidAclError("Unknown resourceType")
    if acl_filter.pattern_type == PatternType.UNKNOWN:
        raise InvalidAclError("Unknown patternFilter")
    if acl_filter.operation == AclOperation.UNKNOWN:
        raise InvalidAclError("Unknown operation")
    if acl_filter.permission_type == AclPermissionType.UNKNOWN:
        raise InvalidAclError("Unknown permissionType")


def _check_principal(principal: str) -> None:
    kind, separator, name = principal.partition(":")
    if not separator or not kind or not name:
        raise InvalidAclError(f"Could not parse principal from `{principal}` (no colon is "
                              "present separating the principal type from the principal name)")


E = TypeVar("E", bound=enum.IntEnum)


def from_code(kind: type[E], code: int) -> E:
    """The member of a Kafka code; a code Kafka does not know is UNKNOWN (0), which
    validation refuses."""
    return kind(code) if code in kind._value2member_map_ else kind(0)


def enum_named(kind: type[enum.IntEnum], text: str) -> enum.IntEnum:
    """A member by Kafka's name, case- and separator-insensitively (`describe-configs`,
    `DescribeConfigs`, `DESCRIBE_CONFIGS`); raises ValueError."""
    wanted = text.strip().replace("-", "").replace("_", "").upper()
    for member in kind:
        if member.name.replace("_", "") == wanted:
            return member
    raise ValueError(f"unknown {kind.__name__} {text!r}")
