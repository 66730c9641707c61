"""Which topic ACLs of the source a flow creates on the target, and as what
(MirrorSourceConnector.syncTopicAcls): LITERAL TOPIC bindings of topics the flow replicates,
except ALLOW WRITE (only the mirror writes to a remote topic), renamed by the replication
policy, with ALLOW ALL downgraded to ALLOW READ. PREFIXED bindings are skipped; a LITERAL
`*` (every topic) is, as in MM2, a topic named `*` that the topic filter decides on.
Without IO."""

from __future__ import annotations

from collections.abc import Iterable

from odradek.mirror.config import Flow
from odradek.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

ANY_TOPIC_ACL = AclFilter(ResourceType.TOPIC, None, PatternType.ANY)
"""The DescribeAcls filter MM2 lists the source's topic ACLs with."""


def should_replicate_acl(binding: AclBinding) -> bool:
    """Not ALLOW WRITE: a remote topic is written by the mirror alone."""
    return not (binding.permission_type == AclPermissionType.ALLOW
                and binding.operation == AclOperation.WRITE)


def target_acl_binding(flow: Flow, binding: AclBinding) -> AclBinding:
    """The binding on the remote topic; ALLOW ALL becomes ALLOW READ."""
    operation = binding.operation
    if (binding.permission_type == AclPermissionType.ALLOW
            and binding.operation == AclOperation.ALL):
        operation = AclOperation.READ
    return AclBinding(ResourceType.TOPIC, flow.target_topic(binding.resource_name),
                      PatternType.LITERAL, binding.principal, binding.host, operation,
                      binding.permission_type)


def topic_acls_to_sync(flow: Flow, source: Iterable[AclBinding]) -> list[AclBinding]:
    """The target bindings for the source's bindings, in the source's order."""
    return [target_acl_binding(flow, binding) for binding in source
            if binding.resource_type == ResourceType.TOPIC
            and binding.pattern_type == PatternType.LITERAL
            and should_replicate_acl(binding)
            and flow.should_replicate_topic(binding.resource_name)]
