"""ListConfigResources (KIP-1142; v0 was ListClientMetricsResources): the resources that have
configs, by type, as Kafka's KafkaApis lists them: groups with configs of their own (GROUP),
client metrics subscriptions (none in Odradek), each broker for BROKER_LOGGER and BROKER, and
every topic. An empty type list means every type the version supports; a type it does not
support fails the request with UNSUPPORTED_VERSION."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.dispatch import RequestContext, Result
from odradek.metadata.records import ConfigResourceType

GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC = (
    ConfigResourceType.GROUP, ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.BROKER_LOGGER, ConfigResourceType.BROKER, ConfigResourceType.TOPIC)
V0_TYPES = (CLIENT_METRICS,)
V1_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)
"""ListConfigResourcesRequest.supportedResourceTypes, in the order Kafka lists them."""


def handle_list_config_resources(context: RequestContext, request: Any) -> Result:
    supported = V0_TYPES if context.version == 0 else V1_TYPES
    wanted = set(getattr(request, "resource_types", ()) or supported)
    if not wanted <= set(supported):
        return {"error_code": ErrorCode.unsupported_version, "config_resources": []}
    broker = context.broker
    names: dict[int, list[str]] = {
        GROUP: sorted(broker.metadata.group_configs),
        CLIENT_METRICS: [],
        BROKER_LOGGER: [str(b["node_id"]) for b in broker.brokers(context.listener)],
        BROKER: [str(b["node_id"]) for b in broker.brokers(context.listener)],
        TOPIC: sorted(broker.metadata.topics),
    }
    return {"error_code": ErrorCode.none, "config_resources": [
        {"resource_name": name, "resource_type": kind}
        for kind in supported if kind in wanted for name in names[kind]]}
