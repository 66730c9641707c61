"""Kafka requests sent straight over the wire, for the admin APIs confluent-kafka has no
call for (reassignments, log dirs, the metadata quorum, transactions): the tools' adapter of
`odradek.net.kafka_client.KafkaCluster`. It takes Kafka's client options (the `--command-config`
security settings in Kafka's or librdkafka's spelling: PLAINTEXT, SSL, SASL_PLAINTEXT and
SASL_SSL), builds requests from (api, body) and turns every failure into a ToolError."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from odradek.cli.tools.common import ToolError, client_properties
from odradek.config.kafka_configs import InvalidConfigError
from odradek.metadata.records import ConfigResourceType
from odradek.net.kafka_client import Address, KafkaClientError, KafkaCluster, client_security
from odradek.net.kafka_client.request_versions import INCREMENTAL_ALTER_CONFIGS
from odradek.net.kafka_client.spelling import kafka_spelling
from odradek.protocol.codec import build_request

T = TypeVar("T")
LOGIN_CHECK_CLIENT_ID = "odradek-login-check"


def split_host_port(address: str) -> Address:
    host, separator, port = address.strip().rpartition(":")
    if not separator or not port.isdigit():
        raise ToolError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def _cluster(properties: Mapping[str, str], bootstrap: str, client_id: str,
             timeout: float) -> KafkaCluster:
    """A cluster client secured as the properties (either spelling) say."""
    try:
        properties = kafka_spelling(properties)
        security = client_security(properties, "--command-config")
    except InvalidConfigError as error:
        raise ToolError(str(error)) from None
    return KafkaCluster([split_host_port(a) for a in bootstrap.split(",") if a],
                        properties.get("client.id", client_id), timeout, security)


class WireClient:
    """The cluster named by --bootstrap-server; connections are closed on exit."""

    def __init__(self, args: argparse.Namespace, client_id: str) -> None:
        self.timeout: float = args.timeout
        self.cluster = _cluster(client_properties(args), args.bootstrap_server, client_id,
                                self.timeout)

    async def __aenter__(self) -> WireClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.cluster.close()

    async def send_to(self, address: Address, api: tuple[int, int],
                      body: Mapping[str, Any]) -> Any:
        """One request to one address."""
        return await _as_tool_error(self.cluster.connections.send(address,
                                                                  build_request(*api, body)))

    async def send(self, api: tuple[int, int], body: Mapping[str, Any]) -> Any:
        """One request to the first bootstrap server that answers."""
        return await _as_tool_error(self.cluster.send(build_request(*api, body)))

    async def send_to_broker(self, node_id: int, api: tuple[int, int],
                             body: Mapping[str, Any]) -> Any:
        return await _as_tool_error(self.cluster.send_to_broker(node_id,
                                                                build_request(*api, body)))

    async def metadata(self, topics: list[str] | None = None) -> Any:
        """A Metadata response: every topic (None), or just these (an empty list: none)."""
        return await _as_tool_error(self.cluster.metadata(topics))

    async def brokers(self) -> dict[int, Address]:
        """Each live broker's id and address."""
        return await _as_tool_error(self.cluster.brokers())


def check_login(properties: Mapping[str, str], bootstrap: str, timeout: float) -> None:
    """Log in once, as a librdkafka client with these properties would, when they ask for
    TLS or SASL: librdkafka retries a refused login or TLS handshake until its request times
    out and then reports a transport failure, so the tools built on it check first that a
    bootstrap server accepts them, and fail at once in one line if none does."""
    if properties.get("security.protocol", "PLAINTEXT").strip().upper() == "PLAINTEXT":
        return

    async def login() -> None:
        cluster = _cluster(properties, bootstrap, LOGIN_CHECK_CLIENT_ID, timeout)
        try:
            await _as_tool_error(cluster.metadata([]))
        finally:
            cluster.close()

    asyncio.run(login())


async def _as_tool_error(request: Awaitable[T]) -> T:
    try:
        return await request
    except KafkaClientError as error:
        raise ToolError(str(error)) from None


AUTHORIZATION_FAILURES = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
}
"""The messages of Kafka's authorization exceptions, as its tools print them."""


def check(code: int, what: str, message: str | None = None) -> None:
    """A non-zero Kafka error code as a ToolError naming `what`; an authorization failure
    reads as Kafka's ("Cluster authorization failed."), with the code and the broker's
    message in parentheses."""
    if code == ErrorCode.none:
        return
    name = ErrorCode(code).name.upper()
    if message and message.upper().startswith(f"{name}: "):
        message = message[len(name) + 2:]
    detail = f": {message}" if message else ""
    sentence = AUTHORIZATION_FAILURES.get(ErrorCode(code))
    if sentence is not None:
        raise ToolError(f"{what}: {sentence} ({name}{detail})")
    raise ToolError(f"{what}: {name}{detail}")


SET, DELETE = 0, 1


async def send_about(client: WireClient, resource_type: int, resource_name: str | None,
                     api: tuple[int, int], body: Mapping[str, Any]) -> Any:
    """A request about one config resource: a broker's own configs go to that broker, as
    Kafka's admin client sends them; anything else (the cluster default too) to any broker."""
    if resource_type == ConfigResourceType.BROKER and resource_name:
        return await client.send_to_broker(int(resource_name), api, body)
    return await client.send(api, body)


async def alter_configs(client: WireClient, resource_type: int,
                        changes: Mapping[str, Mapping[str, str | None]]) -> list[Any]:
    """IncrementalAlterConfigs: per resource name, set (a value) or delete (None) configs.
    The per-resource results, for the caller to check."""

    def resource(name: str) -> dict[str, Any]:
        return {"resource_type": resource_type, "resource_name": name, "configs": [
            {"name": key, "config_operation": DELETE if value is None else SET, "value": value}
            for key, value in changes[name].items()]}

    answers = await asyncio.gather(*(
        send_about(client, resource_type, name, INCREMENTAL_ALTER_CONFIGS,
                   {"resources": [resource(name)], "validate_only": False})
        for name in changes))
    return [result for answer in answers for result in answer.responses]
