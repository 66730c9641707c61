"""ACLs and ACL filters as the controller contract's `Acl` messages, and back: the broker
and the controller share these conversions."""

from __future__ import annotations

from odradek.rpc import controller_pb2 as pb
from odradek.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    from_code,
)


def acl_message(acl: AclBinding | AclFilter) -> pb.Acl:
    return pb.Acl(resource_type=acl.resource_type, resource_name=acl.resource_name,
                  pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host,
                  operation=acl.operation, permission_type=acl.permission_type)


def _codes(message: pb.Acl) -> tuple[ResourceType, PatternType, AclOperation,
                                     AclPermissionType]:
    return (from_code(ResourceType, message.resource_type),
            from_code(PatternType, message.pattern_type),
            from_code(AclOperation, message.operation),
            from_code(AclPermissionType, message.permission_type))


def acl_binding(message: pb.Acl) -> AclBinding:
    resource_type, pattern_type, operation, permission_type = _codes(message)
    return AclBinding(resource_type, message.resource_name, pattern_type, message.principal,
                      message.host, operation, permission_type)


def acl_filter(message: pb.Acl) -> AclFilter:
    resource_type, pattern_type, operation, permission_type = _codes(message)

    def optional(name: str) -> str | None:
        return getattr(message, name) if message.HasField(name) else None

    return AclFilter(resource_type, optional("resource_name"), pattern_type,
                     optional("principal"), optional("host"), operation, permission_type)
