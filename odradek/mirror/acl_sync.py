"""MM2's topic ACL sync for one flow (`sync.topic.acls.enabled`, every
`sync.topic.acls.interval.seconds`): the source's topic ACLs (DescribeAcls), the ones
`acl_rules` selects created on the target (CreateAcls), over the mirror's admin connections.
A cluster without an authorizer (SECURITY_DISABLED) is logged once and the sync waits for
the next interval, as MirrorSourceConnector does for the source; we do the same for the
target."""

from __future__ import annotations

import logging
import time
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.mirror.acl_rules import ANY_TOPIC_ACL, topic_acls_to_sync
from odradek.mirror.client_security import flow_security
from odradek.mirror.clients import ClusterHealth, ClusterUnavailable
from odradek.mirror.config import Flow, Side
from odradek.mirror.replicator import REQUEST_TIMEOUT_S, addresses
from odradek.net.kafka_client import KafkaClientError, KafkaCluster
from odradek.net.kafka_client.request_versions import CREATE_ACLS, DESCRIBE_ACLS
from odradek.protocol.codec import build_request
from odradek.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    from_code,
)

log = logging.getLogger("odradek.mirror.acls")


class TopicAclSync:
    """Owns an admin connection to each side of the flow."""

    def __init__(self, flow: Flow, health: ClusterHealth) -> None:
        self.flow = flow
        self._health = health
        self._source = self._cluster("source")
        self._target = self._cluster("target")
        self._no_authorizer: set[str] = set()

    def _cluster(self, side: Side) -> KafkaCluster:
        config = self.flow.client_config(side, "admin")
        return KafkaCluster(addresses(config["bootstrap.servers"]),
                            config.get("client.id", f"mirror-{self.flow.name}-acls"),
                            REQUEST_TIMEOUT_S, flow_security(self.flow, side, "admin"))

    async def sync(self) -> None:
        """One round: what the source has now is created on the target (creating an ACL
        that exists changes nothing)."""
        source = await self._describe()
        if source is None:
            return
        bindings = topic_acls_to_sync(self.flow, source)
        log.debug("%s: syncing %d topic ACL bindings", self.flow.name, len(bindings))
        if bindings:
            await self._create(bindings)

    def close(self) -> None:
        self._source.close()
        self._target.close()

    async def _send(self, alias: str, cluster: KafkaCluster, request: Any) -> Any:
        started = time.monotonic()
        try:
            response = await cluster.send(request)
        except KafkaClientError as error:
            self._health.failed(alias, error, started)
            raise ClusterUnavailable(alias, error) from None
        self._health.ok(alias, started)
        return response

    def _authorizer_missing(self, alias: str, side: Side) -> None:
        if alias in self._no_authorizer:
            log.debug("%s: still no ACL authorizer on %s; skipping topic ACL sync",
                      self.flow.name, alias)
            return
        self._no_authorizer.add(alias)
        log.info("%s: no ACL authorizer is configured on the %s cluster %s, so no topic ACL "
                 "syncing will take place; consider disabling topic ACL syncing by setting "
                 "sync.topic.acls.enabled to 'false'", self.flow.name, side, alias)

    async def _describe(self) -> list[AclBinding] | None:
        """The source's topic ACLs; None when it has no authorizer or refused."""
        alias = self.flow.source
        response = await self._send(alias, self._source, build_request(*DESCRIBE_ACLS, {
            "resource_type_filter": ANY_TOPIC_ACL.resource_type,
            "resource_name_filter": ANY_TOPIC_ACL.resource_name,
            "pattern_type_filter": ANY_TOPIC_ACL.pattern_type,
            "principal_filter": None, "host_filter": None,
            "operation": AclOperation.ANY, "permission_type": AclPermissionType.ANY}))
        if response.error_code == ErrorCode.security_disabled:
            self._authorizer_missing(alias, "source")
            return None
        self._no_authorizer.discard(alias)
        if response.error_code != ErrorCode.none:
            log.warning("%s: cannot describe the topic ACLs of %s: %s %s", self.flow.name,
                        alias, ErrorCode(response.error_code).name,
                        response.error_message or "")
            return None
        return [AclBinding(from_code(ResourceType, resource.resource_type),
                           resource.resource_name,
                           from_code(PatternType, resource.pattern_type), acl.principal,
                           acl.host, from_code(AclOperation, acl.operation),
                           from_code(AclPermissionType, acl.permission_type))
                for resource in response.resources for acl in resource.acls]

    async def _create(self, bindings: list[AclBinding]) -> None:
        alias = self.flow.target
        response = await self._send(alias, self._target, build_request(*CREATE_ACLS, {
            "creations": [{"resource_type": b.resource_type, "resource_name": b.resource_name,
                           "resource_pattern_type": b.pattern_type, "principal": b.principal,
                           "host": b.host, "operation": b.operation,
                           "permission_type": b.permission_type} for b in bindings]}))
        codes = [result.error_code for result in response.results]
        if ErrorCode.security_disabled in codes:
            self._authorizer_missing(alias, "target")
            return
        self._no_authorizer.discard(alias)
        for binding, result in zip(bindings, response.results, strict=True):
            if result.error_code != ErrorCode.none:
                log.warning("%s: could not sync ACL of topic %s (%s): %s %s", self.flow.name,
                            binding.resource_name, binding,
                            ErrorCode(result.error_code).name, result.error_message or "")
