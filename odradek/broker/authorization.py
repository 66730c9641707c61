"""The broker's authorizer: Kafka's StandardAuthorizer (`authorizer.class.name`) over the
ACLs of the broker's metadata image, with `super.users` and
`allow.everyone.if.no.acl.found`. The image is the one source of the ACLs; the index and the
remembered decisions are rebuilt when its ACLs change."""

from __future__ import annotations

from odradek.broker.broker import Broker
from odradek.config.kafka_configs import BrokerConfig
from odradek.metadata.image import ClusterMetadata
from odradek.security.acls import AclOperation, ResourceType
from odradek.security.authorizer import (
    STANDARD_AUTHORIZER,
    StandardAuthorizer,
    parse_super_users,
)


class BrokerAuthorizer:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        config = broker.config
        self._super_users = parse_super_users(str(config["super.users"] or ""))
        self._allow_if_no_acl = bool(config["allow.everyone.if.no.acl.found"])
        self._image: ClusterMetadata | None = None
        self._version = -1
        self._current = StandardAuthorizer((), (), False)

    @property
    def current(self) -> StandardAuthorizer:
        """The decisions over the image's ACLs as they are now."""
        metadata = self._broker.metadata
        if metadata is not self._image or metadata.acl_version != self._version:
            self._image, self._version = metadata, metadata.acl_version
            self._current = StandardAuthorizer(metadata.acls.values(), self._super_users,
                                               self._allow_if_no_acl)
        return self._current

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        return self.current.authorize(principal, host, operation, resource_type, name)


def authorizer_for(broker: Broker) -> BrokerAuthorizer | None:
    """The broker's authorizer, or None when `authorizer.class.name` is empty."""
    return BrokerAuthorizer(broker) if enabled(broker.config) else None


def enabled(config: BrokerConfig) -> bool:
    return config["authorizer.class.name"] == STANDARD_AUTHORIZER
