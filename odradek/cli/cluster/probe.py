"""Is a node ready? A controller: does it answer, and is it the active one. A broker: does its
Metadata list every broker (fenced brokers are left out, so all of them are unfenced)."""

from __future__ import annotations

from pathlib import Path

import grpc
from confluent_kafka.admin import AdminClient

from odradek.cli.cluster.layout import HOST, Node
from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError, load_properties
from odradek.config.listeners import CONTROLLER, resolve
from odradek.net.grpc_tls import ControllerChannels
from odradek.rpc import controller_pb2, controller_pb2_grpc


def controller_active(node: Node, timeout: float = 1.0) -> bool | None:
    """True for the active controller, False for another live one, None if unreachable.
    It connects as the controller's own listener configs say (on an SSL listener with
    ssl.client.auth, its key store is the client certificate, as another voter's would be)."""
    try:
        config = BrokerConfig(load_properties(Path(node.config)))
        channels = ControllerChannels.of(config, resolve(config, CONTROLLER))
        with channels.open_blocking(HOST, node.port) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            response = stub.DescribeQuorum(controller_pb2.DescribeQuorumRequest(),
                                           timeout=timeout)
    except (grpc.RpcError, OSError, InvalidConfigError):
        return None
    return bool(response.active)


def broker_sees(port: int, brokers: int, timeout: float = 2.0) -> bool:
    """Whether the broker answers Metadata listing `brokers` brokers."""
    admin = AdminClient({"bootstrap.servers": f"{HOST}:{port}", "log_level": 0,
                         "socket.connection.setup.timeout.ms": 1000})
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return False
    return len(metadata.brokers) == brokers
